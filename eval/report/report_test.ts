import assert from "node:assert/strict";
import { renderReport, REPORT_CSP } from "./report.ts";
import { readResults } from "../run/results_file.ts";
import { escapeHtml } from "./html.ts";
import { imagesDirFor, storeImages } from "./images.ts";
import type { EvalResult } from "../run/result.ts";

/** A 1×1 PNG. */
const PIXEL =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
const XSS = `"><script>alert(1)</script><img src=x onerror=alert(2)>`;

function result(overrides: Partial<EvalResult> = {}): EvalResult {
  return {
    task: 0,
    repeat: 0,
    scenario: "guess",
    args: {},
    reward: 1,
    done: true,
    attempts: 1,
    steps: 1,
    tokens: { input: 10, output: 2 },
    cost_usd: 0.00001,
    trace_id: "trace-0",
    convention: "chat",
    refused_tool_calls: 0,
    safety_checks: [],
    duration_ms: 5,
    ...overrides,
  };
}

Deno.test("escapeHtml() escapes markup and quotes", () => {
  assert.equal(
    escapeHtml(`<a href="x" title='y'>&</a>`),
    "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;",
  );
  assert.equal(escapeHtml(undefined), "");
});

Deno.test("imagesDirFor() puts the images beside the results", () => {
  assert.equal(imagesDirFor("a/b.jsonl"), "a/b.images");
  assert.equal(imagesDirFor("results"), "results.images");
});

Deno.test("renderReport() escapes everything a model or environment wrote, and shows only safe images", () => {
  const asked: string[] = [];
  const hostile = result({
    scenario: XSS,
    args: { note: XSS },
    reward: null,
    error: XSS,
    content: XSS,
    subscores: [{ name: XSS, weight: 1, value: 0 }],
    trace_id: XSS,
    safety_checks: [{ id: XSS, code: XSS, message: XSS }],
    trajectory: {
      prompt: [{ role: XSS, text: XSS }],
      steps: [{
        step: 1,
        status: 200,
        text: XSS,
        tokens: { input: 1, output: 1 },
        cost_usd: 0,
        tool_calls: [{
          name: XSS,
          arguments: { x: XSS },
          refused: true,
          safety_checks: [{ id: XSS, message: XSS }],
          result: {
            text: XSS,
            is_error: true,
            images: [
              { mimeType: "image/png", data: PIXEL },
              { mimeType: "image/svg+xml", data: PIXEL },
              { mimeType: `image/png" onload="alert(3)`, data: PIXEL },
              { mimeType: "image/png", data: `${PIXEL}"><script>` },
              {
                mimeType: "image/png",
                sha256: "../../../etc/passwd",
                bytes: 1,
              },
              { mimeType: "image/png", sha256: "a".repeat(64), bytes: 1 },
            ],
          },
        }],
      }],
    },
  });
  const html = renderReport([hostile], {
    title: XSS,
    readImage: (sha, ext) => {
      asked.push(`${sha}.${ext}`);
      return undefined;
    },
  });
  assert.ok(!/<script/i.test(html), "no script element");
  assert.ok(!/<img[^>]*onerror/i.test(html), "no handler on an image");
  assert.ok(!/<[^>]*\sonload=/i.test(html), "no onload attribute");
  assert.ok(html.includes(escapeHtml(XSS)));
  const sources = [...html.matchAll(/\ssrc="([^"]*)"/g)].map((m) => m[1]);
  assert.deepEqual(sources, [`data:image/png;base64,${PIXEL}`]);
  // Only a well-formed hash reaches the image reader.
  assert.deepEqual(asked, [`${"a".repeat(64)}.png`]);
  assert.ok(html.includes(`content="${REPORT_CSP}"`));
  assert.match(html, /refused: not a tool of this task/);
});

Deno.test("renderReport() gives every task a section, a summary row per scenario and errors apart from rewards", () => {
  const html = renderReport([
    result({ task: 0, reward: 1 }),
    result({ task: 1, reward: 0.5, scenario: "other" }),
    result({ task: 2, reward: null, error: "The environment failed" }),
  ]);
  for (const task of [0, 1, 2]) {
    assert.match(
      html,
      new RegExp(`<article class="task [a-z ]+" id="task-${task}">`),
    );
  }
  assert.match(
    html,
    // runs, mean, 95% interval, pass@1, errors as 0, not scored: the error
    // came after the agent acted (a model call), so it is a 0.
    /<th scope="row">guess<\/th><td class="n">2<\/td><td class="n">0\.500<\/td><td class="n">±0\.980<\/td><td class="n">0\.500<\/td><td class="n">1<\/td><td class="n">0<\/td>/,
  );
  assert.match(
    html,
    /<th scope="row">other<\/th><td class="n">1<\/td><td class="n">0\.500<\/td>/,
  );
  assert.match(
    html,
    /2 run\(s\) with a reward: median 0\.750; 1 run\(s\) ended in an error \(no reward, in red\), 1 of them scored 0 in the mean and pass@k/,
  );
  assert.ok(!/https?:\/\//.test(html), "no URL at all");
});

Deno.test("storeImages() writes each image once beside the results and readResults() skips what is not a result", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-report-" });
  try {
    const image = { mimeType: "image/png", data: PIXEL };
    const stored = await storeImages(
      result({
        trajectory: {
          prompt: [{ role: "user", image }],
          steps: [{
            step: 1,
            status: 200,
            text: "",
            tokens: { input: 0, output: 0 },
            cost_usd: 0,
            tool_calls: [{
              name: "computer",
              arguments: {},
              result: {
                text: "",
                is_error: false,
                images: [image, { mimeType: "text/html", data: "PGI+" }],
              },
            }],
          }],
        },
      }),
      `${dir}/r.images`,
    );
    const files = [...Deno.readDirSync(`${dir}/r.images`)].map((e) => e.name);
    assert.equal(files.length, 1);
    assert.match(files[0], /^[0-9a-f]{64}\.png$/);
    const images = stored.trajectory!.steps[0].tool_calls[0].result!.images;
    assert.deepEqual(images[0], {
      mimeType: "image/png",
      sha256: files[0].slice(0, 64),
      bytes: 68,
    });
    assert.deepEqual(images[1], {
      mimeType: "text/html",
      sha256: "",
      bytes: 0,
    });
    assert.ok(!JSON.stringify(stored).includes(PIXEL));

    const { results, skipped } = readResults(
      [
        JSON.stringify(result({ task: 3 })),
        "not json",
        '{"task": "x"}',
        JSON.stringify(stored),
      ].join("\n"),
    );
    assert.deepEqual(results.map((r) => r.task), [0, 3]);
    assert.equal(skipped, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("storeImages() and renderReport() take an image type that names an Object member (toString, __proto__) as one they do not show", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-report-" });
  try {
    const images = ["toString", "__proto__", "constructor"].map((type) => ({
      mimeType: type,
      data: PIXEL,
    }));
    const hostile = result({
      trajectory: {
        prompt: [],
        steps: [{
          step: 1,
          status: 200,
          text: "",
          tokens: { input: 0, output: 0 },
          cost_usd: 0,
          tool_calls: [{
            name: "computer",
            arguments: {},
            result: { text: "", is_error: false, images },
          }],
        }],
      },
    });
    const stored = await storeImages(hostile, `${dir}/r.images`);
    const written = await Array.fromAsync(Deno.readDir(dir));
    assert.deepEqual(written.map((e) => e.name), [], "no file is written");
    assert.deepEqual(
      stored.trajectory!.steps[0].tool_calls[0].result!.images.map((i) =>
        "sha256" in i ? i.sha256 : "inline"
      ),
      ["", "", ""],
    );
    const html = renderReport([hostile]);
    assert.ok(!/src="data:(toString|__proto__|constructor)/.test(html));
    assert.equal(html.match(/\(not shown\)/g)?.length, 3);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A 200×100 PNG's first bytes: enough for its size. */
const PNG_200x100 = btoa(String.fromCharCode(
  0x89,
  0x50,
  0x4e,
  0x47,
  0x0d,
  0x0a,
  0x1a,
  0x0a,
  0,
  0,
  0,
  13,
  0x49,
  0x48,
  0x44,
  0x52,
  0,
  0,
  0,
  200,
  0,
  0,
  0,
  100,
  8,
  2,
  0,
  0,
  0,
));

function clickRun(args: unknown, name = "computer"): EvalResult {
  return result({
    model: "operator",
    gateway: "http://127.0.0.1:8080",
    environment: "desktop",
    trajectory: {
      prompt: [],
      steps: [{
        step: 1,
        status: 200,
        text: "",
        tokens: { input: 1, output: 1 },
        cost_usd: 0,
        tool_calls: [{
          name,
          arguments: args,
          result: {
            text: "",
            images: [{ mimeType: "image/png", data: PNG_200x100 }],
            is_error: false,
          },
        }],
      }],
    },
  });
}

Deno.test("renderReport() names the model, gateway and environment, opens every task, and shows an error as an error, not a reward", () => {
  const html = renderReport([
    clickRun({ type: "click", x: 50, y: 25 }),
    result({
      task: 1,
      reward: null,
      error: "The environment closed the connection",
      error_kind: "environment",
      agent_acted: true,
    }),
  ]);
  assert.match(html, /<dt>model<\/dt><dd><code>operator<\/code><\/dd>/);
  assert.match(
    html,
    /<dt>gateway<\/dt><dd><code>http:\/\/127\.0\.0\.1:8080<\/code><\/dd>/,
  );
  assert.match(html, /<dt>environment<\/dt><dd><code>desktop<\/code><\/dd>/);
  assert.match(
    html,
    /<dt>errors<\/dt><dd>1: 1 counted as failures \(reward 0\)/,
  );
  assert.equal(html.match(/<details open>/g)?.length, 2);
  const errored = html.slice(html.indexOf('id="task-1"'));
  assert.match(errored, /<span class="badge error">error · scored 0<\/span>/);
  assert.doesNotMatch(errored, /reward 0\.000/);
});

Deno.test("a screenshot enlarges on click with no script, is captioned with its action, and marks where the click or drag landed", () => {
  const click = renderReport([clickRun({ type: "click", x: 50, y: 25 })]);
  assert.match(
    click,
    /<figure class="shot"><details><summary [^>]*><span class="frame"><img src="data:image\/png;base64,/,
  );
  assert.match(click, /<span class="mark at" style="left:25\.00%;top:25\.00%"/);
  assert.match(click, /<figcaption>after <code>click at \(50, 25\)<\/code>/);
  assert.doesNotMatch(click, /<script/);

  const drag = renderReport([
    clickRun({
      action: "left_click_drag",
      start_coordinate: [0, 0],
      coordinate: [200, 100],
    }),
  ]);
  assert.match(drag, /<polyline points="0\.00,0\.00 100\.00,100\.00"\/>/);
  assert.match(drag, /class="mark from" style="left:0\.00%;top:0\.00%"/);
  assert.match(drag, /class="mark to" style="left:100\.00%;top:100\.00%"/);
  assert.match(drag, /left_click_drag from \(0, 0\) to \(200, 100\)/);

  // Gemini's grid is 0–999 whatever the screen.
  const gemini = renderReport([clickRun({ x: 500, y: 500 }, "click_at")]);
  assert.match(gemini, /class="mark at" style="left:50\.00%;top:50\.00%"/);
});

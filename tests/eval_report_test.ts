/**
 * The eval report as a person opens it: `deno task eval … --report` on a run
 * of `examples/text_game` and of `examples/desktop` (real Xvfb and
 * Chromium), and `deno task eval report <results.jsonl>`, then the HTML file
 * opened from disk in headless Chromium (Debian's, driven by
 * `playwright-core`) with every request watched: each task has its
 * section, the screenshots render, and nothing but the file itself and its
 * `data:` images is requested. Skips, saying so, without Chromium (and the
 * desktop half without Xvfb and xdotool).
 *
 * With `MCPKIT_SCREENSHOTS=1` the desktop half also writes
 * `docs/eval-report.png`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type Browser, chromium, type Page } from "playwright-core";
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  evalCli,
  haveChromium,
  readResultsFile,
  ROOT,
} from "./_eval_cli.ts";
import { missingDesktopPrograms } from "./_desktop.ts";

const browserOk = haveChromium("eval_report_test");
const desktopOk = browserOk &&
  missingDesktopPrograms("eval_report_test (desktop report)").length === 0;
const SCREENSHOTS = Deno.env.get("MCPKIT_SCREENSHOTS") === "1";

/** What a page asked for that is neither the file nor a `data:` URL. */
interface Watched {
  page: Page;
  leaks: string[];
  cspViolations: string[];
}

async function openReport(browser: Browser, file: string): Promise<Watched> {
  const context = await browser.newContext({
    viewport: { width: 1200, height: 1700 },
  });
  const leaks: string[] = [];
  const cspViolations: string[] = [];
  await context.route("**/*", async (route) => {
    const url = route.request().url();
    if (url.startsWith("file:") || url.startsWith("data:")) {
      await route.continue();
    } else {
      leaks.push(url);
      await route.abort();
    }
  });
  const page = await context.newPage();
  page.on("request", (request) => {
    const url = request.url();
    if (!url.startsWith("file:") && !url.startsWith("data:")) leaks.push(url);
  });
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) {
      cspViolations.push(message.text());
    }
  });
  await page.goto(`file://${file}`);
  return { page, leaks, cspViolations };
}

/** Opens every task's details, as a reader clicking each. */
async function openAll(page: Page): Promise<void> {
  const closed = page.locator(".task > details:not([open]) > summary");
  while (await closed.count() > 0) await closed.first().click();
}

/** Opens every task's details, then checks each image loaded with a size. */
async function imageWidths(page: Page): Promise<number[]> {
  await openAll(page);
  const widths: number[] = [];
  for (const image of await page.locator("img").all()) {
    await image.scrollIntoViewIfNeeded();
    const deadline = Date.now() + 5_000;
    let width = 0;
    while (Date.now() < deadline) {
      width = await image.evaluate((img) => {
        const loaded = img as unknown as {
          complete: boolean;
          naturalWidth: number;
        };
        return loaded.complete ? loaded.naturalWidth : -1;
      });
      if (width >= 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    widths.push(width);
  }
  return widths;
}

async function withBrowser(run: (browser: Browser) => Promise<void>) {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
  });
  try {
    await run(browser);
  } finally {
    await browser.close();
  }
}

Deno.test({
  name:
    "the report of a text_game run opens from disk: every task has its section, nothing is fetched",
  ignore: !browserOk,
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-report-" });
  try {
    const run = await evalCli([
      `${ROOT}examples/text_game/main.ts`,
      "--tasks",
      `${ROOT}examples/text_game/tasks.jsonl`,
      "--out",
      `${dir}/results.jsonl`,
      "--report",
    ], dir);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /Report in .*results\.html/);
    const results = await readResultsFile(`${dir}/results.jsonl`);
    assert.equal(results.length, 3);
    const html = await Deno.readTextFile(`${dir}/results.html`);
    assert.ok(!/\s(src|href)="(?!data:image\/)/.test(html), "no link out");

    // `deno task eval report` writes the same report from the file alone.
    const again = await evalCli(
      ["report", `${dir}/results.jsonl`, `${dir}/again.html`],
      dir,
    );
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /Report of 3 task\(s\) in .*again\.html/);

    await withBrowser(async (browser) => {
      const { page, leaks, cspViolations } = await openReport(
        browser,
        `${dir}/again.html`,
      );
      assert.equal(await page.title(), "Eval report: results.jsonl");
      await openAll(page);
      for (const result of results) {
        const section = page.locator(`#task-${result.task}`);
        assert.equal(await section.count(), 1, `task ${result.task}`);
        const text = await section.innerText();
        assert.ok(text.includes(result.trace_id), "the trace id is shown");
        assert.ok(text.includes("Model call 1"), "the trajectory is shown");
        assert.ok(text.includes("Tool call"), "tool calls are shown");
        assert.ok(text.includes("look"), "the first tool's name is shown");
      }
      const summary = await page.locator("#summary").innerText();
      assert.match(summary, /guess\s+3\s+0\.333/);
      assert.equal(await page.locator("#distribution svg rect").count(), 2);
      assert.deepEqual(leaks, []);
      assert.deepEqual(cspViolations, []);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "the report of a desktop run shows every screenshot from disk, with nothing fetched",
  ignore: !desktopOk,
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-report-" });
  try {
    const run = await evalCli(
      [
        `${ROOT}examples/desktop/main.ts`,
        "--tasks",
        `${ROOT}examples/desktop/tasks.jsonl`,
        "--model",
        "operator",
        "--out",
        `${dir}/desktop.jsonl`,
        `--report=${dir}/desktop-report.html`,
      ],
      dir,
      240_000,
    );
    assert.equal(run.code, 0, run.stderr);
    const results = await readResultsFile(`${dir}/desktop.jsonl`);
    assert.equal(results.length, 3);
    assert.ok(results.every((r) => r.reward === 1), run.stdout);
    // The lines hold references; the screenshots are files beside them.
    const stored = [...Deno.readDirSync(`${dir}/desktop.images`)];
    assert.ok(stored.length > 0);
    for (
      const line of (await Deno.readTextFile(`${dir}/desktop.jsonl`)).split(
        "\n",
      )
    ) {
      assert.ok(line.length < 50_000, `a line of ${line.length} characters`);
    }
    await withBrowser(async (browser) => {
      const { page, leaks, cspViolations } = await openReport(
        browser,
        `${dir}/desktop-report.html`,
      );
      for (const result of results) {
        assert.equal(await page.locator(`#task-${result.task}`).count(), 1);
      }
      const screenshots = results.reduce(
        (sum, r) =>
          sum + r.trajectory!.steps.reduce(
            (n, step) =>
              n + step.tool_calls.reduce(
                (k, call) => k + (call.result?.images.length ?? 0),
                0,
              ),
            0,
          ),
        0,
      );
      assert.ok(screenshots >= 3, `${screenshots} screenshots`);
      // The model, gateway and environment are named at the top.
      const top = await page.locator("header").innerText();
      assert.match(top, /model\s+operator/);
      assert.match(top, /gateway\s+http:\/\/(localhost|127\.0\.0\.1):\d+/);
      assert.match(top, /environment\s+desktop/);
      // Every task is open, each click on a screenshot is marked on it, in
      // the screenshot's box.
      assert.equal(
        await page.locator(".task > details:not([open])").count(),
        0,
      );
      const marks = page.locator(".shot .mark");
      assert.ok(await marks.count() >= 1, "a click is marked");
      const mark = await marks.first().boundingBox();
      const frame = await page.locator(".shot:has(.mark) img").first()
        .boundingBox();
      assert.ok(mark && frame);
      const [cx, cy] = [mark.x + mark.width / 2, mark.y + mark.height / 2];
      assert.ok(
        cx >= frame.x && cx <= frame.x + frame.width &&
          cy >= frame.y && cy <= frame.y + frame.height,
        "the marker is on its screenshot",
      );
      assert.match(
        await page.locator(".shot:has(.mark) figcaption").first().innerText(),
        /^after click at \(\d+, \d+\)/,
      );
      if (SCREENSHOTS) {
        // From the top down to the first marked screenshot's caption.
        const end = await page.locator(".shot:has(.mark)").first()
          .boundingBox();
        await page.screenshot({
          path: `${ROOT}docs/eval-report.png`,
          fullPage: true,
          clip: { x: 0, y: 0, width: 1200, height: end!.y + end!.height + 24 },
        });
      }
      // A click enlarges a screenshot; another click closes it.
      const shot = page.locator(".shot:has(.mark) summary").first();
      await shot.click();
      const large = await page.locator(".shot:has(.mark) img").first()
        .boundingBox();
      assert.ok(large && large.width > frame.width, "enlarged");
      await shot.click();
      const widths = await imageWidths(page);
      assert.equal(widths.length, screenshots);
      assert.ok(widths.every((w) => w > 0), `widths ${widths.join(", ")}`);
      assert.deepEqual(leaks, []);
      assert.deepEqual(cspViolations, []);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

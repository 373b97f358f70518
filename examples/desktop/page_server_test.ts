import assert from "node:assert/strict";
import {
  elementCenter,
  type PageLayout,
  startPageServer,
} from "./page_server.ts";

function layout(
  run: number,
  window: Partial<PageLayout["window"]> = {},
): PageLayout {
  const rect = { left: 100, top: 50, width: 200, height: 40 };
  return {
    run,
    window: {
      screenX: 0,
      screenY: 0,
      outerWidth: 1281,
      outerHeight: 801,
      innerWidth: 1281,
      innerHeight: 801,
      devicePixelRatio: 1,
      ...window,
    },
    screen: { width: 1280, height: 800 },
    elements: { word: rect, submit: { ...rect, left: 400 } },
  };
}

async function post(url: string, path: string, body: unknown) {
  const response = await fetch(new URL(path, url), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  await response.body?.cancel();
  return response.status;
}

Deno.test("elementCenter() adds the window's place, its bars and the device pixel ratio", () => {
  assert.deepEqual(elementCenter(layout(0), "word"), { x: 200, y: 70 });
  assert.deepEqual(
    elementCenter(
      layout(0, {
        screenX: 10,
        screenY: 20,
        outerHeight: 900,
        innerHeight: 800,
        devicePixelRatio: 2,
      }),
      "submit",
    ),
    { x: 10 + 1000, y: 20 + 100 + 140 },
  );
});

Deno.test("the page server serves the page, waits for a run's layout and keeps each run's submission", async () => {
  await using page = await startPageServer();
  const html = await (await fetch(page.url)).text();
  assert.match(html, /<input id="word"/);
  assert.deepEqual(await (await fetch(new URL("/state", page.url))).json(), {
    run: 0,
  });

  // The page's long poll answers once a run starts.
  const next = fetch(new URL("/next?run=0", page.url));
  const started = page.startRun(5_000);
  assert.deepEqual(await (await next).json(), { run: 1 });
  assert.equal(await post(page.url, "/layout", layout(1)), 200);
  const { run, layout: seen } = await started;
  assert.equal(run, 1);
  assert.equal(seen.elements.word.left, 100);

  assert.equal(await post(page.url, "/submit", { run: 0, word: "old" }), 409);
  assert.equal(
    await post(page.url, "/submit", { run: 1, word: "lantern" }),
    200,
  );
  assert.equal(await page.submission(1, 0), "lantern");
  assert.equal(await page.submission(0, 0), undefined);
  assert.equal(
    await post(page.url, "/clicked", {
      run: 1,
      target: "word",
      button: 0,
      x: 5,
      y: 6,
    }),
    200,
  );
  assert.deepEqual(page.clicks, [{
    run: 1,
    target: "word",
    button: 0,
    x: 5,
    y: 6,
  }]);
});

Deno.test("the page server refuses malformed reports and times out waiting for a layout", async () => {
  await using page = await startPageServer();
  assert.equal(await post(page.url, "/layout", "{not json"), 400);
  assert.equal(await post(page.url, "/layout", { run: 0 }), 400);
  assert.equal(
    await post(page.url, "/clicked", { run: 0, target: "elsewhere" }),
    400,
  );
  assert.equal(
    await post(page.url, "/submit", { run: 0, word: "x".repeat(2_000) }),
    400,
  );
  await assert.rejects(
    () => page.startRun(100),
    /The page did not report its layout within 100 ms/,
  );
});

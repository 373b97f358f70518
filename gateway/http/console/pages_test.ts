import assert from "node:assert/strict";
import { consolePages } from "./pages.ts";

/** The assets a page or script loads: `src`/`href` of the page, relative imports of a script. */
function referencesOf(text: string): string[] {
  const page = [...text.matchAll(/(?:src|href)="\/console\/assets\/([^"]+)"/g)]
    .map((m) => m[1]);
  const script = [...text.matchAll(/from "\.\/([^"]+)"/g)].map((m) => m[1]);
  return [...page, ...script];
}

Deno.test("consolePages() serves every asset the pages and their scripts load, and nothing else", async () => {
  const pages = consolePages();
  const seen = new Set<string>();
  const queue: string[] = [];
  for (const path of ["/console", "/activity"]) {
    const response = await pages.request(path);
    assert.equal(response.status, 200, path);
    queue.push(...referencesOf(await response.text()));
  }
  while (queue.length > 0) {
    const name = queue.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const response = await pages.request(`/console/assets/${name}`);
    assert.equal(response.status, 200, name);
    const type = response.headers.get("content-type") ?? "";
    assert.match(
      type,
      name.endsWith(".css") ? /^text\/css/ : /^text\/javascript/,
    );
    const text = await response.text();
    if (name.endsWith(".js") && name !== "uplot.js") {
      queue.push(...referencesOf(text));
    }
  }
  assert.ok(seen.has("session.js") && seen.has("console.js"));
  for (const name of ["nope.js", "__proto__", "constructor", "toString"]) {
    const response = await pages.request(`/console/assets/${name}`);
    assert.equal(response.status, 404, name);
    await response.body?.cancel();
  }
});

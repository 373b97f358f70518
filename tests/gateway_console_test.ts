/**
 * The console's data and pages at the HTTP level: who may read what, bad
 * input, and the security headers of the pages. (The pages themselves are
 * driven in Chromium by console_browser_test.ts.)
 */
import assert from "node:assert/strict";
import { createCaller } from "../gateway/state/callers.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import {
  keptBody,
  MAX_TRACE_BODY_BYTES,
} from "../gateway/state/trace_bodies.ts";
import { startHarness } from "./_gateway_harness.ts";
import { callBody } from "./_gateway_routes.ts";

const TOKEN = "console-admin-token-0123456789";

Deno.test("usage and traces: the admin sees every caller, a caller only themself, a wrong credential nothing, and bad parameters a 400 naming them", async () => {
  await using h = await startHarness({ env: { GATEWAY_ADMIN_TOKEN: TOKEN } });
  const other = await createCaller(h.kv, {
    name: "other",
    creditsMicros: usdToMicros(5),
  });
  for (const key of [h.caller.key, h.caller.key, other.key]) {
    const response = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
      },
      body: JSON.stringify(callBody("chat", "gpt-4o-mini", false)),
    });
    await response.body?.cancel();
  }
  const get = async (path: string, credential: string) => {
    const response = await fetch(`${h.url}${path}`, {
      headers: { authorization: `Bearer ${credential}` },
    });
    return { status: response.status, body: await response.json() };
  };

  const all = await get("/admin/usage?range=1h", TOKEN);
  assert.equal(all.status, 200);
  assert.equal(all.body.totals.requests, 3);
  assert.equal(all.body.byCaller.length, 2);
  const mine = await get("/v1/usage?range=1h", other.key);
  assert.equal(mine.body.totals.requests, 1);
  assert.equal(mine.body.byCaller, undefined);
  const traces = await get("/admin/traces?limit=10", TOKEN);
  assert.equal(traces.body.data.length, 3);
  const byCaller = (id: string) =>
    traces.body.data.filter((t: { callerId: string }) => t.callerId === id);
  assert.equal(byCaller(h.caller.id).length, 2);
  assert.equal(byCaller(other.id).length, 1);
  assert.equal(byCaller(other.id)[0].callerName, "other");
  const ownTraces = await get("/v1/traces", other.key);
  assert.equal(ownTraces.body.data.length, 1);

  // Wrong credentials: 401 and no data.
  for (
    const [path, credential] of [
      ["/admin/usage?range=1h", "wrong-token"],
      ["/admin/usage?range=1h", other.key], // a caller key is not the admin token
      ["/admin/traces", "wrong-token"],
      ["/v1/usage?range=1h", "mk-not-a-key"],
    ]
  ) {
    const refused = await get(path, credential);
    assert.equal(refused.status, 401, path);
    assert.equal(refused.body.totals, undefined);
    assert.equal(refused.body.data, undefined);
  }

  // Bad parameters: a 400 naming them.
  const badRange = await get("/admin/usage?range=1y", TOKEN);
  assert.equal(badRange.status, 400);
  assert.equal(badRange.body.error.param, "range");
  const badStatus = await get("/admin/traces?status=teapot", TOKEN);
  assert.equal(badStatus.status, 400);
  assert.equal(badStatus.body.error.param, "status");
  const filtered = await get(
    `/admin/traces?caller=${other.id}&status=2xx`,
    TOKEN,
  );
  assert.equal(filtered.body.data.length, 1);
});

Deno.test("the console and activity pages are served with a strict content security policy and hold no data", async () => {
  await using h = await startHarness();
  for (const path of ["/console", "/activity"]) {
    const page = await fetch(`${h.url}${path}`);
    assert.equal(page.status, 200);
    const csp = page.headers.get("content-security-policy") ?? "";
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(page.headers.get("cache-control"), "no-store");
    const html = await page.text();
    assert.doesNotMatch(html, /<script>[^<]/, "no inline script");
    assert.doesNotMatch(html, new RegExp(h.caller.id), "no data in the page");
  }
  const uplot = await fetch(`${h.url}/console/assets/uplot.js`);
  assert.match(await uplot.text(), /uPlot/);
  const missing = await fetch(`${h.url}/console/assets/nope.js`);
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
});

Deno.test("the trace browser filters by time", async () => {
  await using h = await startHarness({ env: { GATEWAY_ADMIN_TOKEN: TOKEN } });
  const response = await h.post(
    "/v1/chat/completions",
    callBody("chat", "gpt-4o-mini", false),
  );
  await response.body?.cancel();
  const list = async (query: string) =>
    (await (await fetch(`${h.url}/admin/traces?${query}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    })).json()).data;
  const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
  const soon = new Date(Date.now() + 60_000).toISOString();
  assert.equal((await list(`since=${hourAgo}`)).length, 1);
  assert.equal((await list(`since=${soon}`)).length, 0);
  assert.equal((await list(`until=${hourAgo}`)).length, 0);
  const bad = await fetch(`${h.url}/admin/traces?since=yesterday`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.param, "since");
});

Deno.test("keptBody() scrubs credential fields and key-shaped strings, and bounds the body on a character boundary", () => {
  const key = "sk-ant-api03-0123456789abcdefghij";
  const kept = keptBody(
    JSON.stringify({
      model: "m",
      api_key: key,
      nested: [{ Authorization: "Bearer x", note: `my key is ${key}` }],
    }),
    4096,
  );
  assert.deepEqual(JSON.parse(kept), {
    model: "m",
    api_key: "[scrubbed]",
    nested: [{ Authorization: "[scrubbed]", note: "my key is [scrubbed key]" }],
  });
  assert.equal(
    keptBody(`not json mk-${"a".repeat(40)}`, 100),
    "not json [scrubbed key]",
  );
  const long = keptBody("é".repeat(100), 11);
  assert.equal(long, `${"é".repeat(5)}... [190 more bytes not kept]`);
  assert.ok(
    new TextEncoder().encode(keptBody("x".repeat(100_000), 1e9)).length <
      MAX_TRACE_BODY_BYTES + 64,
    "never more than the most a trace keeps",
  );
});

Deno.test("the trace browser pages past its limit with a cursor, and a bad cursor is a 400", async () => {
  await using h = await startHarness({ env: { GATEWAY_ADMIN_TOKEN: TOKEN } });
  for (let i = 0; i < 5; i++) {
    const response = await h.post(
      "/v1/chat/completions",
      callBody("chat", "gpt-4o-mini", false),
    );
    await response.body?.cancel();
  }
  const list = async (query: string) =>
    await (await fetch(`${h.url}/admin/traces?${query}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    })).json();
  // Non-streamed calls are answered before their trace commits (write-behind).
  let all = await list("limit=10");
  for (let i = 0; i < 100 && all.data.length < 5; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    all = await list("limit=10");
  }
  assert.equal(all.data.length, 5);
  assert.equal(all.next, null);
  const seen: string[] = [];
  let page = await list("limit=2");
  for (;;) {
    seen.push(...page.data.map((t: { requestId: string }) => t.requestId));
    if (page.next === null) break;
    page = await list(`limit=2&before=${encodeURIComponent(page.next)}`);
  }
  assert.deepEqual(
    seen,
    all.data.map((t: { requestId: string }) => t.requestId),
  );
  const bad = await fetch(`${h.url}/admin/traces?before=yesterday`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.param, "before");
});

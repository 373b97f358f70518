/**
 * No free side doors (issue 22, part 2): token counting spends a provider
 * key, so `/messages/count_tokens` and Gemini's `:countTokens` pass the
 * caller's checks (expiry, allowlist, rpm, a balance above zero), count
 * against its rpm, and go through the one upstream sender (rotation on a
 * 429, each key's RPM).
 */
import assert from "node:assert/strict";
import { createCaller } from "../gateway/state/callers.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import type { CallerLimits } from "../gateway/state/limits/limits.ts";
import { startHarness } from "./_gateway_harness.ts";

const ANTHROPIC_COUNT = {
  path: "/v1/messages/count_tokens",
  body: {
    model: "claude-haiku-4-5",
    messages: [{ role: "user", content: "How many tokens is this?" }],
  },
};
const GEMINI_COUNT = {
  path: "/v1beta/models/gemini-2.5-computer-use-preview:countTokens",
  body: { contents: [{ role: "user", parts: [{ text: "How many?" }] }] },
};
const ROUTES = [ANTHROPIC_COUNT, GEMINI_COUNT];

const countCalls = (paths: { path: string }[]) =>
  paths.filter((r) => /count_tokens|:countTokens/.test(r.path)).length;

async function callerWith(
  kv: Deno.Kv,
  credits: number,
  limits?: CallerLimits,
): Promise<string> {
  const created = await createCaller(kv, {
    name: "counter",
    creditsMicros: usdToMicros(credits),
    limits,
  });
  return created.key;
}

Deno.test("an expired key, a key with no credit and a model off the allowlist are refused token counting, and nothing goes upstream", async () => {
  await using h = await startHarness();
  const expired = await callerWith(h.kv, 5, {
    expiresAt: "2020-01-01T00:00:00Z",
  });
  const broke = await callerWith(h.kv, 0);
  const narrow = await callerWith(h.kv, 5, { models: ["gpt-4o-mini"] });
  for (const route of ROUTES) {
    for (
      const [key, status] of [[expired, 401], [broke, 402], [narrow, 403]] as [
        string,
        number,
      ][]
    ) {
      const response = await h.post(route.path, route.body, {
        authorization: `Bearer ${key}`,
      });
      assert.equal(response.status, status, `${route.path}: ${status}`);
      await response.text();
    }
  }
  assert.equal(countCalls(h.sim.requests), 0);
  // A caller who could make the call counts.
  for (const route of ROUTES) {
    const response = await h.post(route.path, route.body);
    assert.equal(response.status, 200, await response.clone().text());
    await response.text();
  }
  assert.equal(countCalls(h.sim.requests), 2);
});

Deno.test("token counting is counted against the caller's rpm", async () => {
  await using h = await startHarness();
  const key = await callerWith(h.kv, 5, { rpm: 3 });
  const auth = { authorization: `Bearer ${key}` };
  // The four calls fall in one calendar minute.
  const intoMinute = Date.now() % 60_000;
  if (intoMinute > 57_000) {
    await new Promise((resolve) => setTimeout(resolve, 60_500 - intoMinute));
  }
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) {
    const route = ROUTES[i % 2];
    const response = await h.post(route.path, route.body, auth);
    statuses.push(response.status);
    if (response.status === 429) {
      assert.ok(Number(response.headers.get("retry-after")) >= 1);
    }
    await response.text();
  }
  assert.deepEqual(statuses, [200, 200, 200, 429]);
  assert.equal(countCalls(h.sim.requests), 3);
});

Deno.test("300 counting calls from an expired key with no credit cannot starve a paying caller of a rate-limited provider key", async () => {
  await using h = await startHarness({
    keysPerProvider: 1,
    env: { ANTHROPIC_RPM: "5" },
  });
  const expired = await callerWith(h.kv, 0, {
    expiresAt: "2020-01-01T00:00:00Z",
  });
  const flood = await Promise.all(
    Array.from({ length: 300 }, async () => {
      const response = await h.post(
        ANTHROPIC_COUNT.path,
        ANTHROPIC_COUNT.body,
        {
          authorization: `Bearer ${expired}`,
        },
      );
      await response.text();
      return response.status;
    }),
  );
  assert.deepEqual(new Set(flood), new Set([401]));
  const paid = await h.post("/v1/messages", {
    model: "claude-haiku-4-5",
    max_tokens: 20,
    messages: [{ role: "user", content: "Hello" }],
  });
  assert.equal(paid.status, 200, await paid.clone().text());
  await paid.text();
});

Deno.test("token counting goes through the one sender: a 429 on one key moves to the next key", async () => {
  // A loopback provider: each route's first request is rate limited.
  const seen: { path: string; key: string }[] = [];
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (request) => {
      const path = new URL(request.url).pathname;
      const key = request.headers.get("x-api-key") ??
        request.headers.get("x-goog-api-key") ?? "";
      const first = !seen.some((s) => s.path === path);
      seen.push({ path, key });
      if (first) {
        return Response.json(
          { error: { message: "slow down" } },
          { status: 429, headers: { "retry-after": "30" } },
        );
      }
      return Response.json(
        path.includes("count_tokens")
          ? { input_tokens: 7 }
          : { totalTokens: 7 },
      );
    },
  );
  try {
    const base = `http://127.0.0.1:${upstream.addr.port}`;
    await using h = await startHarness({
      keysPerProvider: 2,
      env: { ANTHROPIC_BASE_URL: base, GEMINI_BASE_URL: base },
    });
    for (const route of ROUTES) {
      const response = await h.post(route.path, route.body);
      assert.equal(response.status, 200, await response.clone().text());
      await response.text();
    }
    assert.equal(seen.length, 4);
    assert.notEqual(seen[0].key, seen[1].key, "the second try, another key");
    assert.notEqual(seen[2].key, seen[3].key, "the second try, another key");
  } finally {
    await upstream.shutdown();
  }
});

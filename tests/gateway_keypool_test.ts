/**
 * The provider key pool end to end: rotation within each key's RPM, 429s
 * with a truthful `retry-after`, retry on another key after an upstream 429,
 * keys cooled down after a 401 (and probed), a 403 about the request failing
 * only that call, and provider keys never leaking anywhere.
 */
import assert from "node:assert/strict";
import { createCaller } from "../gateway/state/callers.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { providerKeyId } from "../gateway/upstream/key_pool.ts";
import Anthropic from "@anthropic-ai/sdk";
import { startHarness } from "./_gateway_harness.ts";
import { assertRouteError, callBody, callPath } from "./_gateway_routes.ts";
import { delay } from "./_gateway_e2e.ts";

/** KV holds sums (`Deno.KvU64`, a bigint inside): written as text in a dump. */
function bigints(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}

const CHAT = callBody("chat", "gpt-4o", false);

function keysUsed(
  requests: readonly { key?: string; provider: string }[],
): (string | undefined)[] {
  return requests.filter((request) => request.provider === "openai").map((
    request,
  ) => request.key);
}

Deno.test("calls rotate over a provider's keys within each key's RPM, then get 429 with the window's retry-after", async () => {
  await using h = await startHarness({ env: { OPENAI_RPM: "3" } });
  const [a, b] = h.providerKeys.openai;
  const firstCall = Date.now();
  for (let i = 0; i < 6; i++) {
    const response = await h.post("/chat/completions", CHAT);
    assert.equal(response.status, 200);
    await response.body?.cancel();
  }
  const used = keysUsed(h.sim.requests);
  assert.equal(used.filter((key) => key === a).length, 3, "key a");
  assert.equal(used.filter((key) => key === b).length, 3, "key b");
  // Least-used: the two keys take turns.
  for (let i = 1; i < used.length; i++) assert.notEqual(used[i], used[i - 1]);

  const refused = await h.post("/chat/completions", CHAT);
  const retryAfter = Number(refused.headers.get("retry-after"));
  await assertRouteError("chat", refused, 429);
  assert.equal(h.sim.requests.length, 6, "a refused call reached a provider");
  // The oldest call leaves the one-minute window 60 s after it was made:
  // a retry-after shorter than that would be refused again.
  const elapsed = (Date.now() - firstCall) / 1000;
  assert.ok(
    retryAfter <= 60 && retryAfter >= 60 - Math.ceil(elapsed) - 1,
    `retry-after ${retryAfter} after ${elapsed} s`,
  );
  // Other providers' keys have their own limits.
  const other = await h.post(
    "/chat/completions",
    callBody("chat", "grok-4-1-fast", false),
  );
  assert.equal(other.status, 200);
  await other.body?.cancel();
});

Deno.test("an upstream 429 on one key retries the call on another and cools that key down for its retry-after", async () => {
  await using h = await startHarness();
  const [a, b] = h.providerKeys.openai;
  // The pool picks the least-used key, `a` first; it answers 429 once.
  h.sim.enqueue({
    match: { key: a },
    behaviour: { status: 429, retryAfter: 1 },
  });
  const first = await h.post("/chat/completions", CHAT);
  assert.equal(first.status, 200, await first.clone().text());
  await first.body?.cancel();
  assert.deepEqual(keysUsed(h.sim.requests), [a, b]);
  const cooledAt = Date.now();

  for (let i = 0; i < 4; i++) {
    const response = await h.post("/chat/completions", CHAT);
    assert.equal(response.status, 200);
    await response.body?.cancel();
  }
  assert.ok(Date.now() - cooledAt < 900, "the calls took too long to test");
  assert.deepEqual(keysUsed(h.sim.requests).slice(2), [b, b, b, b]);

  await delay(1_100 - (Date.now() - cooledAt));
  const after = await h.post("/chat/completions", CHAT);
  assert.equal(after.status, 200);
  await after.body?.cancel();
  assert.equal(keysUsed(h.sim.requests).at(-1), a, "cool-down over: a again");
});

Deno.test("an upstream 401 cools the key down, moves the call to another key and logs the key by id, never by secret", async () => {
  await using h = await startHarness({
    keysPerProvider: 3,
    env: { GATEWAY_ADMIN_TOKEN: "admin-secret-0123456789" },
  });
  const [bad, ...good] = h.providerKeys.openai;
  h.sim.setKeyBehaviour(bad, { status: 401 });
  for (let i = 0; i < 9; i++) {
    const response = await h.post("/chat/completions", CHAT);
    assert.equal(response.status, 200);
    await response.body?.cancel();
  }
  const used = keysUsed(h.sim.requests);
  assert.equal(used.filter((key) => key === bad).length, 1);
  assert.equal(used.length, 10);
  for (const key of good) assert.ok(used.includes(key));

  const badId = providerKeyId("openai", bad);
  const refusals = h.logs.filter((record) => record.keyId === badId);
  assert.ok(refusals.length >= 1, JSON.stringify(h.logs));
  assert.equal(refusals[0].status, 401);
  assert.ok(!JSON.stringify(h.logs).includes(bad));
  // The operator sees the key by its state.
  const health = await (await fetch(`${h.url}/admin/provider-keys`, {
    headers: { authorization: "Bearer admin-secret-0123456789" },
  })).json();
  const state = health.data.find((key: { keyId: string }) =>
    key.keyId === badId
  );
  assert.equal(state.state, "refused");
  assert.match(state.coolUntil, /^\d{4}-\d\d-\d\dT/);
});

Deno.test("a 403 about the request fails only that call, with the provider's reason, and every key keeps serving", async () => {
  await using h = await startHarness({ keysPerProvider: 2 });
  h.sim.enqueue({
    match: { provider: "openrouter" },
    behaviour: { status: 403, message: "Input flagged by moderation" },
  });
  const body = callBody("chat", "z-ai/glm-4.5v", false);
  const flagged = await h.post("/chat/completions", body);
  assert.equal(flagged.status, 403);
  const error = (await flagged.json()).error;
  assert.match(error.message, /flagged by moderation/);
  assert.equal(error.type, "permission_error");
  // Tried on one key only: a request's refusal is not retried elsewhere.
  assert.equal(h.sim.requests.length, 1);
  for (let i = 0; i < 6; i++) {
    const innocent = await h.post("/chat/completions", body);
    assert.equal(innocent.status, 200);
    await innocent.body?.cancel();
  }
  const used = new Set(h.sim.requests.slice(1).map((request) => request.key));
  assert.equal(used.size, 2, "both keys still serve");
  assert.deepEqual(
    h.logs.filter((record) => record.status === 403),
    [],
    "no key was blamed",
  );
});

Deno.test("a key that answers 403 to requests of several different callers is cooled down like a 401; one caller's 403s never refuse it", async () => {
  await using h = await startHarness({ keysPerProvider: 1 });
  const [dead] = h.providerKeys.openrouter;
  h.sim.setKeyBehaviour(dead, { status: 403, message: "Key disabled" });
  const body = callBody("chat", "z-ai/glm-4.5v", false);
  const callAs = async (key: string) => {
    const response = await h.post("/chat/completions", body, {
      authorization: `Bearer ${key}`,
    });
    await response.body?.cancel();
    return response.status;
  };
  const refusedKeys = () =>
    h.logs.filter((record) =>
      record.provider === "openrouter" && record.status === 403
    );
  // One caller, however many requests: each 403 fails its own call only.
  for (let i = 0; i < 8; i++) assert.equal(await callAs(h.caller.key), 403);
  assert.deepEqual(refusedKeys(), [], "one caller never refuses a key");
  // Two more callers meet the 403: three different callers, the key's fault.
  for (const name of ["second", "third"]) {
    const other = await createCaller(h.kv, {
      name,
      creditsMicros: usdToMicros(10),
    });
    await callAs(other.key);
  }
  assert.equal(refusedKeys().length, 1, "refused once three callers met it");
  const sent = h.sim.requests.length;
  assert.notEqual(await callAs(h.caller.key), 200);
  assert.equal(h.sim.requests.length, sent, "a refused key is not sent to");
});

Deno.test("with every key cooling down the caller gets 429 with retry-after = the cool-down, and a call after it succeeds", async () => {
  await using h = await startHarness();
  h.sim.enqueue({
    match: { provider: "openai" },
    behaviour: { status: 429, retryAfter: 2 },
    times: 2,
  });
  const refused = await h.post("/chat/completions", CHAT);
  assert.equal(refused.headers.get("retry-after"), "2");
  await assertRouteError("chat", refused, 429);
  const cooledAt = Date.now();
  assert.equal(h.sim.requests.length, 2);

  // Now the pool itself knows both keys are cooling: nothing is sent.
  const again = await h.post("/chat/completions", CHAT);
  assert.equal(again.headers.get("retry-after"), "2");
  await assertRouteError("chat", again, 429);
  assert.equal(h.sim.requests.length, 2);

  await delay(2_050 - (Date.now() - cooledAt));
  const later = await h.post("/chat/completions", CHAT);
  assert.equal(later.status, 200);
  await later.body?.cancel();
});

Deno.test("when keys cool down for different times the caller's retry-after is the soonest one", async () => {
  await using h = await startHarness();
  const [a, b] = h.providerKeys.openai;
  h.sim.enqueue({
    match: { key: a },
    behaviour: { status: 429, retryAfter: 1 },
  });
  h.sim.enqueue({
    match: { key: b },
    behaviour: { status: 429, retryAfter: 30 },
  });
  const refused = await h.post("/chat/completions", CHAT);
  assert.equal(refused.headers.get("retry-after"), "1");
  await assertRouteError("chat", refused, 429);
  await delay(1_050);
  const later = await h.post("/chat/completions", CHAT);
  assert.equal(later.status, 200);
  await later.body?.cancel();
});

Deno.test("an upstream 429 without retry-after tells the caller the pool's default cool-down", async () => {
  await using h = await startHarness({
    env: { GATEWAY_KEY_COOLDOWN_MS: "5000" },
  });
  h.sim.enqueue({
    match: { provider: "openai" },
    behaviour: { status: 429 },
    times: 2,
  });
  const refused = await h.post("/chat/completions", CHAT);
  assert.equal(refused.headers.get("retry-after"), "5");
  await assertRouteError("chat", refused, 429);
  const again = await h.post("/chat/completions", CHAT);
  assert.equal(again.headers.get("retry-after"), "5");
  await assertRouteError("chat", again, 429);
});

Deno.test("no provider key appears in any response, log record, trace or KV entry", async () => {
  await using h = await startHarness({ keysPerProvider: 2 });
  const secrets = Object.values(h.providerKeys).flat();
  const seen: string[] = [];
  const record = async (response: Response) => {
    seen.push(JSON.stringify([...response.headers]));
    seen.push(await response.text());
    return response;
  };
  // Success on every route, streamed and not.
  for (
    const [route, modelId] of [
      ["chat", "gpt-4o"],
      ["chat", "claude-haiku-4-5"],
      ["chat", "gemini-2.5-pro"],
      ["chat", "grok-4-1-fast"],
      ["chat", "z-ai/glm-4.5v"],
      ["messages", "claude-sonnet-5-5"],
      ["responses", "gpt-5.1"],
      ["gemini", "gemini-2.5-computer-use-preview"],
    ] as const
  ) {
    for (const stream of [false, true]) {
      await record(
        await h.post(
          callPath(route, modelId, stream),
          callBody(route, modelId, stream),
        ),
      );
    }
  }
  // Refusals that name or echo a key upstream: a 401 (key taken out), a 429,
  // a provider 400 whose message quotes the key, a 500, garbage, a cut stream.
  const [openaiA, openaiB] = h.providerKeys.openai;
  h.sim.setKeyBehaviour(openaiA, {
    status: 401,
    message: `Incorrect API key provided: ${openaiA}`,
  });
  h.sim.enqueue({
    match: { key: openaiB },
    behaviour: {
      status: 429,
      retryAfter: 1,
      message: `Key ${openaiB} limited`,
    },
  });
  await record(await h.post("/chat/completions", CHAT));
  for (const provider of ["anthropic", "gemini", "xai"] as const) {
    for (const key of h.providerKeys[provider]) {
      h.sim.setKeyBehaviour(key, {
        status: 400,
        message: `Bad request for key ${key}`,
      });
    }
  }
  await record(
    await h.post("/messages", callBody("messages", "claude-haiku-4-5", false)),
  );
  await record(
    await h.post(
      callPath("gemini", "gemini-2.5-computer-use-preview", false),
      callBody("gemini", "", false),
    ),
  );
  await record(
    await h.post("/chat/completions", callBody("chat", "grok-4-1-fast", true)),
  );
  const [routerKey] = h.providerKeys.openrouter;
  h.sim.setKeyBehaviour(routerKey, {
    status: 500,
    message: `Internal error with ${routerKey}`,
  });
  await record(
    await h.post("/chat/completions", callBody("chat", "z-ai/glm-4.5v", false)),
  );
  await record(
    await h.post("/chat/completions", { ...CHAT, model: "gpt-5.1" }),
  );
  for (const tracesPath of ["/traces?limit=1000", "/v1/traces"]) {
    const traces = await record(
      await fetch(h.url + tracesPath, { headers: h.auth() }),
    );
    assert.equal(traces.status, 200);
  }
  assert.ok(seen.some((text) => text.includes("openai:")), "key ids traced");

  const kvDump: string[] = [];
  for await (const entry of h.kv.list({ prefix: [] })) {
    kvDump.push(JSON.stringify([entry.key, entry.value], bigints));
  }
  const everything = [
    ...seen,
    JSON.stringify(h.logs),
    ...kvDump,
  ].join("\n");
  for (const secret of secrets) {
    assert.ok(
      !everything.includes(secret),
      `provider key "${secret}" leaked: ${
        everything.split("\n").find((line) => line.includes(secret))
      }`,
    );
  }
});

/**
 * An Anthropic provider whose token counting is rate-limited for an hour
 * (`count_tokens` has limits of its own) while its messages are served.
 */
function startCountLimitedUpstream(): { base: string } & AsyncDisposable {
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    async (request) => {
      const body = await request.json() as { model?: string };
      if (new URL(request.url).pathname.endsWith("/count_tokens")) {
        return Response.json({
          type: "error",
          error: {
            type: "rate_limit_error",
            message:
              "Number of token counting requests has exceeded your rate limit",
          },
        }, { status: 429, headers: { "retry-after": "3600" } });
      }
      return Response.json({
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: body.model,
        content: [{ type: "text", text: "hi" }],
        stop_reason: "end_turn",
        stop_sequence: null,
        usage: { input_tokens: 5, output_tokens: 1 },
      });
    },
  );
  return {
    base: `http://127.0.0.1:${server.addr.port}`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

Deno.test("a 429 about one request (OpenAI's \"Request too large\", a count_tokens 429 with an hour's retry-after) cools no key: the next call is served on it", async () => {
  await using upstream = startCountLimitedUpstream();
  await using h = await startHarness({
    keysPerProvider: 1,
    env: { ANTHROPIC_BASE_URL: upstream.base },
  });
  const anthropic = new Anthropic({
    baseURL: h.url,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
  const hello = [{ role: "user" as const, content: "hello" }];
  await assert.rejects(
    anthropic.messages.countTokens({
      model: "claude-haiku-4-5",
      messages: hello,
    }),
    (error) => (error as { status?: number }).status === 429,
  );
  const served = await anthropic.messages.create({
    model: "claude-haiku-4-5",
    max_tokens: 16,
    messages: hello,
  });
  assert.equal(served.type, "message");

  h.sim.enqueue({
    match: { provider: "openai" },
    behaviour: {
      status: 429,
      retryAfter: 3600,
      message:
        "Request too large for gpt-4o in organization org-test on tokens per min (TPM): Limit 30000, Requested 90000. The input or output tokens must be reduced in order to run successfully.",
    },
  });
  const tooLarge = await h.post("/chat/completions", CHAT);
  assert.equal(tooLarge.status, 429);
  assert.match((await tooLarge.json()).error.message, /^Request too large/);
  for (let i = 0; i < 3; i++) {
    const next = await h.post("/chat/completions", CHAT);
    assert.equal(next.status, 200, await next.clone().text());
    await next.body?.cancel();
  }
  assert.deepEqual(
    h.logs.filter((record) => record.status === 429),
    [],
    "no key was cooled",
  );
});

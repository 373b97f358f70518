import assert from "node:assert/strict";
import { GatewayError } from "../errors.ts";
import { MemoryKeyPool, providerKeyId } from "./key_pool.ts";
import type { KeyHealth } from "./key_pool.ts";
import { openai } from "./providers/openai.ts";
import {
  readAnswer,
  sendUpstream,
  type UpstreamRequest,
  type UpstreamSettings,
} from "./send.ts";

/** Two keys as long as real ones (shorter ones are never scrubbed). */
const KEY_A = "sk-test-a-0123456789abcdefghij";
const KEY_B = "sk-test-b-0123456789abcdefghij";
const KEY_C = "sk-test-c-0123456789abcdefghij";

/** One upstream request as the loopback server saw it. */
interface Seen {
  authorization: string | null;
  path: string;
  body: unknown;
}

/**
 * A loopback upstream that answers each request with `answer(key, n)` (n
 * counts requests from 0) and records what it was sent.
 */
function loopbackUpstream(
  answer: (key: string, n: number) => Response | Promise<Response>,
) {
  const seen: Seen[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const authorization = request.headers.get("authorization");
      seen.push({
        authorization,
        path: new URL(request.url).pathname,
        body: await request.json(),
      });
      return answer(
        authorization?.replace("Bearer ", "") ?? "",
        seen.length - 1,
      );
    },
  );
  return {
    seen,
    base: `http://127.0.0.1:${server.addr.port}/v1`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

function settingsFor(
  base: string,
  keys: string[],
  upstreamTimeoutMs = 5_000,
): UpstreamSettings & { keyPool: MemoryKeyPool } {
  return {
    keyPool: new MemoryKeyPool({ openai: { keys } }, {
      defaultCooldownMs: 30_000,
    }),
    baseUrls: { openai: base } as UpstreamSettings["baseUrls"],
    upstreamTimeoutMs,
    keyCooldownMs: 30_000,
  };
}

function requestOf(extra: Partial<UpstreamRequest> = {}): UpstreamRequest {
  return {
    provider: openai,
    path: "/chat/completions",
    body: { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] },
    estimatedTokens: 10,
    signal: new AbortController().signal,
    requestId: "req-1",
    callerId: "ck-1",
    ...extra,
  };
}

const ANSWER = {
  id: "chatcmpl-1",
  object: "chat.completion",
  model: "gpt-4o-mini",
  choices: [{
    index: 0,
    message: { role: "assistant", content: "hello" },
    finish_reason: "stop",
  }],
  usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
};

const byKey = (health: KeyHealth[]) =>
  Object.fromEntries(health.map((key) => [key.keyId, key]));

Deno.test("sendUpstream() sends the body with a key's auth header and hands the answer over with the key still lent", async () => {
  await using upstream = loopbackUpstream(() => Response.json(ANSWER));
  const settings = settingsFor(upstream.base, [KEY_A]);
  const keysTried: string[] = [];
  const answer = await sendUpstream(settings, requestOf({ keysTried }));
  assert.equal(answer.response.status, 200);
  assert.equal(upstream.seen.length, 1);
  assert.equal(upstream.seen[0].authorization, `Bearer ${KEY_A}`);
  assert.equal(upstream.seen[0].path, "/v1/chat/completions");
  assert.deepEqual(upstream.seen[0].body, requestOf().body);
  assert.deepEqual(keysTried, [answer.key.keyId]);
  // Lent until the call gives it back.
  assert.equal(settings.keyPool.health()[0].inFlight, 1);
  const exchange = openai.exchange({
    route: "chat",
    entry: {
      id: "gpt-4o-mini",
      upstream: "gpt-4o-mini",
      provider: "openai",
    } as Parameters<typeof openai.exchange>[0]["entry"],
    body: requestOf().body as Record<string, unknown>,
    stream: false,
    maxOutputTokens: 100,
    query: {},
    headers: new Headers(),
  });
  const read = await readAnswer(exchange, answer);
  assert.equal(read.usage.inputTokens, 12);
  assert.equal(read.usage.outputTokens, 3);
  assert.deepEqual(JSON.parse(read.text), ANSWER);
  settings.keyPool.release(answer.key, { kind: "answered", tokens: 15 });
  assert.equal(settings.keyPool.health()[0].inFlight, 0);
});

Deno.test("sendUpstream() moves to the next key after a 429, which cools the first for its retry-after", async () => {
  await using upstream = loopbackUpstream((key) =>
    key === KEY_A
      ? Response.json({ error: { message: "slow down" } }, {
        status: 429,
        headers: { "retry-after": "7" },
      })
      : Response.json(ANSWER)
  );
  const settings = settingsFor(upstream.base, [KEY_A, KEY_B]);
  const keysTried: string[] = [];
  const answer = await sendUpstream(settings, requestOf({ keysTried }));
  assert.equal(upstream.seen.length, 2);
  assert.equal(answer.key.secret, KEY_B);
  // Both keys idle: the pool lends them in order.
  assert.deepEqual(keysTried, [
    providerKeyId("openai", KEY_A),
    providerKeyId("openai", KEY_B),
  ]);
  const health = byKey(settings.keyPool.health());
  assert.equal(health[keysTried[0]].state, "cooling");
  const coolsForMs = health[keysTried[0]].coolUntil! - Date.now();
  assert.ok(coolsForMs > 6_000 && coolsForMs <= 7_000, `${coolsForMs}`);
  assert.equal(health[keysTried[0]].inFlight, 0);
  assert.equal(health[keysTried[1]].inFlight, 1);
  settings.keyPool.release(answer.key, { kind: "answered", tokens: 15 });
});

Deno.test('sendUpstream() fails OpenAI\'s 429 "Request too large" for that request alone: no key cools, no other key is tried', async () => {
  await using upstream = loopbackUpstream(() =>
    Response.json({
      error: {
        message:
          "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 900000. The input or output tokens must be reduced in order to run successfully.",
        type: "tokens",
        code: "rate_limit_exceeded",
      },
    }, { status: 429, headers: { "retry-after": "3600" } })
  );
  const settings = settingsFor(upstream.base, [KEY_A, KEY_B]);
  const error = await sendUpstream(settings, requestOf()).then(
    () => undefined,
    (thrown) => thrown,
  );
  assert.ok(error instanceof GatewayError);
  assert.equal(error.status, 429);
  assert.match(error.message, /^Request too large/);
  assert.equal(upstream.seen.length, 1, "one attempt, no rotation");
  for (const key of settings.keyPool.health()) {
    assert.equal(key.state, "healthy", key.keyId);
    assert.equal(key.inFlight, 0);
  }
});

Deno.test("sendUpstream() lets a token-counting 429 with an hour's retry-after cool no key for calls", async () => {
  await using upstream = loopbackUpstream(() =>
    Response.json({ error: { message: "Counting rate limit" } }, {
      status: 429,
      headers: { "retry-after": "3600" },
    })
  );
  const settings = settingsFor(upstream.base, [KEY_A]);
  const error = await sendUpstream(
    settings,
    requestOf({ ownRateLimits: true }),
  ).then(() => undefined, (thrown) => thrown);
  assert.ok(error instanceof GatewayError);
  assert.equal(error.status, 429);
  assert.equal(error.retryAfterSeconds, 3600);
  assert.equal(settings.keyPool.health()[0].state, "healthy");
  const next = settings.keyPool.acquire("openai", 1);
  assert.ok(next.ok, "the key still serves calls");
  settings.keyPool.release(next.key, { kind: "failed" });
});

Deno.test("sendUpstream() retries a 5xx on one more key only, then fails with a 502 naming the provider", async () => {
  await using upstream = loopbackUpstream(() =>
    Response.json({ error: { message: "overloaded" } }, { status: 500 })
  );
  const settings = settingsFor(upstream.base, [KEY_A, KEY_B, KEY_C]);
  const keysTried: string[] = [];
  const error = await sendUpstream(settings, requestOf({ keysTried })).then(
    () => undefined,
    (thrown) => thrown,
  );
  assert.ok(error instanceof GatewayError);
  assert.equal(error.status, 502);
  assert.equal(error.code, "upstream_error");
  assert.match(error.message, /The openai provider failed: overloaded/);
  assert.equal(upstream.seen.length, 2);
  assert.equal(new Set(keysTried).size, 2);
  // Every key went back as it was: none cools, none is lent.
  for (const key of settings.keyPool.health()) {
    assert.equal(key.state, "healthy");
    assert.equal(key.inFlight, 0);
  }
});

Deno.test("sendUpstream() never passes on the key a provider quotes in its error", async () => {
  await using upstream = loopbackUpstream((key) =>
    Response.json(
      { error: { message: `Invalid request for key ${key}` } },
      { status: 400 },
    )
  );
  const settings = settingsFor(upstream.base, [KEY_A]);
  const error = await sendUpstream(settings, requestOf()).then(
    () => undefined,
    (thrown) => thrown,
  );
  assert.ok(error instanceof GatewayError);
  assert.equal(error.status, 400);
  assert.ok(!error.message.includes(KEY_A), error.message);
  assert.match(error.message, /\[key openai:[0-9a-f]{8}\]/);
  assert.equal(settings.keyPool.health()[0].inFlight, 0);
});

Deno.test("sendUpstream() scrubs a quoted key from an error however the JSON spells it, and before a long body is cut short", async () => {
  const bodies = [
    // A field the message is not read from: the body is passed on as text.
    JSON.stringify({ detail: `bad key ${KEY_A}` }).replace(
      KEY_A,
      KEY_A.replaceAll("-", "\\u002d"),
    ),
    // Not JSON, the key across the 200 characters a message keeps.
    `${"x".repeat(175)} key ${KEY_A}`,
  ];
  for (const body of bodies) {
    await using upstream = loopbackUpstream(() =>
      new Response(body, { status: 400 })
    );
    const settings = settingsFor(upstream.base, [KEY_A]);
    const error = await sendUpstream(settings, requestOf()).then(
      () => undefined,
      (thrown) => thrown,
    );
    assert.ok(error instanceof GatewayError);
    assert.equal(error.status, 400);
    for (const spelling of [KEY_A, KEY_A.slice(0, 12), "\\u002d"]) {
      assert.ok(!error.message.includes(spelling), error.message);
    }
  }
});

Deno.test("sendUpstream() fails an upstream that does not answer in time with a 504 and gives its key back", async () => {
  const gate = Promise.withResolvers<void>();
  await using upstream = loopbackUpstream(async () => {
    await gate.promise;
    return Response.json(ANSWER);
  });
  const settings = settingsFor(upstream.base, [KEY_A, KEY_B], 100);
  try {
    const error = await sendUpstream(settings, requestOf()).then(
      () => undefined,
      (thrown) => thrown,
    );
    assert.ok(error instanceof GatewayError);
    assert.equal(error.status, 504);
    assert.equal(error.code, "upstream_timeout");
    // A timeout fails the call: no second key is tried.
    assert.equal(upstream.seen.length, 1);
    for (const key of settings.keyPool.health()) {
      assert.equal(key.inFlight, 0);
    }
  } finally {
    gate.resolve();
  }
});

Deno.test("sendUpstream() says there is no key when the provider has none", async () => {
  await using upstream = loopbackUpstream(() => Response.json(ANSWER));
  const settings = settingsFor(upstream.base, []);
  const error = await sendUpstream(settings, requestOf()).then(
    () => undefined,
    (thrown) => thrown,
  );
  assert.ok(error instanceof GatewayError);
  assert.equal(error.status, 503);
  assert.equal(error.code, "no_provider_key");
  assert.equal(upstream.seen.length, 0);
});

Deno.test("readAnswer() fails a 2xx whose body is not JSON with a 502", async () => {
  await using upstream = loopbackUpstream(() => new Response("<html>oops"));
  const settings = settingsFor(upstream.base, [KEY_A]);
  const answer = await sendUpstream(settings, requestOf());
  const error = await readAnswer(
    { response: () => ({ body: {}, usage: NO_TOKENS }) },
    answer,
  ).then(() => undefined, (thrown) => thrown);
  assert.ok(error instanceof GatewayError);
  assert.equal(error.status, 502);
  assert.equal(error.code, "upstream_garbage");
  settings.keyPool.release(answer.key, { kind: "answered", tokens: 0 });
});

const NO_TOKENS = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 };

Deno.test("readAnswer() scrubs the key from a 2xx body that quotes it, plainly or JSON-escaped", async () => {
  const escaped = KEY_A.replaceAll("-", "\\u002d");
  await using upstream = loopbackUpstream(() =>
    new Response(
      JSON.stringify({
        ...ANSWER,
        choices: [{
          ...ANSWER.choices[0],
          message: { role: "assistant", content: `your key is ${KEY_A}` },
        }],
      }).replace('"chatcmpl-1"', `"${escaped}"`),
      { headers: { "content-type": "application/json" } },
    )
  );
  const settings = settingsFor(upstream.base, [KEY_A]);
  const answer = await sendUpstream(settings, requestOf());
  const { text } = await readAnswer(
    { response: (json) => ({ body: json, usage: NO_TOKENS }) },
    answer,
  );
  assert.ok(!text.includes(KEY_A), text);
  assert.ok(!JSON.stringify(JSON.parse(text)).includes(KEY_A), text);
  assert.match(text, /your key is \[key openai:[0-9a-f]{8}\]/);
  settings.keyPool.release(answer.key, { kind: "answered", tokens: 0 });
});

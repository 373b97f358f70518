import assert from "node:assert/strict";
import { GatewayError } from "../errors.ts";
import { MemoryKeyPool, providerKeyId } from "./key_pool.ts";
import { openai } from "./providers/openai.ts";
import {
  sendUpstream,
  type UpstreamRequest,
  type UpstreamSettings,
} from "./send.ts";

const KEY_A = "sk-pin-a-0123456789abcdefghij";
const KEY_B = "sk-pin-b-0123456789abcdefghij";
const PINNED = providerKeyId("openai", KEY_A);

/** A loopback OpenAI whose answer to each request `answer` decides; it records the key of each. */
function loopback(answer: (key: string, n: number) => Response) {
  const keys: string[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      await request.body?.cancel();
      const key = request.headers.get("authorization")!.replace("Bearer ", "");
      keys.push(key);
      return answer(key, keys.length - 1);
    },
  );
  return {
    keys,
    settings: {
      keyPool: new MemoryKeyPool({ openai: { keys: [KEY_A, KEY_B] } }, {
        defaultCooldownMs: 30_000,
      }),
      baseUrls: {
        openai: `http://127.0.0.1:${server.addr.port}/v1`,
      } as UpstreamSettings["baseUrls"],
      upstreamTimeoutMs: 5_000,
      keyCooldownMs: 30_000,
    } satisfies UpstreamSettings,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

function pinnedRequest(pinWaitMs: number): UpstreamRequest {
  return {
    provider: openai,
    path: "/responses",
    body: { model: "gpt-5.1", input: "next", previous_response_id: "resp_1" },
    estimatedTokens: 10,
    signal: new AbortController().signal,
    requestId: "req-pin",
    callerId: "caller-pin",
    pinnedKeyId: PINNED,
    pinWaitMs,
  };
}

const ok = () => Response.json({ id: "resp_2", usage: {} });
const limited = (seconds: number) =>
  Response.json({ error: { message: "Rate limit reached" } }, {
    status: 429,
    headers: { "retry-after": String(seconds) },
  });

Deno.test("sendUpstream() sends a pinned request only to its key, even when another key is free", async () => {
  await using upstream = loopback(ok);
  for (let call = 0; call < 4; call++) {
    const answer = await sendUpstream(upstream.settings, pinnedRequest(0));
    upstream.settings.keyPool.release(answer.key, {
      kind: "answered",
      tokens: 10,
    });
    await answer.response.body?.cancel();
  }
  assert.deepEqual(upstream.keys, [KEY_A, KEY_A, KEY_A, KEY_A]);
});

Deno.test("sendUpstream() waits for a pinned key that cools down within the call's wait, and never tries another", async () => {
  await using upstream = loopback((_, n) => n === 0 ? limited(1) : ok());
  const started = Date.now();
  const answer = await sendUpstream(upstream.settings, pinnedRequest(3_000));
  await answer.response.body?.cancel();
  assert.ok(Date.now() - started >= 900, "it waited for the cool-down");
  assert.deepEqual(upstream.keys, [KEY_A, KEY_A]);
});

Deno.test("sendUpstream() answers 429 with retry-after when a pinned key cools down past the call's wait, never another key", async () => {
  await using upstream = loopback(() => limited(20));
  await assert.rejects(
    sendUpstream(upstream.settings, pinnedRequest(1_000)),
    (error: unknown) =>
      error instanceof GatewayError && error.status === 429 &&
      error.retryAfterSeconds === 20 &&
      /Rate limit reached/.test(error.message),
  );
  assert.deepEqual(upstream.keys, [KEY_A]);
});

Deno.test("sendUpstream() answers 409 when the pinned key is no longer configured", async () => {
  await using upstream = loopback(ok);
  await assert.rejects(
    sendUpstream(upstream.settings, {
      ...pinnedRequest(1_000),
      pinnedKeyId: providerKeyId("openai", "sk-removed-0123456789abcdefgh"),
    }),
    (error: unknown) =>
      error instanceof GatewayError && error.status === 409 &&
      error.code === "state_key_gone",
  );
  assert.deepEqual(upstream.keys, []);
});

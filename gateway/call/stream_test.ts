import assert from "node:assert/strict";
import type { CallInput } from "../upstream/providers/provider.ts";
import { chatPassthrough } from "../upstream/providers/openai.ts";
import { billableUsage, relayStream } from "./stream.ts";
import type { CatalogEntry } from "../state/catalog.ts";

/** A provider key as long as a real one (short ones are never scrubbed). */
const SECRET = "sk-secret-1-0123456789abcdef";

const NONE = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 };

Deno.test("billableUsage() bills a complete stream as the provider reported it", () => {
  const usage = { inputTokens: 100, outputTokens: 7, cachedInputTokens: 0 };
  assert.deepEqual(billableUsage(usage, 200, 500, 30), {
    usage,
    estimated: [],
  });
});

Deno.test("billableUsage() bills an abandoned stream the prompt's estimate and the output relayed", () => {
  assert.deepEqual(billableUsage(NONE, 499, 500, 30), {
    usage: { inputTokens: 500, outputTokens: 30, cachedInputTokens: 0 },
    estimated: ["input", "output"],
  });
  // The provider's own prompt count wins over the estimate.
  assert.deepEqual(
    billableUsage({ ...NONE, inputTokens: 120, outputTokens: 1 }, 499, 500, 30),
    {
      usage: { inputTokens: 120, outputTokens: 30, cachedInputTokens: 0 },
      estimated: ["output"],
    },
  );
});

Deno.test("billableUsage() charges an upstream that failed before any content only what it reported", () => {
  assert.deepEqual(billableUsage(NONE, 502, 500, 0), {
    usage: NONE,
    estimated: [],
  });
  assert.deepEqual(billableUsage(NONE, 502, 500, 12), {
    usage: { inputTokens: 500, outputTokens: 12, cachedInputTokens: 0 },
    estimated: ["input", "output"],
  });
});

/** A streamed chat call to an OpenAI model, as the relay receives it. */
function streamedChatCall(): CallInput {
  return {
    route: "chat",
    entry: { id: "m", upstream: "m", provider: "openai" } as CatalogEntry,
    body: { messages: [] },
    stream: true,
    maxOutputTokens: 100,
    query: {},
    headers: new Headers(),
  };
}

/** Relays `reads` (each one upstream read) on the OpenAI passthrough and returns the caller's bytes. */
async function relayReads(
  reads: Uint8Array[],
  secret = SECRET,
): Promise<Uint8Array> {
  const call = streamedChatCall();
  const { response, ended } = relayStream({
    route: "chat",
    exchange: chatPassthrough(call),
    upstream: {
      response: new Response(ReadableStream.from(reads)),
      key: { provider: "openai", keyId: "k1", secret },
      abort: new AbortController(),
    },
    idleTimeoutMs: 1_000,
    inputEstimate: 10,
  });
  let ends = 0;
  ended.then(() => ends++);
  const bytes = new Uint8Array(await response.arrayBuffer());
  assert.equal((await ended).status, 200);
  assert.equal(ends, 1);
  return bytes;
}

const chunk = (content: string) =>
  `data: ${
    JSON.stringify({ choices: [{ index: 0, delta: { content } }] })
  }\n\n`;

Deno.test("relayStream() relays a character split across two reads whole", async () => {
  const text = chunk("héllo wörld ") + chunk("👋 done") + "data: [DONE]\n\n";
  const bytes = new TextEncoder().encode(text);
  // Cut inside "é" (two bytes) and inside the emoji (four).
  const e = text.indexOf("é");
  const cutA = new TextEncoder().encode(text.slice(0, e)).length + 1;
  const wave = text.indexOf("👋");
  const cutB = new TextEncoder().encode(text.slice(0, wave)).length + 2;
  const out = await relayReads([
    bytes.slice(0, cutA),
    bytes.slice(cutA, cutB),
    bytes.slice(cutB),
  ]);
  assert.equal(new TextDecoder().decode(out), text);
});

Deno.test("relayStream() names the key instead of relaying its secret, in a read it would pass on as it came", async () => {
  const text = chunk(`the key is ${SECRET}`) + "data: [DONE]\n\n";
  const out = await relayReads([new TextEncoder().encode(text)]);
  assert.equal(
    new TextDecoder().decode(out),
    chunk("the key is [key k1]") + "data: [DONE]\n\n",
  );
});

Deno.test("relayStream() names a key JSON-escaped, cut across two reads, or split across two events", async () => {
  const encode = (text: string) => new TextEncoder().encode(text);
  const escaped = chunk("a " + SECRET).replace("sk-", "sk\\u002d");
  const whole = chunk("b " + SECRET);
  const cut = whole.indexOf(SECRET) + 5;
  const out = await relayReads([
    encode(escaped),
    encode(whole.slice(0, cut)),
    encode(whole.slice(cut)),
    encode(chunk("c " + SECRET.slice(0, 12))),
    encode(chunk(SECRET.slice(12) + " d") + "data: [DONE]\n\n"),
  ]);
  assert.equal(
    new TextDecoder().decode(out),
    chunk("a [key k1]") + chunk("b [key k1]") + chunk("c [key k1]") +
      chunk(" d") + "data: [DONE]\n\n",
  );
});

Deno.test("relayStream() drops the usage chunk the caller did not ask for from a read it otherwise passes on", async () => {
  const usage = `data: ${
    JSON.stringify({
      choices: [],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    })
  }\n\n`;
  const out = await relayReads([
    new TextEncoder().encode(chunk("hi")),
    new TextEncoder().encode(usage + "data: [DONE]\n\n"),
  ]);
  assert.equal(
    new TextDecoder().decode(out),
    chunk("hi") + "data: [DONE]\n\n",
  );
});

Deno.test("relayStream() never rewrites streamed words or tool ids with a key too short to be a real provider's (the README's `sim`)", async () => {
  const toolCall = `data: ${
    JSON.stringify({
      choices: [{
        index: 0,
        delta: {
          tool_calls: [{
            index: 0,
            id: "call_sim_42",
            type: "function",
            function: { name: "simulate", arguments: '{"q":"sim"}' },
          }],
        },
      }],
    })
  }\n\n`;
  const text = chunk("a simple simulation of sim") + toolCall +
    "data: [DONE]\n\n";
  // One read whole, and the same text cut into reads of 7 bytes.
  const bytes = new TextEncoder().encode(text);
  const pieces = Array.from(
    { length: Math.ceil(bytes.length / 7) },
    (_, i) => bytes.slice(i * 7, i * 7 + 7),
  );
  for (const reads of [[bytes], pieces]) {
    const out = await relayReads(reads, "sim");
    assert.equal(new TextDecoder().decode(out), text);
  }
});

Deno.test("relayStream() ends a stream whose event passes the bound with the convention's error event, billed what was relayed", async () => {
  const call = streamedChatCall();
  const encoder = new TextEncoder();
  const piece = encoder.encode("a".repeat(64 * 1024));
  let sent = 0;
  const abort = new AbortController();
  const upstreamBody = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(chunk("hello there, caller ")));
      controller.enqueue(
        encoder.encode('data: {"choices":[{"delta":{"content":"'),
      );
    },
    pull(controller) {
      // Endless: only the bound ends it.
      sent += piece.length;
      controller.enqueue(piece);
    },
  });
  const { response, ended } = relayStream({
    route: "chat",
    exchange: chatPassthrough(call),
    upstream: {
      response: new Response(upstreamBody),
      key: { provider: "openai", keyId: "k1", secret: SECRET },
      abort,
    },
    idleTimeoutMs: 5_000,
    inputEstimate: 10,
  });
  const text = await response.text();
  const end = await ended;
  assert.equal(end.status, 502);
  assert.match(end.error ?? "", /larger than 8388608 characters/);
  assert.match(text, /hello there, caller/);
  assert.match(text, /"error":\{/);
  assert.ok(end.usage.outputTokens > 0, "billed the output relayed");
  assert.equal(end.usage.inputTokens, 10);
  assert.ok(abort.signal.aborted, "the upstream request is cancelled");
  assert.ok(sent < 10 * 1024 * 1024, `read ${sent} bytes`);
});

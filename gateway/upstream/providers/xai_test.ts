import assert from "node:assert/strict";
import type { CallInput } from "./provider.ts";
import { xai } from "./xai.ts";

function chatCall(body: Record<string, unknown>, stream = false): CallInput {
  return {
    route: "chat",
    entry: {
      id: "grok-4",
      provider: "xai",
      upstream: "grok-4-0709",
      maxOutputTokens: 1_000,
    },
    body,
    stream,
    maxOutputTokens: 1_000,
    query: {},
    headers: new Headers(),
  };
}

Deno.test("xai declares its base URL, telemetry name, wire and image rule", () => {
  assert.equal(xai.name, "xai");
  assert.equal(xai.defaultBaseUrl, "https://api.x.ai/v1");
  assert.equal(xai.otelName, "x_ai");
  assert.equal(xai.wire, "openai");
  assert.equal(xai.imageRule, "dearest");
  assert.deepEqual(xai.headers("xai-secret"), {
    authorization: "Bearer xai-secret",
  });
  assert.equal(xai.countTokens, undefined);
});

Deno.test("xai passes a chat call through with the upstream model, its limit capped, and usage asked for on a stream", () => {
  const exchange = xai.exchange(chatCall({
    model: "grok-4",
    messages: [{ role: "user", content: "hi" }],
    max_tokens: 50_000,
    stream: true,
  }, true));
  assert.equal(exchange.path, "/chat/completions");
  assert.deepEqual(exchange.body, {
    model: "grok-4-0709",
    messages: [{ role: "user", content: "hi" }],
    max_tokens: 1_000,
    stream: true,
    stream_options: { include_usage: true },
  });
});

Deno.test("xai bills reasoning reported beside completion_tokens as output", () => {
  const exchange = xai.exchange(chatCall({ model: "grok-4", messages: [] }));
  const upstream = {
    choices: [{ message: { role: "assistant", content: "4" } }],
    usage: {
      prompt_tokens: 11,
      completion_tokens: 1,
      total_tokens: 240,
      completion_tokens_details: { reasoning_tokens: 228 },
    },
  };
  const { body, usage } = exchange.response(upstream);
  assert.equal(body, upstream);
  assert.deepEqual(usage, {
    inputTokens: 11,
    outputTokens: 229,
    cachedInputTokens: 0,
    reasoningTokens: 228,
  });
});

Deno.test("xai reads the message of its error bodies", () => {
  assert.equal(
    xai.errorMessage(JSON.stringify({ error: "Incorrect API key provided" })),
    "Incorrect API key provided",
  );
  assert.equal(
    xai.errorMessage('{"error":{"message":"Model not found"}}'),
    "Model not found",
  );
});

import assert from "node:assert/strict";
import { openrouter } from "./openrouter.ts";
import type { CallInput } from "./provider.ts";

function chatCall(body: Record<string, unknown>, stream = false): CallInput {
  return {
    route: "chat",
    entry: {
      id: "claude-via-openrouter",
      provider: "openrouter",
      upstream: "anthropic/claude-sonnet-4.5",
      maxOutputTokens: 8_000,
    },
    body,
    stream,
    maxOutputTokens: 8_000,
    query: {},
    headers: new Headers(),
  };
}

Deno.test("openrouter declares its base URL, its own telemetry name and the app-ranking headers", () => {
  assert.equal(openrouter.name, "openrouter");
  assert.equal(openrouter.defaultBaseUrl, "https://openrouter.ai/api/v1");
  assert.equal(openrouter.otelName, "openrouter");
  assert.equal(openrouter.wire, "openai");
  assert.equal(openrouter.imageRule, "dearest");
  assert.deepEqual(openrouter.headers("sk-or-1"), {
    authorization: "Bearer sk-or-1",
    "http-referer": "https://jsr.io/@org/mcpkit",
    "x-title": "mcpkit gateway",
  });
});

Deno.test("openrouter bills cache writes at the 1-hour price when every cache_control asks for it", () => {
  const oneHour = { type: "ephemeral", ttl: "1h" };
  const exchange = openrouter.exchange(chatCall({
    model: "claude-via-openrouter",
    messages: [{
      role: "user",
      content: [{ type: "text", text: "long", cache_control: oneHour }],
    }],
  }));
  assert.equal(
    (exchange.body as { model: string }).model,
    "anthropic/claude-sonnet-4.5",
  );
  const { usage } = exchange.response({
    usage: {
      prompt_tokens: 4_000,
      completion_tokens: 100,
      prompt_tokens_details: {
        cached_tokens: 1_000,
        cache_write_tokens: 2_000,
      },
    },
  });
  assert.deepEqual(usage, {
    inputTokens: 4_000,
    outputTokens: 100,
    cachedInputTokens: 1_000,
    cacheWrite1hTokens: 2_000,
  });
});

Deno.test("openrouter's stream relay drops the usage-only chunk the caller did not ask for, but bills it", () => {
  const relay = openrouter.exchange(chatCall({
    model: "claude-via-openrouter",
    messages: [],
    stream: true,
  }, true)).relay();
  const content = { choices: [{ delta: { content: "hi" } }] };
  assert.equal(
    relay.event({ data: JSON.stringify(content) }, content),
    `data: ${JSON.stringify(content)}\n\n`,
  );
  const usageChunk = {
    choices: [],
    usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 },
  };
  assert.equal(
    relay.event({ data: JSON.stringify(usageChunk) }, usageChunk),
    "",
  );
  assert.equal(relay.event({ data: "[DONE]" }, "[DONE]"), "data: [DONE]\n\n");
  assert.equal(relay.end(), "");
  assert.equal(relay.failure, undefined);
  assert.deepEqual(relay.usage, {
    inputTokens: 7,
    outputTokens: 2,
    cachedInputTokens: 0,
  });
});

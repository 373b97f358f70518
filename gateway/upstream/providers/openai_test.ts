import assert from "node:assert/strict";
import { chatUsageOf, openai, usageFromResponses } from "./openai.ts";

Deno.test("chatUsageOf() reads reasoning inside completion_tokens, or beside them for xAI", () => {
  const usage = {
    prompt_tokens: 11,
    completion_tokens: 1,
    total_tokens: 240,
    completion_tokens_details: { reasoning_tokens: 228 },
  };
  const xai = {
    inputTokens: 11,
    outputTokens: 229,
    cachedInputTokens: 0,
    reasoningTokens: 228,
  };
  assert.deepEqual(
    chatUsageOf(usage, { reasoningOutsideCompletion: true }),
    xai,
  );
  // The same counts told as OpenAI: the total still holds the reasoning, so it is output.
  assert.deepEqual(chatUsageOf(usage), { ...xai, reasoningTokens: 1 });
  assert.deepEqual(chatUsageOf({ ...usage, completion_tokens: 229 }), xai);
});

Deno.test("chatUsageOf() reads OpenRouter's cache writes as their own class, at the lifetime asked for", () => {
  const usage = {
    prompt_tokens: 4_000,
    completion_tokens: 100,
    prompt_tokens_details: { cached_tokens: 1_000, cache_write_tokens: 2_000 },
  };
  const base = {
    inputTokens: 4_000,
    outputTokens: 100,
    cachedInputTokens: 1_000,
  };
  assert.deepEqual(chatUsageOf(usage), { ...base, cacheWriteTokens: 2_000 });
  assert.deepEqual(chatUsageOf(usage, { cacheWriteTtl: "1h" }), {
    ...base,
    cacheWrite1hTokens: 2_000,
  });
  // Reads and writes above the prompt are capped at it.
  assert.deepEqual(chatUsageOf({ ...usage, prompt_tokens: 2_500 }), {
    ...base,
    inputTokens: 2_500,
    cacheWriteTokens: 1_500,
  });
});

Deno.test("usageFromResponses() bills a total above input and output as output", () => {
  assert.deepEqual(
    usageFromResponses({
      input_tokens: 2_000,
      input_tokens_details: { cached_tokens: 1_536 },
      output_tokens: 300,
      output_tokens_details: { reasoning_tokens: 200 },
      total_tokens: 2_400,
    }),
    {
      inputTokens: 2_000,
      outputTokens: 400,
      cachedInputTokens: 1_536,
      reasoningTokens: 200,
    },
  );
});

Deno.test("a Responses stream bills the web searches it announced, and the terminal response's when it lists more", () => {
  const relay = openai.exchange({
    route: "responses",
    entry: {
      id: "gpt-5.1",
      provider: "openai",
      upstream: "gpt-5.1",
      maxOutputTokens: 100,
    },
    body: { model: "gpt-5.1", input: "hi", stream: true },
    stream: true,
    maxOutputTokens: 100,
    query: {},
    headers: new Headers(),
  }).relay();
  const send = (event: string, data: unknown) =>
    relay.event({ event, data: JSON.stringify(data) }, data);
  const search = (id: string) => ({ type: "web_search_call", id });
  send("response.output_item.added", { item: search("ws_1") });
  send("response.output_item.done", { item: search("ws_1") });
  send("response.output_item.added", { item: search("ws_2") });
  // The caller leaves here: two searches ran.
  assert.equal(relay.usage.webSearches, 2);
  send("response.completed", {
    response: {
      output: [search("ws_1"), search("ws_2"), search("ws_3")],
      usage: { input_tokens: 5, output_tokens: 1, total_tokens: 6 },
    },
  });
  assert.equal(relay.usage.webSearches, 3);
});

Deno.test("chatUsageOf() reads a router's usage.cost where the provider reports one, and refuses an absurd one", () => {
  const usage = { prompt_tokens: 1, completion_tokens: 1, cost: 0.25 };
  assert.equal(chatUsageOf(usage).reportedCostUsd, undefined);
  assert.equal(chatUsageOf(usage, { reportsCost: true }).reportedCostUsd, 0.25);
  assert.throws(
    () => chatUsageOf({ ...usage, cost: 1e9 }, { reportsCost: true }),
    /usage\.cost/,
  );
});

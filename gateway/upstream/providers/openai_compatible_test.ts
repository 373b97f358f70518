import assert from "node:assert/strict";
import { openAICompatible } from "./openai_compatible.ts";
import type { CallInput } from "./provider.ts";

const call: CallInput = {
  route: "chat",
  entry: {
    id: "acme-large",
    provider: "acme",
    upstream: "acme-large-2",
    maxOutputTokens: 100,
  },
  body: { model: "acme-large", messages: [{ role: "user", content: "hi" }] },
  stream: false,
  maxOutputTokens: 100,
  query: {},
  headers: new Headers(),
};

Deno.test("openAICompatible() fills the defaults: its name as telemetry name, the dearest image rule, a Bearer key", () => {
  const acme = openAICompatible({
    name: "acme",
    defaultBaseUrl: "https://api.acme.example/v1",
  });
  assert.equal(acme.name, "acme");
  assert.equal(acme.defaultBaseUrl, "https://api.acme.example/v1");
  assert.equal(acme.otelName, "acme");
  assert.equal(acme.wire, "openai");
  assert.equal(acme.imageRule, "dearest");
  assert.deepEqual(acme.headers("sk-acme"), {
    authorization: "Bearer sk-acme",
  });
  assert.equal(
    acme.errorMessage('{"error":{"message":"Slow down"}}'),
    "Slow down",
  );
});

Deno.test("openAICompatible() keeps the key's header over a fixed header of the same name", () => {
  const acme = openAICompatible({
    name: "acme",
    defaultBaseUrl: "https://api.acme.example/v1",
    otelName: "acme.ai",
    imageRule: "openai",
    headers: { authorization: "Bearer wrong", "x-team": "blue" },
  });
  assert.equal(acme.otelName, "acme.ai");
  assert.equal(acme.imageRule, "openai");
  assert.deepEqual(acme.headers("sk-acme"), {
    authorization: "Bearer sk-acme",
    "x-team": "blue",
  });
});

Deno.test("openAICompatible() passes the chat call through, reasoning read inside or beside completion_tokens as asked", () => {
  const usage = {
    prompt_tokens: 10,
    completion_tokens: 5,
    total_tokens: 35,
    completion_tokens_details: { reasoning_tokens: 20 },
  };
  const inside = openAICompatible({
    name: "acme",
    defaultBaseUrl: "https://api.acme.example/v1",
  }).exchange(call);
  assert.equal(inside.path, "/chat/completions");
  // The caller set no limit: the catalog's goes in the default field.
  assert.deepEqual(inside.body, {
    ...call.body,
    model: "acme-large-2",
    max_tokens: call.maxOutputTokens,
  });
  // Inside: the total's 20 beyond prompt and completion are still output.
  assert.deepEqual(inside.response({ usage }).usage, {
    inputTokens: 10,
    outputTokens: 25,
    cachedInputTokens: 0,
    reasoningTokens: 5,
  });
  const beside = openAICompatible({
    name: "acme",
    defaultBaseUrl: "https://api.acme.example/v1",
    reasoningOutsideCompletion: true,
  }).exchange(call);
  assert.deepEqual(beside.response({ usage }).usage, {
    inputTokens: 10,
    outputTokens: 25,
    cachedInputTokens: 0,
    reasoningTokens: 20,
  });
});

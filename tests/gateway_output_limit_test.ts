/**
 * Every call upstream carries an output limit no larger than the catalog's:
 * a passthrough call without one is sent the catalog's `maxOutputTokens` in
 * the provider's own field, so the provider's maximum never bounds what is
 * generated (and billed) beyond the hold. Gemini's snake_case
 * `generation_config` is read like `generationConfig`: its
 * `candidate_count` is held, not only its camelCase spelling. Against a
 * loopback provider that generates as much as a request lets it, through
 * the official SDKs.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { GoogleGenAI } from "@google/genai";
import { startHarness } from "./_gateway_harness.ts";
import { startBillingUpstream } from "./_billing_upstream.ts";
import { model } from "./_gateway_e2e.ts";

const HELLO = [{ role: "user" as const, content: "hello" }];

Deno.test("a passthrough call without an output limit is sent the catalog's, in each provider's field", async () => {
  await using upstream = startBillingUpstream();
  await using h = await startHarness({
    env: {
      OPENAI_BASE_URL: upstream.base,
      XAI_BASE_URL: upstream.base,
      OPENROUTER_BASE_URL: upstream.base,
      GEMINI_BASE_URL: upstream.base,
    },
  });
  const client = new OpenAI({
    baseURL: `${h.url}/v1`,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
  const chats: [string, string][] = [
    ["gpt-5.1", "max_completion_tokens"],
    ["grok-4-1-fast", "max_completion_tokens"],
    ["z-ai/glm-4.5v", "max_tokens"],
  ];
  for (const [id, field] of chats) {
    await client.chat.completions.create({ model: id, messages: HELLO });
    const sent = upstream.received.at(-1)!.body;
    assert.equal(sent[field], model(id).maxOutputTokens, `${id}: ${field}`);
  }
  const response = await client.responses.create({
    model: "gpt-4o-mini",
    input: "hello",
  });
  assert.equal(
    response.usage?.output_tokens,
    model("gpt-4o-mini").maxOutputTokens,
  );
  assert.equal(
    upstream.received.at(-1)!.body.max_output_tokens,
    model("gpt-4o-mini").maxOutputTokens,
  );
  const gemini = new GoogleGenAI({
    apiKey: h.caller.key,
    httpOptions: { baseUrl: h.url },
  });
  await gemini.models.generateContent({
    model: "gemini-2.5-computer-use-preview",
    contents: "hello",
  });
  const config = upstream.received.at(-1)!.body.generationConfig as Record<
    string,
    unknown
  >;
  assert.equal(
    config.maxOutputTokens,
    model("gemini-2.5-computer-use-preview").maxOutputTokens,
  );
});

Deno.test("Gemini's snake_case generation_config is held and sent like generationConfig", async () => {
  await using upstream = startBillingUpstream();
  await using h = await startHarness({
    env: { GEMINI_BASE_URL: upstream.base },
    credits: 0.01,
  });
  const path = "/v1beta/models/gemini-2.5-computer-use-preview:generateContent";
  const contents = [{ role: "user", parts: [{ text: "hello" }] }];
  // Eight candidates of 400 tokens at $10 per million: $0.032, above $0.01.
  const eight = await h.post(path, {
    contents,
    generation_config: { candidate_count: 8, max_output_tokens: 400 },
  });
  assert.equal(eight.status, 402, await eight.text());
  assert.equal(upstream.received.length, 0);
  const one = await h.post(path, {
    contents,
    generation_config: { candidate_count: 1, max_output_tokens: 400 },
  });
  assert.equal(one.status, 200, await one.text());
  const sent = upstream.received[0].body;
  assert.equal(sent.generation_config, undefined);
  assert.deepEqual(sent.generationConfig, {
    candidateCount: 1,
    maxOutputTokens: 400,
  });
  const both = await h.post(path, {
    contents,
    generationConfig: { candidateCount: 1 },
    generation_config: { candidate_count: 8 },
  });
  assert.equal(both.status, 400);
  const { error } = await both.json();
  assert.match(error.message, /generation_config/);
});

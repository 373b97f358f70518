import assert from "node:assert/strict";
import type { ChatCompletionCreateParamsBase } from "openai/resources/chat/completions";
import { CHAT_FIELDS, checkChatFields } from "./_chat_fields.ts";
import { chatRequestSchema, TranslationError } from "./chat_types.ts";

/**
 * Every field of the OpenAI SDK's chat request, checked by the compiler: a
 * field the SDK adds on upgrade fails type-checking here until the table
 * decides what each translator does with it.
 */
const SDK_FIELDS: Record<keyof ChatCompletionCreateParamsBase, true> = {
  messages: true,
  model: true,
  audio: true,
  frequency_penalty: true,
  function_call: true,
  functions: true,
  logit_bias: true,
  logprobs: true,
  max_completion_tokens: true,
  max_tokens: true,
  metadata: true,
  modalities: true,
  moderation: true,
  n: true,
  parallel_tool_calls: true,
  prediction: true,
  presence_penalty: true,
  prompt_cache_key: true,
  prompt_cache_options: true,
  prompt_cache_retention: true,
  reasoning_effort: true,
  response_format: true,
  safety_identifier: true,
  seed: true,
  service_tier: true,
  stop: true,
  store: true,
  stream: true,
  stream_options: true,
  temperature: true,
  tool_choice: true,
  tools: true,
  top_logprobs: true,
  top_p: true,
  user: true,
  verbosity: true,
  web_search_options: true,
};

Deno.test("CHAT_FIELDS decides every chat request field the OpenAI SDK can send, for both translators", () => {
  for (const field of Object.keys(SDK_FIELDS)) {
    const rules = CHAT_FIELDS[field];
    assert.ok(rules, `"${field}" has no rule`);
    for (const rule of [rules.anthropic, rules.gemini]) {
      const reason = rule.kind === "translated" ? rule.how : rule.why;
      assert.ok(reason.trim() !== "", `"${field}" says how or why`);
    }
  }
  assert.deepEqual(
    Object.keys(CHAT_FIELDS).filter((field) => !(field in SDK_FIELDS)),
    [],
  );
});

Deno.test("checkChatFields() treats null as absent and refuses unknown fields naming them", () => {
  const body = chatRequestSchema.parse({
    model: "m",
    messages: [{ role: "user", content: "Hi" }],
    seed: null,
    logit_bias: null,
    stream_options: null,
  });
  checkChatFields(body, "anthropic");
  const unknown = chatRequestSchema.parse({
    model: "m",
    messages: [{ role: "user", content: "Hi" }],
    thinking: { type: "enabled", budget_tokens: 2048 },
  });
  for (const target of ["anthropic", "gemini"] as const) {
    assert.throws(
      () => checkChatFields(unknown, target),
      (error: unknown) =>
        error instanceof TranslationError && error.param === "thinking" &&
        /does not translate it/.test(error.message),
    );
  }
});

Deno.test("docs/gateway.md's translated-fields table names every field CHAT_FIELDS decides", async () => {
  const docs = await Deno.readTextFile(
    new URL("../../../docs/gateway.md", import.meta.url),
  );
  const start = docs.indexOf("### Translated chat fields");
  assert.ok(start >= 0, "the section exists");
  const section = docs.slice(start, docs.indexOf("\n## ", start));
  for (const field of Object.keys(CHAT_FIELDS)) {
    assert.ok(section.includes(`\`${field}\``), `"${field}" is in the docs`);
  }
});

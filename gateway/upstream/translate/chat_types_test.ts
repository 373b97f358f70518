import assert from "node:assert/strict";
import type OpenAI from "openai";
import { fromAnthropicResponse } from "./chat_anthropic_response.ts";
import { AnthropicChatStream } from "./chat_anthropic_stream.ts";
import { fromGeminiResponse } from "./chat_gemini_response.ts";
import { chatRequestSchema, TranslationError } from "./chat_types.ts";
import {
  chatError,
  chatUsage,
  isChatStreamError,
  usageFromChat,
} from "./chat_response_types.ts";
import { GatewayError } from "../../errors.ts";

Deno.test("chatRequestSchema accepts a full OpenAI SDK request and keeps fields it does not know", () => {
  const body: OpenAI.ChatCompletionCreateParamsStreaming & {
    metadata: Record<string, string>;
  } = {
    model: "claude-sonnet-4-5",
    messages: [
      { role: "developer", content: "Be careful." },
      { role: "system", content: [{ type: "text", text: "You are helpful." }] },
      {
        role: "user",
        name: "ada",
        content: [
          { type: "text", text: "Describe" },
          {
            type: "image_url",
            image_url: { url: "https://example.com/a.png", detail: "low" },
          },
          { type: "input_audio", input_audio: { data: "AAAA", format: "mp3" } },
          { type: "file", file: { file_id: "file-abc" } },
        ],
      },
      {
        role: "assistant",
        content: null,
        refusal: null,
        tool_calls: [{
          id: "call_1",
          type: "function",
          function: { name: "look", arguments: "{}" },
        }],
      },
      {
        role: "tool",
        tool_call_id: "call_1",
        content: [{ type: "text", text: "done" }],
      },
    ],
    stream: true,
    stream_options: { include_usage: true },
    max_completion_tokens: 512,
    temperature: 0.2,
    top_p: null,
    stop: ["END"],
    tools: [{
      type: "function",
      function: {
        name: "look",
        parameters: { type: "object", properties: {} },
        strict: true,
      },
    }],
    tool_choice: { type: "function", function: { name: "look" } },
    parallel_tool_calls: false,
    response_format: { type: "json_object" },
    seed: 1,
    user: "u1",
    logit_bias: { "50256": -100 },
    metadata: { run: "7" },
  };
  const parsed = chatRequestSchema.parse(body);
  assert.deepEqual(parsed, body);
});

Deno.test("chatRequestSchema accepts OpenAI's custom tools and allowed_tools and custom tool choices, for passthrough", () => {
  const body = {
    model: "gpt-5.1",
    messages: [{ role: "user", content: "Hi" }],
    tools: [
      { type: "function", function: { name: "look" } },
      {
        type: "custom",
        custom: { name: "grep", format: { type: "text" } },
      },
    ],
    tool_choice: {
      type: "allowed_tools",
      allowed_tools: {
        mode: "auto",
        tools: [{ type: "function", function: { name: "look" } }],
      },
    },
    reasoning_effort: "low",
    safety_identifier: "hash",
  };
  assert.deepEqual(chatRequestSchema.parse(body), body);
  const custom = {
    ...body,
    tool_choice: { type: "custom", custom: { name: "grep" } },
  };
  assert.deepEqual(chatRequestSchema.parse(custom), custom);
});

Deno.test("chatRequestSchema rejects a missing model, empty messages, unknown roles and wrong types", () => {
  const invalid: unknown[] = [
    { messages: [{ role: "user", content: "Hi" }] },
    { model: "m", messages: [] },
    { model: "m", messages: [{ role: "robot", content: "Hi" }] },
    { model: "m", messages: [{ role: "user", content: 42 }] },
    {
      model: "m",
      messages: [{ role: "user", content: [{ type: "video", video: {} }] }],
    },
    { model: "m", messages: [{ role: "tool", content: "x" }] },
    { model: "m", messages: [{ role: "user", content: "Hi" }], max_tokens: -1 },
    { model: "m", messages: [{ role: "user", content: "Hi" }], stream: "yes" },
    {
      model: "m",
      messages: [{ role: "user", content: "Hi" }],
      tool_choice: "sometimes",
    },
  ];
  for (const body of invalid) {
    assert.equal(
      chatRequestSchema.safeParse(body).success,
      false,
      JSON.stringify(body),
    );
  }
});

Deno.test("usageFromChat() and chatUsage() convert between the chat and gateway usage shapes", () => {
  const chat = {
    prompt_tokens: 120,
    completion_tokens: 30,
    total_tokens: 150,
    prompt_tokens_details: { cached_tokens: 64 },
  };
  const usage = usageFromChat(chat);
  assert.deepEqual(usage, {
    inputTokens: 120,
    outputTokens: 30,
    cachedInputTokens: 64,
  });
  assert.deepEqual(chatUsage(usage), chat);
  assert.deepEqual(
    usageFromChat({ prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 }),
    {
      inputTokens: 5,
      outputTokens: 1,
      cachedInputTokens: 0,
    },
  );
  assert.deepEqual(usageFromChat(null), {
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
  });
});

Deno.test("isChatStreamError() tells the error event from a chunk", () => {
  assert.equal(isChatStreamError(chatError("Boom", "server_error")), true);
  const stream = new AnthropicChatStream({ model: "m", includeUsage: false });
  const [chunk] = stream.push({
    data:
      '{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":1}}}',
  });
  assert.equal(isChatStreamError(chunk), false);
});

Deno.test("TranslationError is a 400 gateway error naming the request field", () => {
  const error = new TranslationError(
    "Cannot send audio",
    "messages[0].content[1]",
  );
  assert.ok(error instanceof GatewayError);
  assert.equal(error.status, 400);
  assert.equal(error.param, "messages[0].content[1]");
  assert.equal(error.name, "TranslationError");
});

Deno.test("translated completions and chunks satisfy the OpenAI SDK's own types", () => {
  // The assignments are the check: they fail to type-check if a shape drifts from the SDK.
  const fromAnthropic: OpenAI.ChatCompletion = fromAnthropicResponse({
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: "claude-haiku-4-5",
    content: [{ type: "text", text: "Hi" }],
    stop_reason: "end_turn",
    usage: { input_tokens: 3, output_tokens: 1 },
  }, "claude-haiku-4-5");
  const fromGemini: OpenAI.ChatCompletion = fromGeminiResponse({
    candidates: [{
      content: { parts: [{ text: "Hi" }] },
      finishReason: "STOP",
    }],
  }, "gemini-2.5-pro");
  const stream = new AnthropicChatStream({ model: "m", includeUsage: true });
  const [first] = stream.push({
    data:
      '{"type":"message_start","message":{"id":"msg_2","usage":{"input_tokens":1}}}',
  });
  assert.ok(!isChatStreamError(first));
  const chunk: OpenAI.ChatCompletionChunk = first;
  assert.equal(fromAnthropic.choices[0].message.content, "Hi");
  assert.equal(fromGemini.choices[0].message.content, "Hi");
  assert.equal(chunk.choices[0].delta.role, "assistant");
});

import assert from "node:assert/strict";
import {
  estimateInputTokens,
  MEDIA_TOKENS,
  outputTextTokens,
  REFERENCED_CONTEXT_TOKENS,
  textTokens,
} from "./estimate.ts";

Deno.test("textTokens() holds a third of a token per ASCII character and more than one per CJK character or emoji", () => {
  assert.equal(textTokens("hello world!"), 4);
  // Nine CJK characters are about nine tokens; the estimate holds 13.5.
  assert.equal(textTokens("你好世界这是一个测"), 14);
  assert.ok(textTokens("日本語のテキスト") >= "日本語のテキスト".length);
  assert.equal(textTokens("😀"), 2);
  assert.equal(textTokens(""), 0);
});

Deno.test("estimateInputTokens() holds a fixed amount per media part, whatever its base64 size", () => {
  const image = "A".repeat(3_000_000);
  const chat = {
    model: "gpt-4o",
    messages: [{
      role: "user",
      content: [
        { type: "text", text: "What is this?" },
        {
          type: "image_url",
          image_url: { url: `data:image/png;base64,${image}` },
        },
      ],
    }],
  };
  const estimate = estimateInputTokens(chat);
  assert.ok(estimate >= MEDIA_TOKENS && estimate < MEDIA_TOKENS + 100);
  const gemini = {
    contents: [{
      parts: [{ inlineData: { mimeType: "image/png", data: image } }, {
        text: "hi",
      }],
    }],
  };
  assert.ok(estimateInputTokens(gemini) >= MEDIA_TOKENS);
  const anthropic = {
    messages: [{
      role: "user",
      content: [{
        type: "image",
        source: { type: "url", url: "https://x/y.png" },
      }],
    }],
  };
  assert.ok(estimateInputTokens(anthropic) >= MEDIA_TOKENS);
});

Deno.test("estimateInputTokens() holds referenced context a body only points at", () => {
  assert.ok(
    estimateInputTokens({
      model: "gpt-5.1",
      input: "go on",
      previous_response_id: "resp_1",
    }) >=
      REFERENCED_CONTEXT_TOKENS,
  );
  assert.ok(
    estimateInputTokens({
      contents: [],
      cachedContent: "cachedContents/abc",
    }) >=
      REFERENCED_CONTEXT_TOKENS,
  );
  assert.ok(
    estimateInputTokens({ input: "go on", previous_response_id: null }) < 100,
  );
});

Deno.test("estimateInputTokens() holds at least a token per CJK character of a prompt", () => {
  const prompt = "请把这段话翻译成英文".repeat(100);
  const estimate = estimateInputTokens({
    model: "gpt-4o",
    messages: [{ role: "user", content: prompt }],
  });
  assert.ok(estimate >= prompt.length, `${estimate} < ${prompt.length}`);
});

Deno.test("estimateInputTokens() walks a body nested 100 000 levels deep", () => {
  let deep: unknown = "x";
  for (let i = 0; i < 100_000; i++) deep = { a: deep };
  assert.equal(estimateInputTokens(deep), 100_000 + 1);
});

Deno.test("outputTextTokens() counts the answer text of a streamed event, not its labels", () => {
  const chunk = {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    choices: [{
      index: 0,
      delta: { role: "assistant", content: "hello there friend" },
      finish_reason: null,
    }],
  };
  assert.equal(outputTextTokens(chunk), textTokens("hello there friend"));
  assert.equal(
    outputTextTokens({
      type: "content_block_delta",
      delta: { type: "input_json_delta", partial_json: '{"a":1}' },
    }),
    textTokens('{"a":1}'),
  );
  assert.equal(outputTextTokens({ usage: { prompt_tokens: 5 } }), 0);
});

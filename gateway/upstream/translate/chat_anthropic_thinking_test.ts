import assert from "node:assert/strict";
import fc from "fast-check";
import { toAnthropicRequest } from "./chat_anthropic.ts";
import { fromAnthropicResponse } from "./chat_anthropic_response.ts";
import { AnthropicChatStream } from "./chat_anthropic_stream.ts";
import { withThinking } from "./_anthropic_thinking.ts";
import {
  type ChatReasoningDetail,
  type ChatRequest,
  type ChatToolCall,
  TranslationError,
} from "./chat_types.ts";
import type { ChatCompletionChunk } from "./chat_response_types.ts";
import type { AnthropicRequestBlock } from "./chat_anthropic.ts";

type Block =
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string }
  | { type: "text"; text: string }
  | {
    type: "tool_use";
    id: string;
    name: string;
    input: Record<string, unknown>;
  };

const word = fc.string({ minLength: 1, maxLength: 12 });
const thinkingBlock = fc.oneof(
  fc.record({
    type: fc.constant("thinking" as const),
    thinking: fc.string({ maxLength: 40 }),
    signature: word,
  }, { noNullPrototype: true }),
  fc.record(
    { type: fc.constant("redacted_thinking" as const), data: word },
    { noNullPrototype: true },
  ),
);

/**
 * An answer as a model that thinks between tool calls gives it: thinking
 * anywhere, one text block (chat joins texts), then its tool calls.
 */
const answer = fc.record({
  text: fc.option(word, { nil: undefined }),
  tools: fc.array(
    fc.dictionary(word, fc.integer(), { noNullPrototype: true }),
    { maxLength: 4 },
  ),
  thinking: fc.array(fc.tuple(thinkingBlock, fc.nat()), { maxLength: 5 }),
}).map(({ text, tools, thinking }) => {
  const blocks: Block[] = [
    ...(text === undefined ? [] : [{ type: "text" as const, text }]),
    ...tools.map((input, k) => ({
      type: "tool_use" as const,
      id: `toolu_${k}`,
      name: `tool_${k}`,
      input,
    })),
  ];
  for (const [block, at] of thinking) {
    blocks.splice(at % (blocks.length + 1), 0, block);
  }
  return blocks;
}).filter((blocks) => blocks.length > 0);

function followUp(message: {
  content: string | null;
  tool_calls?: ChatToolCall[];
  reasoning_details?: ChatReasoningDetail[];
}): ChatRequest {
  return {
    model: "claude-sonnet-5-5",
    messages: [
      { role: "user", content: "go" },
      { role: "assistant", ...message },
      ...(message.tool_calls ?? []).map((call) => ({
        role: "tool" as const,
        tool_call_id: call.id,
        content: "done",
      })),
    ],
    ...(message.tool_calls
      ? {
        tools: message.tool_calls.map((call) => ({
          type: "function" as const,
          function: { name: call.function.name },
        })),
      }
      : {}),
  };
}

function assistantTurn(chat: ChatRequest): AnthropicRequestBlock[] {
  const turn = toAnthropicRequest(chat, "claude-sonnet-5-5", 1024).messages[1];
  assert.equal(turn.role, "assistant");
  return typeof turn.content === "string"
    ? [{ type: "text", text: turn.content }]
    : turn.content;
}

/** Anthropic's stream of `blocks`, as its SSE events. */
function streamOf(blocks: Block[]): { event: string; data: string }[] {
  const events = [{
    type: "message_start",
    message: { id: "msg_1", usage: { input_tokens: 3, output_tokens: 1 } },
  }] as Record<string, unknown>[];
  blocks.forEach((block, index) => {
    if (block.type === "thinking") {
      events.push(
        {
          type: "content_block_start",
          index,
          content_block: { type: "thinking", thinking: "" },
        },
        // The text arrives in two pieces, the signature last.
        ...[block.thinking.slice(0, 3), block.thinking.slice(3)].filter((
          piece,
        ) => piece).map((thinking) => ({
          type: "content_block_delta",
          index,
          delta: { type: "thinking_delta", thinking },
        })),
        {
          type: "content_block_delta",
          index,
          delta: { type: "signature_delta", signature: block.signature },
        },
      );
    } else if (block.type === "redacted_thinking") {
      events.push({ type: "content_block_start", index, content_block: block });
    } else if (block.type === "text") {
      events.push(
        {
          type: "content_block_start",
          index,
          content_block: { type: "text", text: "" },
        },
        {
          type: "content_block_delta",
          index,
          delta: { type: "text_delta", text: block.text },
        },
      );
    } else {
      events.push(
        {
          type: "content_block_start",
          index,
          content_block: {
            type: "tool_use",
            id: block.id,
            name: block.name,
            input: {},
          },
        },
        {
          type: "content_block_delta",
          index,
          delta: {
            type: "input_json_delta",
            partial_json: JSON.stringify(block.input),
          },
        },
      );
    }
    events.push({ type: "content_block_stop", index });
  });
  events.push(
    {
      type: "message_delta",
      delta: { stop_reason: "tool_use" },
      usage: { output_tokens: 9 },
    },
    { type: "message_stop" },
  );
  return events.map((data) => ({
    event: String(data.type),
    data: JSON.stringify(data),
  }));
}

/** What a chat client keeps of a stream: content, tool calls, and reasoning pieces joined by index. */
function accumulate(chunks: ChatCompletionChunk[]) {
  let content: string | null = null;
  const calls: ChatToolCall[] = [];
  const reasoning = new Map<number, ChatReasoningDetail>();
  for (const chunk of chunks) {
    const delta = chunk.choices[0]?.delta;
    if (!delta) continue;
    if (delta.content) content = (content ?? "") + delta.content;
    for (const call of delta.tool_calls ?? []) {
      calls[call.index] ??= {
        id: call.id!,
        type: "function",
        function: { name: call.function.name!, arguments: "" },
      };
      calls[call.index].function.arguments += call.function.arguments;
    }
    for (const piece of delta.reasoning_details ?? []) {
      const held = reasoning.get(piece.index!);
      if (held?.type === "reasoning.text" && piece.type === "reasoning.text") {
        held.text += piece.text;
        if (piece.signature) held.signature = piece.signature;
      } else reasoning.set(piece.index!, { ...piece });
    }
  }
  return {
    content,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
    ...(reasoning.size > 0
      ? { reasoning_details: [...reasoning.values()] }
      : {}),
  };
}

Deno.test("thinking between tool calls survives a whole answer translated to chat and sent back: the same blocks in the same order", () => {
  fc.assert(
    fc.property(answer, (blocks) => {
      const completion = fromAnthropicResponse({
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-5-5",
        content: blocks,
        stop_reason: "tool_use",
        usage: { input_tokens: 1, output_tokens: 1 },
      }, "claude-sonnet-5-5");
      const message = completion.choices[0].message;
      assert.deepEqual(assistantTurn(followUp(message)), blocks);
    }),
  );
});

Deno.test("thinking streamed as reasoning_details pieces, joined by index as a client keeps them, goes back as the same blocks", () => {
  fc.assert(
    fc.property(answer, (blocks) => {
      const stream = new AnthropicChatStream({
        model: "claude-sonnet-5-5",
        includeUsage: false,
      });
      const chunks = streamOf(blocks).flatMap((event) => stream.push(event));
      stream.finish();
      const message = accumulate(chunks as ChatCompletionChunk[]);
      assert.deepEqual(assistantTurn(followUp(message)), blocks);
    }),
  );
});

Deno.test("withThinking() leaves out another provider's reasoning and summaries, and refuses readable thinking without its signature", () => {
  const tool = { type: "tool_use", id: "t", name: "f", input: {} } as const;
  assert.deepEqual(
    withThinking([tool], [
      { type: "reasoning.summary", summary: "s", index: 0 },
      {
        type: "reasoning.encrypted",
        data: "gAAA",
        format: "openai-responses-v1",
        index: 0,
      },
      { type: "reasoning.encrypted", data: "x", index: 1 },
    ], "messages[1].reasoning_details"),
    [tool, { type: "redacted_thinking", data: "x" }],
  );
  assert.throws(
    () =>
      withThinking(
        [],
        [{ type: "reasoning.text", text: "hm" }],
        "messages[1].reasoning_details",
      ),
    (error: unknown) =>
      error instanceof TranslationError &&
      error.param === "messages[1].reasoning_details[0].signature",
  );
});

Deno.test("toAnthropicRequest() refuses a forced tool choice and thinking off where the model's catalog entry says it refuses them, naming the rule", () => {
  const tools = [{ type: "function" as const, function: { name: "click" } }];
  const chat = (extra: Partial<ChatRequest>): ChatRequest => ({
    model: "claude-sonnet-5-5",
    messages: [{ role: "user", content: "go" }],
    tools,
    ...extra,
  });
  const strict = {
    id: "claude-sonnet-5-5",
    features: { forcedToolChoice: false, disabledThinking: false },
  };
  const refusal = (
    extra: Partial<ChatRequest>,
    param: string,
    pattern: RegExp,
  ) =>
    assert.throws(
      () => toAnthropicRequest(chat(extra), "claude-sonnet-5-5", 1024, strict),
      (error: unknown) =>
        error instanceof TranslationError && error.param === param &&
        pattern.test(error.message),
      JSON.stringify(extra),
    );
  refusal(
    { tool_choice: "required" },
    "tool_choice",
    /"tool_choice" "required" with model "claude-sonnet-5-5": the model refuses forced tool use/,
  );
  refusal(
    { tool_choice: { type: "function", function: { name: "click" } } },
    "tool_choice",
    /function "click" with model "claude-sonnet-5-5"/,
  );
  refusal(
    {
      tool_choice: {
        type: "allowed_tools",
        allowed_tools: {
          mode: "required",
          tools: [{ type: "function", function: { name: "click" } }],
        },
      },
    },
    "tool_choice",
    /refuses forced tool use/,
  );
  refusal(
    { reasoning_effort: "none" },
    "reasoning_effort",
    /model "claude-sonnet-5-5": the model refuses to turn thinking off/,
  );
  // What the model takes passes: auto and none, and every choice on a model without the rule.
  for (const tool_choice of ["auto", "none"] as const) {
    toAnthropicRequest(
      chat({ tool_choice }),
      "claude-sonnet-5-5",
      1024,
      strict,
    );
  }
  assert.deepEqual(
    toAnthropicRequest(
      chat({ tool_choice: "required", reasoning_effort: "none" }),
      "claude-haiku-4-5",
      1024,
      {
        id: "claude-haiku-4-5",
      },
    ).tool_choice,
    { type: "any" },
  );
  assert.deepEqual(
    toAnthropicRequest(
      chat({ tool_choice: "required" }),
      "claude-sonnet-5-5",
      1024,
    ).tool_choice,
    { type: "any" },
  );
});

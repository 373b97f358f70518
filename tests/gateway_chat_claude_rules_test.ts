/**
 * Chat calls to a Claude model with rules, through the official OpenAI SDK:
 * what the model's catalog entry says it refuses (a forced tool choice,
 * thinking turned off) is a 400 naming the rule that never reaches the
 * provider, and the thinking a model returns between tool calls comes back
 * as `reasoning_details`, streamed or not, and goes upstream again in place
 * on the next turn, as Anthropic requires in a tool loop.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { type Harness, startHarness } from "./_gateway_harness.ts";

/** A loopback Anthropic that answers every call with `blocks` and keeps each request body. */
interface ScriptedClaude extends AsyncDisposable {
  env: Record<string, string>;
  bodies: Record<string, unknown>[];
}

const ANSWER = [
  {
    type: "thinking",
    thinking: "The form has a name field.",
    signature: "sig-1",
  },
  { type: "tool_use", id: "toolu_1", name: "click", input: { x: 10, y: 20 } },
  { type: "redacted_thinking", data: "EncryptedBetweenCalls" },
  { type: "thinking", thinking: "Now type the name.", signature: "sig-2" },
  { type: "tool_use", id: "toolu_2", name: "type", input: { text: "Ada" } },
];

function startScriptedClaude(): ScriptedClaude {
  const bodies: Record<string, unknown>[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const body = await request.json();
      bodies.push(body);
      const usage = { input_tokens: 12, output_tokens: 30 };
      if (!body.stream) {
        return Response.json({
          id: "msg_1",
          type: "message",
          role: "assistant",
          model: body.model,
          content: ANSWER,
          stop_reason: "tool_use",
          usage,
        });
      }
      const events: Record<string, unknown>[] = [{
        type: "message_start",
        message: { id: "msg_1", usage: { ...usage, output_tokens: 1 } },
      }];
      ANSWER.forEach((block, index) => {
        if (block.type === "thinking") {
          events.push(
            {
              type: "content_block_start",
              index,
              content_block: { type: "thinking", thinking: "" },
            },
            {
              type: "content_block_delta",
              index,
              delta: {
                type: "thinking_delta",
                thinking: block.thinking!.slice(0, 5),
              },
            },
            {
              type: "content_block_delta",
              index,
              delta: {
                type: "thinking_delta",
                thinking: block.thinking!.slice(5),
              },
            },
            {
              type: "content_block_delta",
              index,
              delta: { type: "signature_delta", signature: block.signature },
            },
          );
        } else if (block.type === "redacted_thinking") {
          events.push({
            type: "content_block_start",
            index,
            content_block: block,
          });
        } else {
          events.push(
            {
              type: "content_block_start",
              index,
              content_block: { ...block, input: {} },
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
          usage: { output_tokens: 30 },
        },
        { type: "message_stop" },
      );
      return new Response(
        events.map((data) =>
          `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`
        ).join(""),
        { headers: { "content-type": "text/event-stream" } },
      );
    },
  );
  return {
    env: { ANTHROPIC_BASE_URL: `http://127.0.0.1:${server.addr.port}` },
    bodies,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

function openai(h: Harness): OpenAI {
  return new OpenAI({
    baseURL: `${h.url}/v1`,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
}

const TOOLS: OpenAI.Chat.Completions.ChatCompletionTool[] = ["click", "type"]
  .map((name) => ({
    type: "function",
    function: { name, parameters: { type: "object", properties: {} } },
  }));

/** A message as the chat convention carries it, with the gateway's reasoning pieces. */
type AssistantTurn = OpenAI.Chat.Completions.ChatCompletionMessage & {
  reasoning_details?: {
    type: string;
    text?: string;
    signature?: string;
    data?: string;
    index: number;
  }[];
};

/** The next turn of the loop: the assistant's message as received, and a result per tool call. */
function nextTurn(
  assistant: AssistantTurn,
): OpenAI.Chat.Completions.ChatCompletionMessageParam[] {
  return [
    { role: "user", content: "Fill in the form" },
    assistant as OpenAI.Chat.Completions.ChatCompletionAssistantMessageParam,
    ...(assistant.tool_calls ?? []).map((call) => ({
      role: "tool" as const,
      tool_call_id: call.id,
      content: "done",
    })),
  ];
}

Deno.test("a forced tool choice or thinking turned off to claude-sonnet-5-5 is a 400 naming the model's rule, and nothing reaches Anthropic", async () => {
  await using claude = startScriptedClaude();
  await using h = await startHarness({ env: claude.env });
  const refusals: [
    Partial<OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming>,
    string,
    RegExp,
  ][] = [
    [
      { tool_choice: "required" },
      "tool_choice",
      /"claude-sonnet-5-5": the model refuses forced tool use/,
    ],
    [
      { tool_choice: { type: "function", function: { name: "click" } } },
      "tool_choice",
      /function "click" with model "claude-sonnet-5-5"/,
    ],
    [
      { reasoning_effort: "none" as OpenAI.ReasoningEffort },
      "reasoning_effort",
      /refuses to turn thinking off/,
    ],
  ];
  for (const [extra, param, pattern] of refusals) {
    for (const stream of [false, true]) {
      const error = await openai(h).chat.completions.create({
        model: "claude-sonnet-5-5",
        messages: [{ role: "user", content: "Fill in the form" }],
        tools: TOOLS,
        ...extra,
        stream,
      } as OpenAI.Chat.Completions.ChatCompletionCreateParams).then(
        () => assert.fail("the call was not refused"),
        (error: unknown) => error,
      );
      assert.ok(error instanceof OpenAI.BadRequestError, String(error));
      assert.equal(error.param, param);
      assert.match(error.message, pattern);
    }
  }
  // The same choice to a model without the rule goes through as Anthropic's "any".
  await openai(h).chat.completions.create({
    model: "claude-haiku-4-5",
    messages: [{ role: "user", content: "Fill in the form" }],
    tools: TOOLS,
    tool_choice: "required",
  });
  assert.equal(claude.bodies.length, 1);
  assert.deepEqual(claude.bodies[0].tool_choice, { type: "any" });
});

Deno.test("thinking between tool calls comes back as reasoning_details and goes upstream again in place on the next turn, not streamed", async () => {
  await using claude = startScriptedClaude();
  await using h = await startHarness({ env: claude.env });
  const first = await openai(h).chat.completions.create({
    model: "claude-sonnet-5-5",
    messages: [{ role: "user", content: "Fill in the form" }],
    tools: TOOLS,
  });
  const assistant = first.choices[0].message as AssistantTurn;
  assert.deepEqual(
    assistant.tool_calls?.map((call) =>
      call.type === "function" ? call.function.name : call.type
    ),
    [
      "click",
      "type",
    ],
  );
  assert.deepEqual(assistant.reasoning_details?.map((detail) => detail.index), [
    0,
    2,
    3,
  ]);
  await openai(h).chat.completions.create({
    model: "claude-sonnet-5-5",
    messages: nextTurn(assistant),
    tools: TOOLS,
  });
  const resent = claude.bodies[1].messages as {
    role: string;
    content: unknown;
  }[];
  assert.deepEqual(resent[1], { role: "assistant", content: ANSWER });
});

Deno.test("streamed thinking pieces, joined by index as a client keeps them, go upstream again in place on the next turn", async () => {
  await using claude = startScriptedClaude();
  await using h = await startHarness({ env: claude.env });
  const stream = await openai(h).chat.completions.create({
    model: "claude-sonnet-5-5",
    messages: [{ role: "user", content: "Fill in the form" }],
    tools: TOOLS,
    stream: true,
  });
  const calls: OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[] =
    [];
  const reasoning = new Map<
    number,
    NonNullable<AssistantTurn["reasoning_details"]>[number]
  >();
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta as
      | (OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta & {
        reasoning_details?: NonNullable<AssistantTurn["reasoning_details"]>;
      })
      | undefined;
    for (const call of delta?.tool_calls ?? []) {
      calls[call.index] ??= {
        id: call.id!,
        type: "function",
        function: { name: call.function!.name!, arguments: "" },
      };
      calls[call.index].function.arguments += call.function?.arguments ?? "";
    }
    for (const piece of delta?.reasoning_details ?? []) {
      const held = reasoning.get(piece.index);
      if (held && piece.type === "reasoning.text") {
        held.text = (held.text ?? "") + (piece.text ?? "");
        if (piece.signature) held.signature = piece.signature;
      } else reasoning.set(piece.index, { ...piece });
    }
  }
  await openai(h).chat.completions.create({
    model: "claude-sonnet-5-5",
    messages: nextTurn({
      role: "assistant",
      content: null,
      refusal: null,
      tool_calls: calls,
      reasoning_details: [...reasoning.values()],
    }),
    tools: TOOLS,
  });
  const resent = claude.bodies[1].messages as {
    role: string;
    content: unknown;
  }[];
  assert.deepEqual(resent[1], { role: "assistant", content: ANSWER });
});

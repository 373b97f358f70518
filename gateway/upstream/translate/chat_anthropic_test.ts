import assert from "node:assert/strict";
import fc from "fast-check";
import { chat, chunksOf, replay } from "../../../tests/_chat_streams.ts";
import { toAnthropicRequest } from "./chat_anthropic.ts";
import {
  type AnthropicResponse,
  finishReasonFromAnthropic,
  fromAnthropicResponse,
  usageFromAnthropic,
} from "./chat_anthropic_response.ts";
import { AnthropicChatStream } from "./chat_anthropic_stream.ts";
import { TranslationError } from "./chat_types.ts";
import {
  type ChatCompletionChunk,
  isChatStreamError,
} from "./chat_response_types.ts";

function runStream(text: string, includeUsage: boolean) {
  return replay(
    new AnthropicChatStream({ model: "claude-sonnet-4-5", includeUsage }),
    text,
  );
}

/** Joins the tool call fragments of a stream by index, as OpenAI clients do. */
function joinToolCalls(chunks: ChatCompletionChunk[]) {
  const calls: {
    id?: string;
    type?: string;
    name?: string;
    arguments: string;
  }[] = [];
  for (const chunk of chunks) {
    for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
      const call = calls[delta.index] ??= { arguments: "" };
      call.id ??= delta.id;
      call.type ??= delta.type;
      call.name ??= delta.function.name;
      call.arguments += delta.function.arguments;
    }
  }
  return calls;
}

// Shapes from Anthropic's Messages API reference and streaming guide.
const weatherStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":1024,"output_tokens":2},"content":[],"stop_reason":null}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Okay, let's check"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" the weather for San Francisco:"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"location\\":"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \\"San Francisco, CA\\""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":", \\"unit\\": \\"fahrenheit\\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_02Ab","name":"get_time","input":{}}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

`;

const toolUseResponse: AnthropicResponse = {
  id: "msg_01Aq9w938a90dw8q",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5-20250929",
  content: [
    { type: "text", text: "I'll check the weather." },
    {
      type: "tool_use",
      id: "toolu_01A09q90qw90lq917835lq9",
      name: "get_weather",
      input: { location: "Paris" },
    },
  ],
  stop_reason: "tool_use",
  stop_sequence: null,
  usage: {
    input_tokens: 25,
    cache_creation_input_tokens: 100,
    cache_read_input_tokens: 2000,
    output_tokens: 40,
  },
};

Deno.test("toAnthropicRequest() moves system and developer messages to the top-level system", () => {
  const request = toAnthropicRequest(
    chat({
      model: "claude-sonnet-4-5",
      messages: [
        { role: "system", content: "You are terse." },
        {
          role: "developer",
          content: [{ type: "text", text: "Answer in French." }],
        },
        { role: "user", content: "Hello" },
      ],
    }),
    "claude-sonnet-4-5",
    4096,
  );
  assert.deepEqual(request.system, [
    { type: "text", text: "You are terse." },
    { type: "text", text: "Answer in French." },
  ]);
  assert.deepEqual(request.messages, [{ role: "user", content: "Hello" }]);
  assert.equal(request.model, "claude-sonnet-4-5");
});

Deno.test("toAnthropicRequest() keeps a single system prompt as a string", () => {
  const request = toAnthropicRequest(
    chat({
      model: "m",
      messages: [{ role: "system", content: "Be brief" }, {
        role: "user",
        content: "Hi",
      }],
    }),
    "claude-haiku-4-5",
    1024,
  );
  assert.equal(request.system, "Be brief");
});

Deno.test("toAnthropicRequest() merges consecutive turns of the same role so roles alternate", () => {
  const request = toAnthropicRequest(
    chat({
      model: "m",
      messages: [
        { role: "user", content: "First" },
        { role: "user", content: [{ type: "text", text: "Second" }] },
        { role: "assistant", content: "Reply" },
        { role: "assistant", content: [{ type: "text", text: "More" }] },
        { role: "user", content: "Third" },
      ],
    }),
    "m",
    1024,
  );
  assert.deepEqual(request.messages, [
    {
      role: "user",
      content: [{ type: "text", text: "First" }, {
        type: "text",
        text: "Second",
      }],
    },
    {
      role: "assistant",
      content: [{ type: "text", text: "Reply" }, {
        type: "text",
        text: "More",
      }],
    },
    { role: "user", content: "Third" },
  ]);
});

Deno.test("toAnthropicRequest() sends data URL images as base64 and http URLs as url sources", () => {
  const request = toAnthropicRequest(
    chat({
      model: "m",
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "Compare these" },
          {
            type: "image_url",
            image_url: { url: "data:image/png;base64,iVBORw0KGgo=" },
          },
          {
            type: "image_url",
            image_url: { url: "https://example.com/cat.jpg", detail: "high" },
          },
          {
            type: "file",
            file: {
              filename: "a.pdf",
              file_data: "data:application/pdf;base64,JVBERi0=",
            },
          },
        ],
      }],
    }),
    "m",
    1024,
  );
  assert.deepEqual(request.messages[0].content, [
    { type: "text", text: "Compare these" },
    {
      type: "image",
      source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" },
    },
    {
      type: "image",
      source: { type: "url", url: "https://example.com/cat.jpg" },
    },
    {
      type: "document",
      source: {
        type: "base64",
        media_type: "application/pdf",
        data: "JVBERi0=",
      },
      title: "a.pdf",
    },
  ]);
});

Deno.test("toAnthropicRequest() rejects content Anthropic cannot take, naming the field", () => {
  const cases: [unknown, string][] = [
    [
      { type: "image_url", image_url: { url: "data:image/tiff;base64,AAAA" } },
      "messages[0].content[0]",
    ],
    [
      { type: "image_url", image_url: { url: "data:image/png,notbase64" } },
      "messages[0].content[0]",
    ],
    [
      { type: "image_url", image_url: { url: "ftp://example.com/a.png" } },
      "messages[0].content[0]",
    ],
    [
      { type: "input_audio", input_audio: { data: "AAAA", format: "wav" } },
      "messages[0].content[0]",
    ],
  ];
  for (const [part, param] of cases) {
    assert.throws(
      () =>
        toAnthropicRequest(
          chat({ model: "m", messages: [{ role: "user", content: [part] }] }),
          "m",
          1024,
        ),
      (error: unknown) =>
        error instanceof TranslationError && error.param === param &&
        error.status === 400,
    );
  }
});

Deno.test("toAnthropicRequest() translates tool definitions and every tool_choice", () => {
  const tools = [{
    type: "function",
    function: {
      name: "get_weather",
      description: "Current weather",
      parameters: {
        type: "object",
        properties: { location: { type: "string" } },
        required: ["location"],
      },
    },
  }, { type: "function", function: { name: "now" } }];
  const base = {
    model: "m",
    messages: [{ role: "user", content: "Weather?" }],
    tools,
  };
  const request = toAnthropicRequest(chat(base), "m", 1024);
  assert.deepEqual(request.tools, [
    {
      name: "get_weather",
      description: "Current weather",
      input_schema: {
        type: "object",
        properties: { location: { type: "string" } },
        required: ["location"],
      },
    },
    { name: "now", input_schema: { type: "object", properties: {} } },
  ]);
  assert.equal(request.tool_choice, undefined);
  const choiceOf = (extra: Record<string, unknown>) =>
    toAnthropicRequest(chat({ ...base, ...extra }), "m", 1024).tool_choice;
  assert.deepEqual(choiceOf({ tool_choice: "auto" }), { type: "auto" });
  assert.deepEqual(choiceOf({ tool_choice: "none" }), { type: "none" });
  assert.deepEqual(choiceOf({ tool_choice: "required" }), { type: "any" });
  assert.deepEqual(
    choiceOf({ tool_choice: { type: "function", function: { name: "now" } } }),
    {
      type: "tool",
      name: "now",
    },
  );
  assert.deepEqual(choiceOf({ parallel_tool_calls: false }), {
    type: "auto",
    disable_parallel_tool_use: true,
  });
  assert.deepEqual(
    choiceOf({ tool_choice: "required", parallel_tool_calls: false }),
    {
      type: "any",
      disable_parallel_tool_use: true,
    },
  );
});

Deno.test("toAnthropicRequest() turns tool calls into tool_use blocks and tool messages into tool_result blocks", () => {
  const request = toAnthropicRequest(
    chat({
      model: "m",
      messages: [
        { role: "user", content: "Weather in Paris and the time?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_1",
              type: "function",
              function: {
                name: "get_weather",
                arguments: '{"location":"Paris"}',
              },
            },
            {
              id: "call_2",
              type: "function",
              function: { name: "now", arguments: "" },
            },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: '{"temp":18}' },
        {
          role: "tool",
          tool_call_id: "call_2",
          content: [{ type: "text", text: "12:00" }],
        },
        { role: "user", content: "Thanks" },
      ],
    }),
    "m",
    1024,
  );
  assert.deepEqual(request.messages, [
    { role: "user", content: "Weather in Paris and the time?" },
    {
      role: "assistant",
      content: [
        {
          type: "tool_use",
          id: "call_1",
          name: "get_weather",
          input: { location: "Paris" },
        },
        { type: "tool_use", id: "call_2", name: "now", input: {} },
      ],
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "call_1", content: '{"temp":18}' },
        { type: "tool_result", tool_use_id: "call_2", content: "12:00" },
        { type: "text", text: "Thanks" },
      ],
    },
  ]);
});

Deno.test("toAnthropicRequest() rejects a tool result for an unknown call and unparsable arguments", () => {
  assert.throws(
    () =>
      toAnthropicRequest(
        chat({
          model: "m",
          messages: [{ role: "user", content: "x" }, {
            role: "tool",
            tool_call_id: "nope",
            content: "1",
          }],
        }),
        "m",
        1024,
      ),
    (error: unknown) =>
      error instanceof TranslationError &&
      error.param === "messages[1].tool_call_id",
  );
  assert.throws(
    () =>
      toAnthropicRequest(
        chat({
          model: "m",
          messages: [{
            role: "assistant",
            tool_calls: [{
              id: "c",
              type: "function",
              function: { name: "f", arguments: "{oops" },
            }],
          }],
        }),
        "m",
        1024,
      ),
    (error: unknown) =>
      error instanceof TranslationError &&
      error.param === "messages[0].tool_calls[0].function.arguments",
  );
});

Deno.test("toAnthropicRequest() maps token caps, sampling, stop sequences, stream and user", () => {
  const messages = [{ role: "user", content: "Hi" }];
  const request = toAnthropicRequest(
    chat({
      model: "m",
      messages,
      max_tokens: 100,
      max_completion_tokens: 200,
      temperature: 0.6,
      top_p: 1,
      stop: "END",
      stream: true,
      stream_options: { include_usage: true },
      user: "user-42",
    }),
    "m",
    4096,
  );
  assert.equal(request.max_tokens, 200);
  assert.equal(request.temperature, 0.6);
  // top_p 1 samples from the whole distribution: it changes nothing.
  assert.equal(request.top_p, undefined);
  assert.deepEqual(request.stop_sequences, ["END"]);
  assert.equal(request.stream, true);
  assert.deepEqual(request.metadata, { user_id: "user-42" });

  const defaults = toAnthropicRequest(
    chat({
      model: "m",
      messages,
      max_tokens: 50,
      top_p: 0.5,
      stop: ["a", "b"],
    }),
    "m",
    4096,
  );
  assert.equal(defaults.max_tokens, 50);
  assert.equal(defaults.top_p, 0.5);
  assert.deepEqual(defaults.stop_sequences, ["a", "b"]);
  assert.equal(defaults.stream, undefined);
  assert.equal(
    toAnthropicRequest(chat({ model: "m", messages }), "m", 4096).max_tokens,
    4096,
  );
  assert.throws(
    () => toAnthropicRequest(chat({ model: "m", messages, n: 2 }), "m", 4096),
    TranslationError,
  );
});

Deno.test("fromAnthropicResponse() translates text, tool calls, stop reason, id and usage with cached tokens", () => {
  const before = Math.floor(Date.now() / 1000);
  const completion = fromAnthropicResponse(
    toolUseResponse,
    "claude-sonnet-4-5",
  );
  assert.equal(completion.id, "chatcmpl-msg_01Aq9w938a90dw8q");
  assert.equal(completion.object, "chat.completion");
  assert.equal(completion.model, "claude-sonnet-4-5");
  assert.ok(completion.created >= before && completion.created <= before + 1);
  assert.deepEqual(completion.choices, [{
    index: 0,
    message: {
      role: "assistant",
      content: "I'll check the weather.",
      refusal: null,
      tool_calls: [{
        id: "toolu_01A09q90qw90lq917835lq9",
        type: "function",
        function: { name: "get_weather", arguments: '{"location":"Paris"}' },
      }],
    },
    finish_reason: "tool_calls",
    logprobs: null,
  }]);
  assert.deepEqual(completion.usage, {
    prompt_tokens: 2125,
    completion_tokens: 40,
    total_tokens: 2165,
    prompt_tokens_details: { cached_tokens: 2000 },
  });
});

Deno.test("fromAnthropicResponse() output feeds back into toAnthropicRequest() as the same tool_use", () => {
  const message =
    fromAnthropicResponse(toolUseResponse, "m").choices[0].message;
  const request = toAnthropicRequest(
    chat({
      model: "m",
      messages: [
        { role: "user", content: "Weather?" },
        message,
        {
          role: "tool",
          tool_call_id: message.tool_calls![0].id,
          content: "sunny",
        },
      ],
    }),
    "m",
    1024,
  );
  assert.deepEqual(request.messages[1].content, [
    { type: "text", text: "I'll check the weather." },
    {
      type: "tool_use",
      id: "toolu_01A09q90qw90lq917835lq9",
      name: "get_weather",
      input: { location: "Paris" },
    },
  ]);
  assert.deepEqual(request.messages[2].content, [
    {
      type: "tool_result",
      tool_use_id: "toolu_01A09q90qw90lq917835lq9",
      content: "sunny",
    },
  ]);
});

Deno.test("fromAnthropicResponse() gives null content to a tool-only answer and maps a plain end_turn to stop", () => {
  const toolOnly = fromAnthropicResponse({
    ...toolUseResponse,
    content: [toolUseResponse.content[1]],
  }, "m");
  assert.equal(toolOnly.choices[0].message.content, null);
  const text = fromAnthropicResponse({
    ...toolUseResponse,
    content: [{ type: "text", text: "Hi" }],
    stop_reason: "end_turn",
    usage: { input_tokens: 3, output_tokens: 1 },
  }, "m");
  assert.equal(text.choices[0].finish_reason, "stop");
  assert.equal(text.choices[0].message.tool_calls, undefined);
  assert.deepEqual(text.usage.prompt_tokens_details, { cached_tokens: 0 });
});

Deno.test("finishReasonFromAnthropic() maps every stop reason", () => {
  assert.equal(finishReasonFromAnthropic("end_turn"), "stop");
  assert.equal(finishReasonFromAnthropic("stop_sequence"), "stop");
  assert.equal(finishReasonFromAnthropic("pause_turn"), "stop");
  assert.equal(finishReasonFromAnthropic("max_tokens"), "length");
  assert.equal(
    finishReasonFromAnthropic("model_context_window_exceeded"),
    "length",
  );
  assert.equal(finishReasonFromAnthropic("tool_use"), "tool_calls");
  assert.equal(finishReasonFromAnthropic("refusal"), "content_filter");
  assert.equal(finishReasonFromAnthropic(null), "stop");
});

Deno.test("usageFromAnthropic() sums uncached, cache-read and cache-write input tokens", () => {
  assert.deepEqual(
    usageFromAnthropic({
      input_tokens: 10,
      cache_read_input_tokens: 300,
      cache_creation_input_tokens: 50,
      output_tokens: 7,
    }),
    {
      inputTokens: 360,
      outputTokens: 7,
      cachedInputTokens: 300,
      cacheWriteTokens: 50,
    },
  );
  // Writes split by lifetime, as the API reports them with `cache_creation`.
  assert.deepEqual(
    usageFromAnthropic({
      input_tokens: 10,
      cache_creation_input_tokens: 80,
      cache_creation: {
        ephemeral_5m_input_tokens: 30,
        ephemeral_1h_input_tokens: 50,
      },
      output_tokens: 7,
    }),
    {
      inputTokens: 90,
      outputTokens: 7,
      cachedInputTokens: 0,
      cacheWriteTokens: 30,
      cacheWrite1hTokens: 50,
    },
  );
  assert.deepEqual(
    usageFromAnthropic({
      input_tokens: 10,
      output_tokens: 7,
      cache_read_input_tokens: null,
    }),
    {
      inputTokens: 10,
      outputTokens: 7,
      cachedInputTokens: 0,
    },
  );
});

Deno.test("AnthropicChatStream translates a recorded stream of text and tool calls into chat chunks", () => {
  const { stream, pieces } = runStream(weatherStream, true);
  const chunks = chunksOf(pieces);
  assert.deepEqual(chunks[0].choices[0].delta, {
    role: "assistant",
    content: "",
    refusal: null,
  });
  assert.ok(
    chunks.every((chunk) =>
      chunk.id === "chatcmpl-msg_014p7gG3wDgGV9EUtLvnow3U"
    ),
  );
  assert.ok(
    chunks.every((chunk) =>
      chunk.created === chunks[0].created && chunk.model === "claude-sonnet-4-5"
    ),
  );
  assert.ok(chunks.every((chunk) => chunk.object === "chat.completion.chunk"));
  const text = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "")
    .join("");
  assert.equal(text, "Okay, let's check the weather for San Francisco:");

  const calls = joinToolCalls(chunks);
  assert.equal(calls.length, 2);
  assert.deepEqual(
    { ...calls[0], arguments: JSON.parse(calls[0].arguments) },
    {
      id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
      type: "function",
      name: "get_weather",
      arguments: { location: "San Francisco, CA", unit: "fahrenheit" },
    },
  );
  assert.deepEqual(JSON.parse(calls[1].arguments), {});
  assert.equal(calls[1].name, "get_time");

  const withChoices = chunks.filter((chunk) => chunk.choices.length > 0);
  assert.equal(withChoices.at(-1)!.choices[0].finish_reason, "tool_calls");
  assert.ok(
    withChoices.slice(0, -1).every((chunk) =>
      chunk.choices[0].finish_reason === null
    ),
  );
  assert.ok(withChoices.every((chunk) => chunk.usage === null));

  const last = chunks.at(-1)!;
  assert.deepEqual(last.choices, []);
  assert.deepEqual(last.usage, {
    prompt_tokens: 1496,
    completion_tokens: 89,
    total_tokens: 1585,
    prompt_tokens_details: { cached_tokens: 1024 },
  });
  assert.deepEqual(stream.usage, {
    inputTokens: 1496,
    outputTokens: 89,
    cachedInputTokens: 1024,
  });
  assert.equal(stream.failed, false);
});

Deno.test("AnthropicChatStream sends no usage chunk unless the caller asked for one", () => {
  const { pieces } = runStream(weatherStream, false);
  const chunks = chunksOf(pieces);
  assert.ok(
    chunks.every((chunk) => chunk.choices.length === 1 && !("usage" in chunk)),
  );
  assert.equal(chunks.at(-1)!.choices[0].finish_reason, "tool_calls");
});

Deno.test("AnthropicChatStream maps max_tokens in message_delta to a length finish", () => {
  const text = `event: message_start
data: {"type":"message_start","message":{"id":"msg_x","type":"message","role":"assistant","content":[],"model":"claude-haiku-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Once upon"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"input_tokens":null,"output_tokens":2,"cache_read_input_tokens":null}}

event: message_stop
data: {"type":"message_stop"}

`;
  const { stream, pieces } = runStream(text, false);
  assert.equal(chunksOf(pieces).at(-1)!.choices[0].finish_reason, "length");
  assert.deepEqual(stream.usage, {
    inputTokens: 12,
    outputTokens: 2,
    cachedInputTokens: 0,
  });
});

Deno.test("AnthropicChatStream turns an upstream error event into the OpenAI in-stream error", () => {
  const text = `event: message_start
data: {"type":"message_start","message":{"id":"msg_y","type":"message","role":"assistant","content":[],"model":"claude-opus-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":1}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}

event: error
data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}

`;
  const { stream, pieces } = runStream(text, true);
  const last = pieces.at(-1)!;
  assert.ok(isChatStreamError(last));
  assert.deepEqual(last, {
    error: {
      message: "Overloaded",
      type: "server_error",
      param: null,
      code: "overloaded_error",
    },
  });
  assert.equal(pieces.filter(isChatStreamError).length, 1);
  assert.equal(stream.failed, true);
  assert.deepEqual(stream.usage, {
    inputTokens: 30,
    outputTokens: 1,
    cachedInputTokens: 0,
  });
});

Deno.test("AnthropicChatStream reports a stream cut before message_delta, and a malformed event, as errors", () => {
  const cut = runStream(
    `event: message_start
data: {"type":"message_start","message":{"id":"msg_z","usage":{"input_tokens":5,"output_tokens":1}}}

`,
    true,
  );
  const last = cut.pieces.at(-1)!;
  assert.ok(isChatStreamError(last) && last.error.type === "server_error");
  assert.deepEqual(cut.stream.usage, {
    inputTokens: 5,
    outputTokens: 1,
    cachedInputTokens: 0,
  });

  const stream = new AnthropicChatStream({ model: "m", includeUsage: false });
  const pieces = stream.push({
    event: "content_block_delta",
    data: "{not json",
  });
  assert.ok(pieces.length === 1 && isChatStreamError(pieces[0]));
  assert.deepEqual(stream.finish(), []);
});

Deno.test("AnthropicChatStream joins tool arguments split at any boundary back into the same object", () => {
  fc.assert(
    fc.property(
      fc.dictionary(fc.string(), fc.jsonValue()),
      fc.array(fc.nat(), { maxLength: 8 }),
      (input, cuts) => {
        const json = JSON.stringify(input);
        const points = [...new Set(cuts.map((cut) => cut % (json.length + 1)))]
          .sort((a, b) => a - b);
        const fragments = [0, ...points].map((start, i) =>
          json.slice(start, [...points, json.length][i])
        );
        const stream = new AnthropicChatStream({
          model: "m",
          includeUsage: false,
        });
        const event = (data: unknown) => ({ data: JSON.stringify(data) });
        const pieces = [
          ...stream.push(
            event({
              type: "message_start",
              message: { id: "msg_p", usage: { input_tokens: 1 } },
            }),
          ),
          ...stream.push(event({
            type: "content_block_start",
            index: 0,
            content_block: {
              type: "tool_use",
              id: "toolu_p",
              name: "f",
              input: {},
            },
          })),
          ...fragments.flatMap((partial_json) =>
            stream.push(
              event({
                type: "content_block_delta",
                index: 0,
                delta: { type: "input_json_delta", partial_json },
              }),
            )
          ),
          ...stream.push(event({ type: "content_block_stop", index: 0 })),
          ...stream.push(
            event({
              type: "message_delta",
              delta: { stop_reason: "tool_use" },
              usage: { output_tokens: 3 },
            }),
          ),
          ...stream.finish(),
        ];
        const [call] = joinToolCalls(chunksOf(pieces));
        assert.deepEqual(JSON.parse(call.arguments), JSON.parse(json));
      },
    ),
    { numRuns: 200 },
  );
});

const ANSWER_SCHEMA = {
  type: "object",
  properties: { city: { type: "string" }, days: { type: "integer" } },
  required: ["city", "days"],
  additionalProperties: false,
};

Deno.test("toAnthropicRequest() carries response_format json_schema to output_config.format, the description on the schema", () => {
  const request = toAnthropicRequest(
    chat({
      model: "m",
      messages: [{ role: "user", content: "Weather?" }],
      response_format: {
        type: "json_schema",
        json_schema: {
          name: "forecast",
          description: "A forecast request",
          strict: true,
          schema: {
            $schema: "http://json-schema.org/draft-07/schema#",
            ...ANSWER_SCHEMA,
          },
        },
      },
    }),
    "m",
    1024,
  );
  assert.deepEqual(request.output_config, {
    format: {
      type: "json_schema",
      schema: { ...ANSWER_SCHEMA, description: "A forecast request" },
    },
  });
  const text = toAnthropicRequest(
    chat({
      model: "m",
      messages: [{ role: "user", content: "Hi" }],
      response_format: { type: "text" },
    }),
    "m",
    1024,
  );
  assert.equal(text.output_config, undefined);
});

Deno.test("toAnthropicRequest() refuses json_object, a schemaless json_schema and schema keywords Anthropic cannot enforce", () => {
  const refused = (response_format: unknown, param: string) =>
    assert.throws(
      () =>
        toAnthropicRequest(
          chat({
            model: "m",
            messages: [{ role: "user", content: "Hi" }],
            response_format,
          }),
          "m",
          1024,
        ),
      (error: unknown) =>
        error instanceof TranslationError && error.param === param,
    );
  refused({ type: "json_object" }, "response_format.type");
  refused(
    { type: "json_schema", json_schema: { name: "x" } },
    "response_format.json_schema.schema",
  );
  refused(
    {
      type: "json_schema",
      json_schema: {
        name: "x",
        schema: {
          type: "object",
          properties: { days: { type: "integer", minimum: 1 } },
        },
      },
    },
    "response_format.json_schema.schema.properties.days.minimum",
  );
});

Deno.test("toAnthropicRequest() sends strict tools strict, their schemas checked, and loose ones as given", () => {
  const request = toAnthropicRequest(
    chat({
      model: "m",
      messages: [{ role: "user", content: "Weather?" }],
      tools: [
        {
          type: "function",
          function: {
            name: "strict_one",
            parameters: { type: "object", properties: {} },
            strict: true,
          },
        },
        {
          type: "function",
          function: {
            name: "loose_one",
            parameters: { type: "object", properties: { n: { minimum: 1 } } },
          },
        },
      ],
    }),
    "m",
    1024,
  );
  assert.deepEqual(request.tools, [
    {
      name: "strict_one",
      input_schema: {
        type: "object",
        properties: {},
        additionalProperties: false,
      },
      strict: true,
    },
    {
      name: "loose_one",
      input_schema: { type: "object", properties: { n: { minimum: 1 } } },
    },
  ]);
  assert.throws(
    () =>
      toAnthropicRequest(
        chat({
          model: "m",
          messages: [{ role: "user", content: "Hi" }],
          tools: [{
            type: "function",
            function: {
              name: "t",
              parameters: { type: "string", maxLength: 3 },
              strict: true,
            },
          }],
        }),
        "m",
        1024,
      ),
    (error: unknown) =>
      error instanceof TranslationError &&
      error.param === "tools[0].function.parameters.maxLength",
  );
});

Deno.test("toAnthropicRequest() refuses every field Anthropic cannot carry, naming it, and passes the values that change nothing", () => {
  const messages = [{ role: "user", content: "Hi" }];
  const refusedFields: [Record<string, unknown>, string][] = [
    [{ seed: 1 }, "seed"],
    [{ frequency_penalty: 0.5 }, "frequency_penalty"],
    [{ presence_penalty: -1 }, "presence_penalty"],
    [{ logit_bias: { "42": 10 } }, "logit_bias"],
    [{ logprobs: true }, "logprobs"],
    [{ top_logprobs: 3 }, "top_logprobs"],
    [{ reasoning_effort: "high" }, "reasoning_effort"],
    [{ verbosity: "low" }, "verbosity"],
    [{ modalities: ["text", "audio"] }, "modalities"],
    [{ audio: { voice: "alloy", format: "mp3" } }, "audio"],
    [{ web_search_options: {} }, "web_search_options"],
    [{ functions: [{ name: "f" }] }, "functions"],
    [{ function_call: "auto" }, "function_call"],
    [{ moderation: { input: true } }, "moderation"],
    [{ top_k: 5 }, "top_k"],
    [{ temperature: 1.5 }, "temperature"],
    [{ temperature: 0.5, top_p: 0.9 }, "top_p"],
    [{ n: 2 }, "n"],
  ];
  for (const [fields, param] of refusedFields) {
    assert.throws(
      () =>
        toAnthropicRequest(chat({ model: "m", messages, ...fields }), "m", 64),
      (error: unknown) =>
        error instanceof TranslationError && error.param === param &&
        error.message.includes(`"${param}"`),
      JSON.stringify(fields),
    );
  }
  assert.throws(
    () =>
      toAnthropicRequest(
        chat({
          model: "m",
          messages: [{ role: "user", content: "Hi", name: "ann" }],
        }),
        "m",
        64,
      ),
    (error: unknown) =>
      error instanceof TranslationError && error.param === "messages[0].name",
  );
  const passing = toAnthropicRequest(
    chat({
      model: "m",
      messages,
      seed: null,
      frequency_penalty: 0,
      presence_penalty: 0,
      logit_bias: {},
      logprobs: false,
      top_logprobs: 0,
      reasoning_effort: "none",
      verbosity: "medium",
      modalities: ["text"],
      audio: null,
      metadata: { run: "7" },
      store: true,
      service_tier: "auto",
      prompt_cache_key: "k",
      prediction: { type: "content", content: "Hello" },
      safety_identifier: "hash-1",
      user: "user-1",
    }),
    "m",
    64,
  );
  assert.deepEqual(passing.metadata, { user_id: "hash-1" });
});

Deno.test("toAnthropicRequest() reads an assistant's earlier refusal as its text", () => {
  const request = toAnthropicRequest(
    chat({
      model: "m",
      messages: [
        { role: "user", content: "Do it" },
        { role: "assistant", content: null, refusal: "I can't help with that" },
        { role: "user", content: "Why?" },
      ],
    }),
    "m",
    64,
  );
  assert.deepEqual(request.messages[1], {
    role: "assistant",
    content: "I can't help with that",
  });
});

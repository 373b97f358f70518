import assert from "node:assert/strict";
import { chat, chunksOf, replay } from "../../../tests/_chat_streams.ts";
import { toGeminiRequest } from "./chat_gemini.ts";
import {
  finishReasonFromGemini,
  fromGeminiResponse,
  type GeminiResponse,
  usageFromGemini,
} from "./chat_gemini_response.ts";
import { GeminiChatStream } from "./chat_gemini_stream.ts";
import { TranslationError } from "./chat_types.ts";
import { isChatStreamError } from "./chat_response_types.ts";

function runStream(text: string, includeUsage: boolean) {
  return replay(
    new GeminiChatStream({ model: "gemini-2.5-pro", includeUsage }),
    text,
  );
}

const signature =
  "CiQBcsjafD2Ky4ZQ0Xf8mTtV1nqjR1R5Yr7VJZlGlS0m7Vq3KdUSLgFyyNp8";

// Shapes from the Gemini API reference (generateContent, function calling, thought signatures).
const functionCallResponse: GeminiResponse = {
  candidates: [{
    content: {
      role: "model",
      parts: [
        { text: "Thinking about the weather", thought: true },
        { text: "Let me look that up." },
        {
          functionCall: {
            name: "get_weather",
            args: { location: "Paris", unit: "celsius" },
          },
          thoughtSignature: signature,
        },
        { functionCall: { name: "get_time", args: {} } },
      ],
    },
    finishReason: "STOP",
    index: 0,
  }],
  usageMetadata: {
    promptTokenCount: 1200,
    cachedContentTokenCount: 1024,
    candidatesTokenCount: 15,
    thoughtsTokenCount: 65,
    totalTokenCount: 1280,
  },
  modelVersion: "gemini-2.5-pro",
  responseId: "mHJzaOWfN4ScmecP3v-x0Q0",
};

const weatherStream =
  `data: {"candidates": [{"content": {"parts": [{"text": "The weather"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 40,"candidatesTokenCount": 2,"totalTokenCount": 42},"modelVersion": "gemini-2.5-pro","responseId": "Xk1zaLqsBsO2mecPz4a7mAs"}

data: {"candidates": [{"content": {"parts": [{"text": " needs a lookup."}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 40,"candidatesTokenCount": 6,"totalTokenCount": 46},"modelVersion": "gemini-2.5-pro","responseId": "Xk1zaLqsBsO2mecPz4a7mAs"}

data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "get_weather","args": {"location": "Paris, FR","days": [1, 2]}},"thoughtSignature": "${signature}"},{"functionCall": {"name": "get_time","args": {}}}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 40,"cachedContentTokenCount": 32,"candidatesTokenCount": 30,"thoughtsTokenCount": 12,"totalTokenCount": 82},"modelVersion": "gemini-2.5-pro","responseId": "Xk1zaLqsBsO2mecPz4a7mAs"}

`;

Deno.test("toGeminiRequest() moves system and developer messages to systemInstruction and assistant turns to model", () => {
  const { body, stream } = toGeminiRequest(
    chat({
      model: "gemini-2.5-pro",
      messages: [
        { role: "system", content: "You are terse." },
        {
          role: "developer",
          content: [{ type: "text", text: "Answer " }, {
            type: "text",
            text: "in French.",
          }],
        },
        { role: "user", content: "Hello" },
        { role: "assistant", content: "Bonjour" },
        { role: "user", content: "How are you?" },
      ],
    }),
    "gemini-2.5-pro",
  );
  assert.equal(stream, false);
  assert.deepEqual(body.systemInstruction, {
    parts: [{ text: "You are terse." }, { text: "Answer in French." }],
  });
  assert.deepEqual(body.contents, [
    { role: "user", parts: [{ text: "Hello" }] },
    { role: "model", parts: [{ text: "Bonjour" }] },
    { role: "user", parts: [{ text: "How are you?" }] },
  ]);
  assert.equal(body.generationConfig, undefined);
});

Deno.test("toGeminiRequest() merges consecutive turns of the same role", () => {
  const { body } = toGeminiRequest(
    chat({
      model: "m",
      messages: [
        { role: "user", content: "First" },
        { role: "user", content: "Second" },
        {
          role: "assistant",
          content: [{ type: "text", text: "A" }, {
            type: "refusal",
            refusal: "No",
          }],
        },
        { role: "assistant", content: "B" },
      ],
    }),
    "m",
  );
  assert.deepEqual(body.contents, [
    { role: "user", parts: [{ text: "First" }, { text: "Second" }] },
    { role: "model", parts: [{ text: "A" }, { text: "No" }, { text: "B" }] },
  ]);
});

Deno.test("toGeminiRequest() merges a turn of 300 000 parts into the one before it", () => {
  const parts = Array.from({ length: 300_000 }, () => ({
    type: "text" as const,
    text: "x",
  }));
  const { body } = toGeminiRequest(
    chat({
      model: "m",
      messages: [
        { role: "user", content: "First" },
        { role: "user", content: parts },
      ],
    }),
    "m",
  );
  assert.equal(body.contents.length, 1);
  assert.equal(body.contents[0].parts.length, 300_001);
});

Deno.test("toGeminiRequest() sends data URL images inline and http URLs as fileData", () => {
  const { body } = toGeminiRequest(
    chat({
      model: "m",
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "What is in these?" },
          {
            type: "image_url",
            image_url: { url: "data:image/webp;base64,UklGRg==" },
          },
          {
            type: "image_url",
            image_url: { url: "https://example.com/photos/cat.PNG?size=large" },
          },
          {
            type: "image_url",
            image_url: { url: "https://example.com/render" },
          },
          {
            type: "file",
            file: { file_data: "data:application/pdf;base64,JVBERi0=" },
          },
          {
            type: "input_audio",
            input_audio: { data: "UklGRiQ=", format: "wav" },
          },
        ],
      }],
    }),
    "m",
  );
  assert.deepEqual(body.contents[0].parts, [
    { text: "What is in these?" },
    { inlineData: { mimeType: "image/webp", data: "UklGRg==" } },
    {
      fileData: {
        mimeType: "image/png",
        fileUri: "https://example.com/photos/cat.PNG?size=large",
      },
    },
    {
      fileData: {
        mimeType: "image/jpeg",
        fileUri: "https://example.com/render",
      },
    },
    { inlineData: { mimeType: "application/pdf", data: "JVBERi0=" } },
    { inlineData: { mimeType: "audio/wav", data: "UklGRiQ=" } },
  ]);
  assert.throws(
    () =>
      toGeminiRequest(
        chat({
          model: "m",
          messages: [{
            role: "user",
            content: [{
              type: "image_url",
              image_url: { url: "file:///etc/passwd" },
            }],
          }],
        }),
        "m",
      ),
    (error: unknown) =>
      error instanceof TranslationError &&
      error.param === "messages[0].content[0]",
  );
});

Deno.test("toGeminiRequest() declares tools with full JSON schema and maps every tool_choice", () => {
  const parameters = {
    $schema: "http://json-schema.org/draft-07/schema#",
    type: "object",
    properties: {
      location: { type: "string" },
      unit: { type: "string", enum: ["celsius", "fahrenheit"] },
    },
    required: ["location"],
    additionalProperties: false,
  };
  const base = {
    model: "m",
    messages: [{ role: "user", content: "Weather?" }],
    tools: [
      {
        type: "function",
        function: {
          name: "get_weather",
          description: "Current weather",
          parameters,
          strict: true,
        },
      },
      { type: "function", function: { name: "now" } },
    ],
  };
  const { body } = toGeminiRequest(chat(base), "m");
  assert.deepEqual(body.tools, [{
    functionDeclarations: [
      {
        name: "get_weather",
        description: "Current weather",
        parametersJsonSchema: {
          type: "object",
          properties: {
            location: { type: "string" },
            unit: { type: "string", enum: ["celsius", "fahrenheit"] },
          },
          required: ["location"],
          additionalProperties: false,
        },
      },
      { name: "now" },
    ],
  }]);
  // A strict tool: Gemini decodes calls constrained to their schemas.
  assert.deepEqual(body.toolConfig, {
    functionCallingConfig: { mode: "VALIDATED" },
  });
  const configOf = (tool_choice: unknown) =>
    toGeminiRequest(chat({ ...base, tool_choice }), "m").body.toolConfig;
  assert.deepEqual(configOf("auto"), {
    functionCallingConfig: { mode: "VALIDATED" },
  });
  const loose = {
    ...base,
    tools: base.tools.map((tool) => ({
      ...tool,
      function: { ...tool.function, strict: false },
    })),
  };
  assert.equal(toGeminiRequest(chat(loose), "m").body.toolConfig, undefined);
  assert.deepEqual(
    toGeminiRequest(chat({ ...loose, tool_choice: "auto" }), "m").body
      .toolConfig,
    { functionCallingConfig: { mode: "AUTO" } },
  );
  assert.deepEqual(configOf("none"), {
    functionCallingConfig: { mode: "NONE" },
  });
  assert.deepEqual(configOf("required"), {
    functionCallingConfig: { mode: "ANY" },
  });
  assert.deepEqual(configOf({ type: "function", function: { name: "now" } }), {
    functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["now"] },
  });
});

Deno.test("toGeminiRequest() turns tool calls into functionCall parts and tool results into named functionResponse parts", () => {
  const { body } = toGeminiRequest(
    chat({
      model: "m",
      messages: [
        { role: "user", content: "Weather in Paris and the time?" },
        {
          role: "assistant",
          content: "Checking.",
          tool_calls: [
            {
              id: "call_a",
              type: "function",
              function: {
                name: "get_weather",
                arguments: '{"location":"Paris"}',
              },
              extra_content: { google: { thought_signature: signature } },
            },
            {
              id: "call_b",
              type: "function",
              function: { name: "get_time", arguments: "{}" },
            },
          ],
        },
        {
          role: "tool",
          tool_call_id: "call_a",
          content: '{"temp":18,"sky":"clear"}',
        },
        { role: "tool", tool_call_id: "call_b", content: "12:00" },
        { role: "user", content: "Thanks" },
      ],
    }),
    "m",
  );
  assert.deepEqual(body.contents, [
    { role: "user", parts: [{ text: "Weather in Paris and the time?" }] },
    {
      role: "model",
      parts: [
        { text: "Checking." },
        {
          functionCall: { name: "get_weather", args: { location: "Paris" } },
          thoughtSignature: signature,
        },
        { functionCall: { name: "get_time", args: {} } },
      ],
    },
    {
      role: "user",
      parts: [
        {
          functionResponse: {
            name: "get_weather",
            response: { temp: 18, sky: "clear" },
          },
        },
        {
          functionResponse: { name: "get_time", response: { result: "12:00" } },
        },
        { text: "Thanks" },
      ],
    },
  ]);
});

Deno.test("toGeminiRequest() signs an unsigned first function call with the validator-skip signature", () => {
  const { body } = toGeminiRequest(
    chat({
      model: "m",
      messages: [
        { role: "user", content: "Time?" },
        {
          role: "assistant",
          tool_calls: [{
            id: "c1",
            type: "function",
            function: { name: "now", arguments: "" },
          }],
        },
        { role: "tool", tool_call_id: "c1", content: "[1, 2]" },
      ],
    }),
    "m",
  );
  assert.deepEqual(body.contents[1].parts, [
    {
      functionCall: { name: "now", args: {} },
      thoughtSignature: "skip_thought_signature_validator",
    },
  ]);
  assert.deepEqual(body.contents[2].parts, [{
    functionResponse: { name: "now", response: { result: [1, 2] } },
  }]);
});

Deno.test("toGeminiRequest() rejects a tool result for an unknown call", () => {
  assert.throws(
    () =>
      toGeminiRequest(
        chat({
          model: "m",
          messages: [{ role: "tool", tool_call_id: "ghost", content: "1" }],
        }),
        "m",
      ),
    (error: unknown) =>
      error instanceof TranslationError &&
      error.param === "messages[0].tool_call_id",
  );
});

Deno.test("toGeminiRequest() maps token caps, sampling, stop sequences, format and stream to generationConfig", () => {
  const { body, stream } = toGeminiRequest(
    chat({
      model: "m",
      messages: [{ role: "user", content: "Hi" }],
      max_tokens: 100,
      max_completion_tokens: 300,
      temperature: 1.4,
      top_p: 0.8,
      stop: ["\n\n", ""],
      seed: 7,
      presence_penalty: 0.5,
      frequency_penalty: 0.25,
      response_format: {
        type: "json_schema",
        json_schema: {
          name: "answer",
          schema: { type: "object", properties: { a: { type: "string" } } },
        },
      },
      stream: true,
    }),
    "m",
  );
  assert.equal(stream, true);
  assert.deepEqual(body.generationConfig, {
    maxOutputTokens: 300,
    temperature: 1.4,
    topP: 0.8,
    stopSequences: ["\n\n"],
    seed: 7,
    presencePenalty: 0.5,
    frequencyPenalty: 0.25,
    responseMimeType: "application/json",
    responseJsonSchema: {
      type: "object",
      properties: { a: { type: "string" } },
    },
  });
  assert.throws(
    () =>
      toGeminiRequest(
        chat({ model: "m", messages: [{ role: "user", content: "Hi" }], n: 3 }),
        "m",
      ),
    TranslationError,
  );
});

Deno.test("fromGeminiResponse() translates text, function calls with signatures, finish reason, id and usage", () => {
  const completion = fromGeminiResponse(functionCallResponse, "gemini-2.5-pro");
  assert.equal(completion.id, "chatcmpl-mHJzaOWfN4ScmecP3v-x0Q0");
  assert.equal(completion.object, "chat.completion");
  assert.equal(completion.model, "gemini-2.5-pro");
  assert.ok(Math.abs(completion.created - Date.now() / 1000) < 2);
  const [choice] = completion.choices;
  assert.equal(choice.finish_reason, "tool_calls");
  assert.equal(choice.message.content, "Let me look that up.");
  const calls = choice.message.tool_calls!;
  assert.equal(calls.length, 2);
  assert.match(calls[0].id, /^call_[0-9a-f]{24}$/);
  assert.notEqual(calls[0].id, calls[1].id);
  assert.deepEqual(calls[0].function, {
    name: "get_weather",
    arguments: '{"location":"Paris","unit":"celsius"}',
  });
  assert.deepEqual(calls[0].extra_content, {
    google: { thought_signature: signature },
  });
  assert.equal(calls[1].extra_content, undefined);
  assert.deepEqual(completion.usage, {
    prompt_tokens: 1200,
    completion_tokens: 80,
    completion_tokens_details: { reasoning_tokens: 65 },
    total_tokens: 1280,
    prompt_tokens_details: { cached_tokens: 1024 },
  });
});

Deno.test("fromGeminiResponse() output feeds back into toGeminiRequest() with its thought signature", () => {
  const message =
    fromGeminiResponse(functionCallResponse, "m").choices[0].message;
  const [first, second] = message.tool_calls!;
  const { body } = toGeminiRequest(
    chat({
      model: "m",
      messages: [
        { role: "user", content: "Weather?" },
        message,
        { role: "tool", tool_call_id: second.id, content: "09:30" },
        { role: "tool", tool_call_id: first.id, content: '{"temp":21}' },
      ],
    }),
    "m",
  );
  assert.deepEqual(body.contents[1].parts, [
    { text: "Let me look that up." },
    {
      functionCall: {
        name: "get_weather",
        args: { location: "Paris", unit: "celsius" },
      },
      thoughtSignature: signature,
    },
    { functionCall: { name: "get_time", args: {} } },
  ]);
  assert.deepEqual(body.contents[2].parts, [
    { functionResponse: { name: "get_time", response: { result: "09:30" } } },
    { functionResponse: { name: "get_weather", response: { temp: 21 } } },
  ]);
});

Deno.test("fromGeminiResponse() reports a blocked prompt and a safety stop as content_filter", () => {
  const blocked = fromGeminiResponse({
    promptFeedback: { blockReason: "PROHIBITED_CONTENT" },
    usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
  }, "m");
  assert.equal(blocked.choices[0].finish_reason, "content_filter");
  assert.equal(blocked.choices[0].message.content, null);
  assert.equal(blocked.usage.prompt_tokens, 9);
  const safety = fromGeminiResponse({
    candidates: [{ finishReason: "SAFETY", index: 0 }],
  }, "m");
  assert.equal(safety.choices[0].finish_reason, "content_filter");
  assert.match(safety.id, /^chatcmpl-[0-9a-f]{32}$/);
});

Deno.test("finishReasonFromGemini() maps stop, length, filters and function calls", () => {
  assert.equal(finishReasonFromGemini("STOP", false), "stop");
  assert.equal(finishReasonFromGemini("STOP", true), "tool_calls");
  assert.equal(finishReasonFromGemini("MAX_TOKENS", true), "length");
  for (
    const reason of [
      "SAFETY",
      "RECITATION",
      "BLOCKLIST",
      "PROHIBITED_CONTENT",
      "SPII",
      "IMAGE_SAFETY",
    ]
  ) {
    assert.equal(finishReasonFromGemini(reason, false), "content_filter");
  }
  assert.equal(
    finishReasonFromGemini("MALFORMED_FUNCTION_CALL", false),
    "stop",
  );
  assert.equal(finishReasonFromGemini(undefined, false), "stop");
});

Deno.test("usageFromGemini() counts thinking as output and tool-use prompt as input, cached tokens apart", () => {
  assert.deepEqual(
    usageFromGemini({
      promptTokenCount: 500,
      cachedContentTokenCount: 256,
      toolUsePromptTokenCount: 20,
      candidatesTokenCount: 30,
      thoughtsTokenCount: 100,
      totalTokenCount: 650,
    }),
    {
      inputTokens: 520,
      outputTokens: 130,
      cachedInputTokens: 256,
      reasoningTokens: 100,
    },
  );
  assert.deepEqual(usageFromGemini(undefined), {
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
  });
});

Deno.test("GeminiChatStream translates a recorded stream of text and function calls into chat chunks", () => {
  const { stream, pieces } = runStream(weatherStream, true);
  const chunks = chunksOf(pieces);
  assert.deepEqual(chunks[0].choices[0].delta, {
    role: "assistant",
    content: "",
    refusal: null,
  });
  assert.ok(
    chunks.every((chunk) => chunk.id === "chatcmpl-Xk1zaLqsBsO2mecPz4a7mAs"),
  );
  assert.ok(
    chunks.every((chunk) =>
      chunk.created === chunks[0].created && chunk.model === "gemini-2.5-pro"
    ),
  );
  assert.equal(
    chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join(""),
    "The weather needs a lookup.",
  );

  const fragments = chunks.flatMap((chunk) =>
    chunk.choices[0]?.delta.tool_calls ?? []
  );
  assert.deepEqual(fragments.map((fragment) => fragment.index), [0, 1]);
  assert.equal(fragments[0].type, "function");
  assert.equal(fragments[0].function.name, "get_weather");
  assert.deepEqual(JSON.parse(fragments[0].function.arguments), {
    location: "Paris, FR",
    days: [1, 2],
  });
  assert.deepEqual(fragments[0].extra_content, {
    google: { thought_signature: signature },
  });
  assert.deepEqual(JSON.parse(fragments[1].function.arguments), {});
  assert.ok(fragments.every((fragment) => fragment.id?.startsWith("call_")));

  const withChoices = chunks.filter((chunk) => chunk.choices.length > 0);
  assert.equal(withChoices.at(-1)!.choices[0].finish_reason, "tool_calls");
  assert.ok(
    withChoices.slice(0, -1).every((chunk) =>
      chunk.choices[0].finish_reason === null
    ),
  );
  assert.ok(withChoices.every((chunk) => chunk.usage === null));
  assert.deepEqual(chunks.at(-1)!.choices, []);
  assert.deepEqual(chunks.at(-1)!.usage, {
    prompt_tokens: 40,
    completion_tokens: 42,
    completion_tokens_details: { reasoning_tokens: 12 },
    total_tokens: 82,
    prompt_tokens_details: { cached_tokens: 32 },
  });
  assert.deepEqual(stream.usage, {
    inputTokens: 40,
    outputTokens: 42,
    cachedInputTokens: 32,
    reasoningTokens: 12,
  });
});

Deno.test("GeminiChatStream ends a text stream with stop and no usage chunk unless asked", () => {
  const text =
    `data: {"candidates": [{"content": {"parts": [{"text": "Hello"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 4,"candidatesTokenCount": 1,"totalTokenCount": 5},"responseId": "r1"}

data: {"candidates": [{"content": {"parts": [{"text": " there"}],"role": "model"},"finishReason": "MAX_TOKENS","index": 0}],"usageMetadata": {"promptTokenCount": 4,"candidatesTokenCount": 2,"totalTokenCount": 6},"responseId": "r1"}

`;
  const { stream, pieces } = runStream(text, false);
  const chunks = chunksOf(pieces);
  assert.ok(
    chunks.every((chunk) => chunk.choices.length === 1 && !("usage" in chunk)),
  );
  assert.equal(chunks.at(-1)!.choices[0].finish_reason, "length");
  assert.deepEqual(stream.usage, {
    inputTokens: 4,
    outputTokens: 2,
    cachedInputTokens: 0,
  });
});

Deno.test("GeminiChatStream turns an in-stream error and a cut stream into the OpenAI in-stream error", () => {
  const text =
    `data: {"candidates": [{"content": {"parts": [{"text": "Par"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 7,"candidatesTokenCount": 1,"totalTokenCount": 8},"responseId": "r2"}

data: {"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}

`;
  const failed = runStream(text, true);
  const last = failed.pieces.at(-1)!;
  assert.deepEqual(last, {
    error: {
      message: "The model is overloaded. Please try again later.",
      type: "server_error",
      param: null,
      code: "UNAVAILABLE",
    },
  });
  assert.equal(failed.pieces.filter(isChatStreamError).length, 1);
  assert.equal(failed.stream.failed, true);
  assert.deepEqual(failed.stream.usage, {
    inputTokens: 7,
    outputTokens: 1,
    cachedInputTokens: 0,
  });

  const cut = runStream(text.split("\n\n")[0] + "\n\n", true);
  const cutLast = cut.pieces.at(-1)!;
  assert.ok(
    isChatStreamError(cutLast) && cutLast.error.type === "server_error",
  );
});

Deno.test("GeminiChatStream ends a blocked prompt with content_filter", () => {
  const { pieces } = runStream(
    `data: {"promptFeedback": {"blockReason": "SAFETY"},"usageMetadata": {"promptTokenCount": 6,"totalTokenCount": 6},"responseId": "r3"}

`,
    false,
  );
  assert.equal(
    chunksOf(pieces).at(-1)!.choices[0].finish_reason,
    "content_filter",
  );
});

Deno.test("toGeminiRequest() carries json_schema to responseJsonSchema in Gemini's subset, and json_object to JSON mode", () => {
  const config = (response_format: unknown) =>
    toGeminiRequest(
      chat({
        model: "m",
        messages: [{ role: "user", content: "Hi" }],
        response_format,
      }),
      "m",
    ).body.generationConfig;
  assert.deepEqual(
    config({
      type: "json_schema",
      json_schema: {
        name: "pick",
        description: "One choice",
        strict: true,
        schema: {
          $schema: "http://json-schema.org/draft-07/schema#",
          type: "object",
          properties: { kind: { type: "string", const: "a" } },
          required: ["kind"],
          additionalProperties: false,
        },
      },
    }),
    {
      responseMimeType: "application/json",
      responseJsonSchema: {
        type: "object",
        properties: { kind: { type: "string", enum: ["a"] } },
        required: ["kind"],
        additionalProperties: false,
        description: "One choice",
      },
    },
  );
  assert.deepEqual(config({ type: "json_object" }), {
    responseMimeType: "application/json",
  });
  assert.equal(config({ type: "text" }), undefined);
  assert.throws(
    () =>
      config({
        type: "json_schema",
        json_schema: {
          name: "x",
          schema: { type: "string", pattern: "^a+$" },
        },
      }),
    (error: unknown) =>
      error instanceof TranslationError &&
      error.param === "response_format.json_schema.schema.pattern",
  );
});

Deno.test("toGeminiRequest() translates reasoning_effort to a thinking level on Gemini 3 and a budget on Gemini 2.5", () => {
  const thinking = (reasoning_effort: string, upstream: string) =>
    toGeminiRequest(
      chat({
        model: "m",
        messages: [{ role: "user", content: "Hi" }],
        reasoning_effort,
      }),
      upstream,
    ).body.generationConfig?.thinkingConfig;
  assert.deepEqual(thinking("low", "gemini-3-pro-preview"), {
    thinkingLevel: "low",
  });
  assert.deepEqual(thinking("high", "gemini-2.5-pro"), {
    thinkingBudget: 24576,
  });
  assert.deepEqual(thinking("none", "gemini-2.5-pro"), { thinkingBudget: 0 });
  for (
    const [effort, upstream] of [["xhigh", "gemini-2.5-pro"], [
      "none",
      "gemini-3-pro-preview",
    ]]
  ) {
    assert.throws(
      () => thinking(effort, upstream),
      (error: unknown) =>
        error instanceof TranslationError &&
        error.param === "reasoning_effort",
    );
  }
});

Deno.test("toGeminiRequest() refuses every field Gemini cannot carry, naming it", () => {
  const messages = [{ role: "user", content: "Hi" }];
  const tools = [{ type: "function", function: { name: "f" } }];
  const refusedFields: [Record<string, unknown>, string][] = [
    [{ tools, parallel_tool_calls: false }, "parallel_tool_calls"],
    [{ logit_bias: { "1": -100 } }, "logit_bias"],
    [{ logprobs: true }, "logprobs"],
    [{ verbosity: "high" }, "verbosity"],
    [{ modalities: ["audio"] }, "modalities"],
    [
      { web_search_options: { search_context_size: "low" } },
      "web_search_options",
    ],
    [{ functions: [{ name: "f" }] }, "functions"],
    [{ safety_settings: [] }, "safety_settings"],
    [{ n: 3 }, "n"],
  ];
  for (const [fields, param] of refusedFields) {
    assert.throws(
      () => toGeminiRequest(chat({ model: "m", messages, ...fields }), "m"),
      (error: unknown) =>
        error instanceof TranslationError && error.param === param &&
        error.message.includes(`"${param}"`),
      JSON.stringify(fields),
    );
  }
  const passing = toGeminiRequest(
    chat({
      model: "m",
      messages,
      tools,
      parallel_tool_calls: true,
      user: "u",
      safety_identifier: "s",
      metadata: { a: "b" },
      store: false,
      service_tier: "flex",
      prompt_cache_key: "k",
    }),
    "m",
  );
  assert.equal(passing.body.contents.length, 1);
});

/**
 * Chat completions translated to Anthropic Messages and to Gemini
 * generateContent, end to end: the OpenAI SDK is the client, the simulator
 * the upstream. Each test checks the translated upstream request (as the
 * simulator received it) and the translated answer, streamed and not.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import { type Harness, startHarness } from "./_gateway_harness.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

interface Target {
  name: string;
  model: string;
  provider: "anthropic" | "gemini";
}

const TARGETS: readonly Target[] = [
  { name: "Anthropic", model: "claude-haiku-4-5", provider: "anthropic" },
  { name: "Gemini", model: "gemini-2.5-pro", provider: "gemini" },
];

/** A 1×1 PNG. */
const PNG_BASE64 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

const WEATHER_PARAMETERS = {
  type: "object",
  properties: { city: { type: "string" }, days: { type: "integer" } },
  required: ["city", "days"],
};

const WEATHER_TOOL: ChatCompletionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: WEATHER_PARAMETERS,
  },
};

/** A chat answer, read the same way whether it was streamed or not. */
interface Outcome {
  content: string | null;
  toolCalls: {
    id: string;
    name: string;
    arguments: string;
    fragments: number;
  }[];
  finishReason: string | null;
  usage: OpenAI.CompletionUsage | null | undefined;
  /** Streamed only: every chunk received. */
  chunks: OpenAI.ChatCompletionChunk[];
}

function client(h: Harness): OpenAI {
  return new OpenAI({
    baseURL: `${h.url}/v1`,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
}

async function complete(
  h: Harness,
  params: ChatCompletionCreateParamsNonStreaming,
  stream: boolean,
  includeUsage = true,
): Promise<Outcome> {
  if (!stream) {
    const completion = await client(h).chat.completions.create(params);
    const message = completion.choices[0].message;
    return {
      content: message.content,
      toolCalls: (message.tool_calls ?? []).map((call) => {
        assert.equal(call.type, "function");
        const fn =
          (call as OpenAI.ChatCompletionMessageFunctionToolCall).function;
        return {
          id: call.id,
          name: fn.name,
          arguments: fn.arguments,
          fragments: 1,
        };
      }),
      finishReason: completion.choices[0].finish_reason,
      usage: completion.usage,
      chunks: [],
    };
  }
  const response = await client(h).chat.completions.create({
    ...params,
    stream: true,
    ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
  });
  const outcome: Outcome = {
    content: null,
    toolCalls: [],
    finishReason: null,
    usage: undefined,
    chunks: [],
  };
  for await (const chunk of response) {
    outcome.chunks.push(chunk);
    assert.equal(chunk.object, "chat.completion.chunk");
    assert.equal(chunk.model, params.model);
    if (chunk.usage) outcome.usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.delta.content) {
      outcome.content = (outcome.content ?? "") + choice.delta.content;
    }
    for (const call of choice.delta.tool_calls ?? []) {
      const slot = outcome.toolCalls[call.index] ??= {
        id: "",
        name: "",
        arguments: "",
        fragments: 0,
      };
      if (call.id) slot.id = call.id;
      if (call.function?.name) slot.name += call.function.name;
      if (call.function?.arguments !== undefined) {
        slot.arguments += call.function.arguments;
        slot.fragments++;
      }
    }
    if (choice.finish_reason) outcome.finishReason = choice.finish_reason;
  }
  return outcome;
}

/** The last upstream request, checked to be the target's translated call. */
function upstreamBody(h: Harness, target: Target, stream: boolean): Json {
  const request = h.sim.requests.at(-1)!;
  assert.equal(request.provider, target.provider);
  if (target.provider === "anthropic") {
    assert.equal(request.path, "/anthropic/v1/messages");
    const body = request.body as Json;
    assert.equal(body.model, target.model);
    assert.equal(body.stream, stream ? true : undefined);
    assert.equal(typeof body.max_tokens, "number");
    return body;
  }
  assert.equal(
    request.path,
    `/gemini/v1beta/models/${target.model}:${
      stream ? "streamGenerateContent" : "generateContent"
    }`,
  );
  assert.equal(request.query.alt, stream ? "sse" : undefined);
  return request.body;
}

for (const target of TARGETS) {
  Deno.test(`chat → ${target.name}: a system prompt, several turns and a data-URL image translate, streamed and not`, async () => {
    await using h = await startHarness();
    for (const stream of [false, true]) {
      const outcome = await complete(h, {
        model: target.model,
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "first question" },
          { role: "assistant", content: "first answer" },
          {
            role: "user",
            content: [
              { type: "text", text: "what is in this picture" },
              {
                type: "image_url",
                image_url: { url: `data:image/png;base64,${PNG_BASE64}` },
              },
            ],
          },
        ],
      }, stream);
      assert.equal(outcome.content, "Echo: what is in this picture");
      assert.equal(outcome.finishReason, "stop");
      assert.deepEqual(outcome.toolCalls, []);

      const body = upstreamBody(h, target, stream);
      if (target.provider === "anthropic") {
        assert.equal(body.system, "Be brief.");
        assert.deepEqual(body.messages, [
          { role: "user", content: "first question" },
          { role: "assistant", content: "first answer" },
          {
            role: "user",
            content: [
              { type: "text", text: "what is in this picture" },
              {
                type: "image",
                source: {
                  type: "base64",
                  media_type: "image/png",
                  data: PNG_BASE64,
                },
              },
            ],
          },
        ]);
      } else {
        assert.deepEqual(body.systemInstruction, {
          parts: [{ text: "Be brief." }],
        });
        assert.deepEqual(body.contents, [
          { role: "user", parts: [{ text: "first question" }] },
          { role: "model", parts: [{ text: "first answer" }] },
          {
            role: "user",
            parts: [
              { text: "what is in this picture" },
              { inlineData: { mimeType: "image/png", data: PNG_BASE64 } },
            ],
          },
        ]);
      }
      // The simulator bills the image from its size: the same turns without it
      // cost fewer prompt tokens, so the image made it upstream.
      const textOnly = await complete(h, {
        model: target.model,
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "first question" },
          { role: "assistant", content: "first answer" },
          { role: "user", content: "what is in this picture" },
        ],
      }, stream);
      assert.ok(
        outcome.usage!.prompt_tokens > textOnly.usage!.prompt_tokens,
        `stream=${stream}`,
      );
    }
  });

  Deno.test(`chat → ${target.name}: tool definitions go upstream and a tool call comes back with finish_reason tool_calls, streamed and not`, async () => {
    await using h = await startHarness();
    for (const stream of [false, true]) {
      const outcome = await complete(h, {
        model: target.model,
        messages: [{ role: "user", content: "please call tool get_weather" }],
        tools: [WEATHER_TOOL],
      }, stream);
      assert.equal(outcome.finishReason, "tool_calls", `stream=${stream}`);
      assert.equal(outcome.toolCalls.length, 1);
      const [call] = outcome.toolCalls;
      assert.equal(call.name, "get_weather");
      assert.ok(call.id.length > 0);
      // Fragments of a streamed call join into valid JSON that fits the schema.
      const args = JSON.parse(call.arguments);
      assert.equal(typeof args.city, "string");
      assert.ok(Number.isInteger(args.days));
      if (stream && target.provider === "anthropic") {
        // The simulator splits Anthropic's input_json_delta in pieces.
        assert.ok(call.fragments > 1, `fragments: ${call.fragments}`);
      }

      const body = upstreamBody(h, target, stream);
      if (target.provider === "anthropic") {
        assert.deepEqual(body.tools, [{
          name: "get_weather",
          description: "Weather for a city",
          input_schema: WEATHER_PARAMETERS,
        }]);
      } else {
        assert.deepEqual(body.tools, [{
          functionDeclarations: [{
            name: "get_weather",
            description: "Weather for a city",
            parametersJsonSchema: WEATHER_PARAMETERS,
          }],
        }]);
      }
    }
  });

  Deno.test(`chat → ${target.name}: a forcing tool_choice translates to the provider's own`, async () => {
    await using h = await startHarness();
    const outcome = await complete(h, {
      model: target.model,
      messages: [{ role: "user", content: "weather in Oslo" }],
      tools: [WEATHER_TOOL],
      tool_choice: "required",
    }, false);
    assert.equal(outcome.finishReason, "tool_calls");
    assert.equal(outcome.toolCalls[0].name, "get_weather");
    const body = upstreamBody(h, target, false);
    if (target.provider === "anthropic") {
      assert.deepEqual(body.tool_choice, { type: "any" });
    } else {
      assert.deepEqual(body.toolConfig, {
        functionCallingConfig: { mode: "ANY" },
      });
    }
  });

  Deno.test(`chat → ${target.name}: a tool result on the next turn goes upstream as the provider's tool result, streamed and not`, async () => {
    await using h = await startHarness();
    for (const stream of [false, true]) {
      const outcome = await complete(h, {
        model: target.model,
        tools: [WEATHER_TOOL],
        messages: [
          { role: "user", content: "call tool get_weather for Oslo" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{
              id: "call_abc",
              type: "function",
              function: {
                name: "get_weather",
                arguments: '{"city":"Oslo","days":1}',
              },
            }],
          },
          { role: "tool", tool_call_id: "call_abc", content: "sunny" },
        ],
      }, stream);
      // The simulator echoes the result as the provider received it: Gemini
      // takes an object, so a plain-text result travels under `result`.
      assert.equal(
        outcome.content,
        target.provider === "anthropic"
          ? "Tool get_weather returned: sunny"
          : 'Tool get_weather returned: {"result":"sunny"}',
      );
      assert.equal(outcome.finishReason, "stop");

      const body = upstreamBody(h, target, stream);
      if (target.provider === "anthropic") {
        assert.deepEqual(body.messages.slice(1), [
          {
            role: "assistant",
            content: [{
              type: "tool_use",
              id: "call_abc",
              name: "get_weather",
              input: { city: "Oslo", days: 1 },
            }],
          },
          {
            role: "user",
            content: [{
              type: "tool_result",
              tool_use_id: "call_abc",
              content: "sunny",
            }],
          },
        ]);
      } else {
        assert.equal(body.contents[1].role, "model");
        assert.deepEqual(body.contents[1].parts[0].functionCall, {
          name: "get_weather",
          args: { city: "Oslo", days: 1 },
        });
        assert.deepEqual(body.contents[2], {
          role: "user",
          parts: [{
            functionResponse: {
              name: "get_weather",
              response: { result: "sunny" },
            },
          }],
        });
      }
    }
  });

  Deno.test(`chat → ${target.name}: max_tokens goes upstream and a cut reply stops for length, streamed and not`, async () => {
    await using h = await startHarness({
      sim: {
        behaviour: { reply: "a reply far longer than two tokens can hold" },
      },
    });
    for (const stream of [false, true]) {
      const outcome = await complete(h, {
        model: target.model,
        messages: [{ role: "user", content: "say a lot" }],
        max_tokens: 2,
      }, stream);
      assert.equal(outcome.finishReason, "length", `stream=${stream}`);
      assert.equal(outcome.content, "a reply ");
      assert.equal(outcome.usage!.completion_tokens, 2);
      const body = upstreamBody(h, target, stream);
      if (target.provider === "anthropic") assert.equal(body.max_tokens, 2);
      else assert.equal(body.generationConfig.maxOutputTokens, 2);
    }
  });

  Deno.test(`chat → ${target.name}: usage with cached tokens translates, streamed and not`, async () => {
    await using h = await startHarness({
      sim: {
        behaviour: {
          usage: { inputTokens: 1000, outputTokens: 7, cachedTokens: 400 },
        },
      },
    });
    for (const stream of [false, true]) {
      const outcome = await complete(h, {
        model: target.model,
        messages: [{ role: "user", content: "count my tokens" }],
      }, stream);
      assert.equal(outcome.usage?.prompt_tokens, 1000, `stream=${stream}`);
      assert.equal(outcome.usage?.completion_tokens, 7);
      assert.equal(outcome.usage?.total_tokens, 1007);
      assert.equal(outcome.usage?.prompt_tokens_details?.cached_tokens, 400);
    }
  });

  Deno.test(`chat → ${target.name}: the final usage chunk has empty choices with include_usage and is absent without it`, async () => {
    await using h = await startHarness();
    const withUsage = await complete(
      h,
      {
        model: target.model,
        messages: [{ role: "user", content: "hello" }],
      },
      true,
      true,
    );
    const last = withUsage.chunks.at(-1)!;
    assert.deepEqual(last.choices, []);
    assert.ok(last.usage!.completion_tokens > 0);
    for (const chunk of withUsage.chunks.slice(0, -1)) {
      assert.equal(chunk.usage ?? null, null);
      assert.equal(chunk.choices.length, 1);
    }

    const withoutUsage = await complete(
      h,
      {
        model: target.model,
        messages: [{ role: "user", content: "hello" }],
      },
      true,
      false,
    );
    assert.equal(withoutUsage.content, "Echo: hello");
    assert.ok(withoutUsage.chunks.length > 0);
    for (const chunk of withoutUsage.chunks) {
      assert.equal(chunk.choices.length, 1);
      assert.equal(chunk.usage ?? null, null);
    }
  });
}

Deno.test("a translated stream ends with data: [DONE] on the wire", async () => {
  await using h = await startHarness();
  for (const target of TARGETS) {
    const response = await h.post("/v1/chat/completions", {
      model: target.model,
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(response.status, 200);
    const text = await response.text();
    assert.ok(text.trimEnd().endsWith("data: [DONE]"), text);
    for (const frame of text.trim().split("\n\n")) {
      assert.match(frame, /^data: /);
    }
  }
});

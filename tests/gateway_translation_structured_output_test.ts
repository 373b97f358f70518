/**
 * Structured output on the translated chat routes, seen from the upstream's
 * side: a loopback upstream records every body the gateway sends, so these
 * tests check that a chat caller's JSON schema reaches Anthropic as
 * `output_config.format` and Gemini as `responseJsonSchema` (before, the
 * Anthropic translation dropped it and a real Claude answered prose), that
 * the JSON answer comes back as the message content, streamed and not, and
 * that what a translator cannot carry is a 400 naming the field which never
 * reaches the upstream.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { startHarness } from "./_gateway_harness.ts";

interface Recorded {
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

const ANSWER = '{"city":"Paris","days":3}';

const SCHEMA = {
  type: "object",
  properties: { city: { type: "string" }, days: { type: "integer" } },
  required: ["city", "days"],
  additionalProperties: false,
};

const RESPONSE_FORMAT = {
  type: "json_schema" as const,
  json_schema: { name: "forecast", strict: true, schema: SCHEMA },
};

function sse(events: [string | undefined, unknown][]): Response {
  return new Response(
    events.map(([event, data]) =>
      `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`
    ).join(""),
    { headers: { "content-type": "text/event-stream" } },
  );
}

function anthropicAnswer(stream: boolean): Response {
  const message = {
    id: "msg_rec",
    type: "message",
    role: "assistant",
    model: "recorded",
    content: [{ type: "text", text: ANSWER }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 12, output_tokens: 9 },
  };
  if (!stream) return Response.json(message);
  return sse([
    ["message_start", {
      type: "message_start",
      message: {
        ...message,
        content: [],
        stop_reason: null,
        usage: { input_tokens: 12, output_tokens: 1 },
      },
    }],
    ["content_block_start", {
      type: "content_block_start",
      index: 0,
      content_block: { type: "text", text: "" },
    }],
    ...[ANSWER.slice(0, 10), ANSWER.slice(10)].map((
      text,
    ): [string, unknown] => [
      "content_block_delta",
      {
        type: "content_block_delta",
        index: 0,
        delta: { type: "text_delta", text },
      },
    ]),
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    ["message_delta", {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: 9 },
    }],
    ["message_stop", { type: "message_stop" }],
  ]);
}

function geminiAnswer(stream: boolean): Response {
  const chunk = (text: string, final: boolean) => ({
    candidates: [{
      content: { role: "model", parts: [{ text }] },
      ...(final ? { finishReason: "STOP" } : {}),
      index: 0,
    }],
    usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 9 },
    modelVersion: "recorded",
  });
  if (!stream) return Response.json(chunk(ANSWER, true));
  return sse([
    [undefined, chunk(ANSWER.slice(0, 10), false)],
    [undefined, chunk(ANSWER.slice(10), true)],
  ]);
}

/** A loopback Anthropic and Gemini that record each request and answer {@link ANSWER}. */
function startRecorder() {
  const requests: Recorded[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const url = new URL(request.url);
      const body = await request.json();
      requests.push({
        path: url.pathname,
        headers: Object.fromEntries(request.headers),
        body,
      });
      if (url.pathname.endsWith("/v1/messages")) {
        return anthropicAnswer(body.stream === true);
      }
      return geminiAnswer(url.pathname.includes(":streamGenerateContent"));
    },
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  return {
    requests,
    env: { ANTHROPIC_BASE_URL: base, GEMINI_BASE_URL: base },
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

async function setup() {
  const recorder = startRecorder();
  const h = await startHarness({ env: recorder.env });
  const client = new OpenAI({
    baseURL: `${h.url}/v1`,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
  return {
    recorder,
    h,
    client,
    async [Symbol.asyncDispose]() {
      await h.close();
      await recorder[Symbol.asyncDispose]();
    },
  };
}

/** The answer's text, streamed or not. */
async function ask(
  client: OpenAI,
  model: string,
  stream: boolean,
): Promise<string | null> {
  const params = {
    model,
    messages: [{ role: "user" as const, content: "Forecast for Paris" }],
    response_format: RESPONSE_FORMAT,
  };
  if (!stream) {
    const completion = await client.chat.completions.create(params);
    return completion.choices[0].message.content;
  }
  let text = "";
  const chunks = await client.chat.completions.create({
    ...params,
    stream: true,
  });
  for await (const chunk of chunks) {
    text += chunk.choices[0]?.delta?.content ?? "";
  }
  return text;
}

Deno.test("a Claude chat call's JSON schema reaches Anthropic as output_config.format and its JSON comes back as content", async () => {
  await using t = await setup();
  for (const stream of [false, true]) {
    const content = await ask(t.client, "claude-haiku-4-5", stream);
    assert.deepEqual(JSON.parse(content ?? ""), { city: "Paris", days: 3 });
    const sent = t.recorder.requests.at(-1)!;
    assert.equal(sent.path, "/v1/messages");
    assert.deepEqual(sent.body.output_config, {
      format: { type: "json_schema", schema: SCHEMA },
    });
    // output_config is generally available: no beta header is needed.
    assert.equal(sent.headers["anthropic-beta"], undefined);
    assert.equal(sent.body.stream, stream ? true : undefined);
  }
});

Deno.test("a chat call to a Gemini model with a JSON schema reaches Gemini as responseMimeType and responseJsonSchema", async () => {
  await using t = await setup();
  for (const stream of [false, true]) {
    const content = await ask(t.client, "gemini-2.5-pro", stream);
    assert.deepEqual(JSON.parse(content ?? ""), { city: "Paris", days: 3 });
    const sent = t.recorder.requests.at(-1)!;
    assert.match(
      sent.path,
      stream ? /:streamGenerateContent$/ : /:generateContent$/,
    );
    const config = sent.body.generationConfig as Record<string, unknown>;
    assert.equal(config.responseMimeType, "application/json");
    assert.deepEqual(config.responseJsonSchema, SCHEMA);
  }
});

Deno.test("what a translator cannot carry is a 400 naming the field, in the chat error shape, and never reaches the upstream", async () => {
  await using t = await setup();
  const cases: [string, Record<string, unknown>, string][] = [
    [
      "claude-sonnet-5-5",
      { response_format: { type: "json_object" } },
      "response_format.type",
    ],
    ["claude-sonnet-5-5", { seed: 42 }, "seed"],
    ["claude-opus-4-5", { logprobs: true }, "logprobs"],
    ["claude-opus-4-5", { temperature: 1.8 }, "temperature"],
    ["claude-haiku-4-5", { top_k: 3 }, "top_k"],
    [
      "claude-haiku-4-5",
      {
        response_format: {
          type: "json_schema",
          json_schema: {
            name: "x",
            schema: {
              type: "object",
              properties: { days: { type: "integer", maximum: 14 } },
            },
          },
        },
      },
      "response_format.json_schema.schema.properties.days.maximum",
    ],
    ["gemini-2.5-pro", { logit_bias: { "50256": -100 } }, "logit_bias"],
    [
      "gemini-3-pro-preview",
      {
        tools: [{ type: "function", function: { name: "f" } }],
        parallel_tool_calls: false,
      },
      "parallel_tool_calls",
    ],
    [
      "gemini-2.5-pro",
      {
        response_format: {
          type: "json_schema",
          json_schema: {
            name: "x",
            schema: { type: "string", pattern: "^[A-Z]" },
          },
        },
      },
      "response_format.json_schema.schema.pattern",
    ],
  ];
  for (const [model, fields, param] of cases) {
    const response = await t.h.post("/v1/chat/completions", {
      model,
      messages: [{ role: "user", content: "Hi" }],
      ...fields,
    });
    const body = await response.json();
    assert.equal(response.status, 400, JSON.stringify(fields));
    assert.equal(body.error.param, param);
    assert.equal(body.error.type, "invalid_request_error");
    assert.match(body.error.message, /Cannot|JSON schema/);
  }
  assert.equal(t.recorder.requests.length, 0, "nothing reached the upstream");
});

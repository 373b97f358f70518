/**
 * A provider key quoted in an answer never reaches the caller, on any route,
 * streamed or not. A loopback provider streams text quoting the key it was
 * sent plainly, JSON-escaped (`sk\u002d…`), cut across two TCP writes inside
 * one event, and split across two events (two text deltas); its whole
 * answers quote it plainly and JSON-escaped. Read through the official SDKs
 * (OpenAI chat and Responses, Anthropic Messages, Google GenAI), passed
 * through and translated, the text the SDK puts together names the key by
 * its id each time and holds none of it past its fixed start.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import { startHarness } from "./_gateway_harness.ts";

const KEYS = {
  openai: "sk-proj-" + "o1".repeat(24),
  anthropic: "sk-ant-api03-" + "a2".repeat(40),
  gemini: "AIzaSy" + "g3".repeat(16) + "g",
};

/** The secret the request was sent with, by the header each provider reads. */
function secretOf(request: Request): string {
  return request.headers.get("x-api-key") ??
    request.headers.get("x-goog-api-key") ??
    (request.headers.get("authorization") ?? "").replace(/^Bearer /, "");
}

/**
 * The text pieces a provider streams, one event each, as raw JSON string
 * bodies (quoted): the key plainly, JSON-escaped, and split over two events.
 */
function pieces(secret: string): string[] {
  const quoted = (text: string) => JSON.stringify(text);
  const escaped = quoted(`b ${secret} `).replace(
    secret[2],
    `\\u00${secret.charCodeAt(2).toString(16)}`,
  );
  return [
    quoted(`a ${secret} `),
    escaped,
    quoted(`c ${secret.slice(0, 14)}`),
    quoted(`${secret.slice(14)} d`),
  ];
}

/** The SSE frames of one stream, each text piece in the provider's event. */
function frames(path: string, secret: string): string[] {
  const texts = pieces(secret);
  const sse = (data: string, event?: string) =>
    `${event ? `event: ${event}\n` : ""}data: ${data}\n\n`;
  if (path.endsWith("/messages")) {
    return [
      sse(
        JSON.stringify({
          type: "message_start",
          message: {
            id: "msg_1",
            type: "message",
            role: "assistant",
            model: "m",
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 10, output_tokens: 1 },
          },
        }),
        "message_start",
      ),
      sse(
        `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
        "content_block_start",
      ),
      ...texts.map((text) =>
        sse(
          `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${text}}}`,
          "content_block_delta",
        )
      ),
      sse(`{"type":"content_block_stop","index":0}`, "content_block_stop"),
      sse(
        `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":20}}`,
        "message_delta",
      ),
      sse(`{"type":"message_stop"}`, "message_stop"),
    ];
  }
  if (path.endsWith("/responses")) {
    const response = (status: string, usage: unknown) =>
      `{"id":"resp_1","object":"response","created_at":1,"status":"${status}","model":"m","output":[],"usage":${
        JSON.stringify(usage)
      }}`;
    return [
      sse(
        `{"type":"response.created","sequence_number":0,"response":${
          response("in_progress", null)
        }}`,
        "response.created",
      ),
      ...texts.map((text, i) =>
        sse(
          `{"type":"response.output_text.delta","sequence_number":${
            i + 1
          },"item_id":"msg_1","output_index":0,"content_index":0,"delta":${text}}`,
          "response.output_text.delta",
        )
      ),
      sse(
        `{"type":"response.completed","sequence_number":9,"response":${
          response("completed", {
            input_tokens: 10,
            output_tokens: 20,
            total_tokens: 30,
          })
        }}`,
        "response.completed",
      ),
    ];
  }
  if (path.includes("streamGenerateContent")) {
    return [
      ...texts.map((text) =>
        sse(
          `{"candidates":[{"content":{"role":"model","parts":[{"text":${text}}]},"index":0}]}`,
        )
      ),
      sse(
        `{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":20,"totalTokenCount":30}}`,
      ),
    ];
  }
  return [
    ...texts.map((text) =>
      sse(
        `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":${text}},"finish_reason":null}]}`,
      )
    ),
    sse(
      `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
    ),
    sse(
      `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30}}`,
    ),
    sse("[DONE]"),
  ];
}

/**
 * A non-streamed answer in the provider's shape whose text quotes the key
 * plainly, then JSON-escaped: `a <key> b <key> d`.
 */
function wholeAnswer(path: string, secret: string): Response {
  const [plain, escaped] = pieces(secret);
  // Both quoted pieces, joined into one JSON string: "a <key> b <key> d".
  const text = `${plain.slice(0, -1)}${escaped.slice(1, -1)}d"`;
  let body: string;
  if (path.endsWith("/messages")) {
    body =
      `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":${text}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":20}}`;
  } else if (path.endsWith("/responses")) {
    body =
      `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"m","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":${text},"annotations":[]}]}],"usage":{"input_tokens":10,"output_tokens":20,"total_tokens":30}}`;
  } else if (path.includes("generateContent")) {
    body =
      `{"candidates":[{"content":{"role":"model","parts":[{"text":${text}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":20,"totalTokenCount":30}}`;
  } else {
    body =
      `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":${text}},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30}}`;
  }
  return new Response(body, {
    headers: { "content-type": "application/json" },
  });
}

/**
 * A provider streaming {@linkcode frames}; the frame holding the plain key
 * is written in two parts, cut inside the key, 20 ms apart.
 */
function startQuotingUpstream(): { base: string } & AsyncDisposable {
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    async (request) => {
      const path = new URL(request.url).pathname;
      const asked = await request.json() as { stream?: boolean };
      const secret = secretOf(request);
      if (!asked.stream && !path.includes("streamGenerateContent")) {
        return wholeAnswer(path, secret);
      }
      const all = frames(path, secret);
      const encoder = new TextEncoder();
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          for (const frame of all) {
            const at = frame.indexOf(secret);
            if (at === -1) {
              controller.enqueue(encoder.encode(frame));
              continue;
            }
            const cut = at + secret.length / 2;
            controller.enqueue(encoder.encode(frame.slice(0, cut)));
            await new Promise((resolve) => setTimeout(resolve, 20));
            controller.enqueue(encoder.encode(frame.slice(cut)));
          }
          controller.close();
        },
      });
      return new Response(body, {
        headers: { "content-type": "text/event-stream" },
      });
    },
  );
  return {
    base: `http://127.0.0.1:${server.addr.port}`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** Asserts the caller's text names the key `times` times and holds none of its secret. */
function assertScrubbed(
  text: string,
  provider: keyof typeof KEYS,
  times = 3,
) {
  const secret = KEYS[provider];
  assert.ok(!text.includes(secret.slice(0, 8)), text);
  const marks = text.match(
    new RegExp(`\\[key ${provider}:[0-9a-f]{8}\\]`, "g"),
  );
  assert.equal(marks?.length, times, text);
  const mark = String.raw`\[key [^\]]+\]`;
  assert.match(
    text,
    new RegExp(
      times === 3
        ? `^a ${mark} b ${mark} c ${mark} d$`
        : `^a ${mark} b ${mark} d$`,
    ),
  );
}

/** A gateway whose providers all quote its keys, and the SDKs pointed at it. */
async function startQuotedGateway(): Promise<
  {
    openai: OpenAI;
    anthropic: Anthropic;
    gemini: GoogleGenAI;
  } & AsyncDisposable
> {
  const upstream = startQuotingUpstream();
  const h = await startHarness({
    env: {
      OPENAI_BASE_URL: upstream.base,
      ANTHROPIC_BASE_URL: upstream.base,
      GEMINI_BASE_URL: upstream.base,
      OPENAI_API_KEYS: KEYS.openai,
      ANTHROPIC_API_KEYS: KEYS.anthropic,
      GEMINI_API_KEYS: KEYS.gemini,
    },
  });
  return {
    openai: new OpenAI({
      baseURL: `${h.url}/v1`,
      apiKey: h.caller.key,
      maxRetries: 0,
    }),
    anthropic: new Anthropic({
      baseURL: h.url,
      apiKey: h.caller.key,
      maxRetries: 0,
    }),
    gemini: new GoogleGenAI({
      apiKey: h.caller.key,
      httpOptions: { baseUrl: h.url },
    }),
    [Symbol.asyncDispose]: async () => {
      await h[Symbol.asyncDispose]();
      await upstream[Symbol.asyncDispose]();
    },
  };
}

const HELLO = [{ role: "user" as const, content: "hello" }];

/** A chat model of each provider: passed through to OpenAI, translated to Anthropic and Gemini. */
const CHAT_MODELS = [
  ["gpt-4o-mini", "openai"],
  ["claude-haiku-4-5", "anthropic"],
  ["gemini-2.5-pro", "gemini"],
] as const;

Deno.test("a provider key quoted in a stream, plainly, JSON-escaped, cut across reads or split across events, reaches no caller on any route", async () => {
  await using gateway = await startQuotedGateway();
  const { openai, anthropic, gemini } = gateway;

  // Chat: passed through to OpenAI, translated from Anthropic and Gemini.
  for (const [model, provider] of CHAT_MODELS) {
    const stream = await openai.chat.completions.create({
      model,
      messages: HELLO,
      max_completion_tokens: 50,
      stream: true,
    });
    let text = "";
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? "";
    }
    assertScrubbed(text, provider);
  }

  const messages = anthropic.messages.stream({
    model: "claude-haiku-4-5",
    max_tokens: 50,
    messages: HELLO,
  });
  let said = "";
  messages.on("text", (delta) => said += delta);
  await messages.finalMessage();
  assertScrubbed(said, "anthropic");

  const responses = await openai.responses.create({
    model: "gpt-4o-mini",
    input: "hello",
    max_output_tokens: 50,
    stream: true,
  });
  let answered = "";
  for await (const event of responses) {
    if (event.type === "response.output_text.delta") answered += event.delta;
  }
  assertScrubbed(answered, "openai");

  const generated = await gemini.models.generateContentStream({
    model: "gemini-2.5-computer-use-preview",
    contents: "hello",
    config: { maxOutputTokens: 50 },
  });
  let written = "";
  for await (const chunk of generated) written += chunk.text ?? "";
  assertScrubbed(written, "gemini");
});

Deno.test("a provider key quoted in a whole answer, plainly or JSON-escaped, reaches no caller on any route", async () => {
  await using gateway = await startQuotedGateway();
  const { openai, anthropic, gemini } = gateway;
  for (const [model, provider] of CHAT_MODELS) {
    const answer = await openai.chat.completions.create({
      model,
      messages: HELLO,
      max_completion_tokens: 50,
    });
    assertScrubbed(answer.choices[0].message.content ?? "", provider, 2);
  }
  const message = await anthropic.messages.create({
    model: "claude-haiku-4-5",
    max_tokens: 50,
    messages: HELLO,
  });
  const block = message.content[0];
  assertScrubbed(block.type === "text" ? block.text : "", "anthropic", 2);
  const response = await openai.responses.create({
    model: "gpt-4o-mini",
    input: "hello",
    max_output_tokens: 50,
  });
  assertScrubbed(response.output_text, "openai", 2);
  const generated = await gemini.models.generateContent({
    model: "gemini-2.5-computer-use-preview",
    contents: "hello",
    config: { maxOutputTokens: 50 },
  });
  assertScrubbed(generated.text ?? "", "gemini", 2);
});

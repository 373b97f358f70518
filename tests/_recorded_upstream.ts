/**
 * A loopback upstream that answers every provider's path with payloads in
 * the shape the real APIs send (text "hi" and a usage object the test
 * chooses), for tests of what real provider payloads do to billing. Unlike
 * the simulator, it puts the usage object on the wire as given, so a test
 * can send what a provider really sends (reasoning beside completion tokens)
 * or what a broken one might (strings, floats, negative counts).
 */

/** Usage objects in each wire format, as the provider would put them. */
export interface RecordedUsage {
  /** OpenAI chat convention (`usage` of openai, xai, openrouter). */
  chat?: unknown;
  /** Anthropic Messages (`usage`; split over message_start and message_delta when streamed). */
  anthropic?: unknown;
  /** Gemini `usageMetadata`. */
  gemini?: unknown;
  /** OpenAI Responses `usage`. */
  responses?: unknown;
}

/** A running recorded upstream. */
export interface RecordedUpstream extends AsyncDisposable {
  /** `P_BASE_URL` for every provider, pointing here. */
  env: Record<string, string>;
  /** The usage the next answers carry. */
  usage: RecordedUsage;
}

function sse(events: [string | undefined, unknown][]): string {
  return events.map(([event, data]) =>
    `${event ? `event: ${event}\n` : ""}data: ${
      typeof data === "string" ? data : JSON.stringify(data)
    }\n\n`
  ).join("");
}

function chat(usage: unknown, stream: boolean): Response {
  const base = { id: "chatcmpl-rec", created: 1, model: "recorded" };
  if (!stream) {
    return Response.json({
      ...base,
      object: "chat.completion",
      choices: [{
        index: 0,
        message: { role: "assistant", content: "hi" },
        finish_reason: "stop",
      }],
      usage,
    });
  }
  const chunk = { ...base, object: "chat.completion.chunk" };
  return streamed(sse([
    [undefined, {
      ...chunk,
      choices: [{ index: 0, delta: { role: "assistant", content: "hi" } }],
    }],
    [undefined, {
      ...chunk,
      choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
    }],
    [undefined, { ...chunk, choices: [], usage }],
    [undefined, "[DONE]"],
  ]));
}

function anthropic(usage: unknown, stream: boolean): Response {
  const message = {
    id: "msg_rec",
    type: "message",
    role: "assistant",
    model: "recorded",
    content: [{ type: "text", text: "hi" }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage,
  };
  if (!stream) return Response.json(message);
  const { output_tokens, ...input } = (usage ?? {}) as Record<string, unknown>;
  return streamed(sse([
    ["message_start", {
      type: "message_start",
      message: { ...message, content: [], stop_reason: null, usage: input },
    }],
    ["content_block_start", {
      type: "content_block_start",
      index: 0,
      content_block: { type: "text", text: "" },
    }],
    ["content_block_delta", {
      type: "content_block_delta",
      index: 0,
      delta: { type: "text_delta", text: "hi" },
    }],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    ["message_delta", {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens },
    }],
    ["message_stop", { type: "message_stop" }],
  ]));
}

function gemini(usage: unknown, stream: boolean): Response {
  const answer = (final: boolean) => ({
    candidates: [{
      content: { role: "model", parts: [{ text: "hi" }] },
      ...(final ? { finishReason: "STOP" } : {}),
      index: 0,
    }],
    ...(final ? { usageMetadata: usage } : {}),
    modelVersion: "recorded",
  });
  if (!stream) return Response.json(answer(true));
  return streamed(sse([[undefined, answer(false)], [undefined, answer(true)]]));
}

function responses(usage: unknown, stream: boolean): Response {
  const response = {
    id: "resp_rec",
    object: "response",
    status: "completed",
    model: "recorded",
    output: [{
      type: "message",
      id: "msg_rec",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: "hi", annotations: [] }],
    }],
    usage,
  };
  if (!stream) return Response.json(response);
  return streamed(sse([
    ["response.created", {
      type: "response.created",
      response: { ...response, status: "in_progress", output: [], usage: null },
    }],
    ["response.output_text.delta", {
      type: "response.output_text.delta",
      delta: "hi",
    }],
    ["response.completed", { type: "response.completed", response }],
  ]));
}

function streamed(text: string): Response {
  return new Response(text, {
    headers: { "content-type": "text/event-stream" },
  });
}

/**
 * Starts the recorded upstream on loopback.
 *
 * @returns Its `P_BASE_URL` variables and the usage to answer with.
 */
export function startRecordedUpstream(): RecordedUpstream {
  const state: { usage: RecordedUsage } = { usage: {} };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const url = new URL(request.url);
      const body = await request.json().catch(() => ({}));
      const path = url.pathname;
      if (path.endsWith("/v1/messages")) {
        return anthropic(state.usage.anthropic, body.stream === true);
      }
      if (path.includes(":streamGenerateContent")) {
        return gemini(state.usage.gemini, true);
      }
      if (path.includes(":generateContent")) {
        return gemini(state.usage.gemini, false);
      }
      if (path.endsWith("/responses")) {
        return responses(state.usage.responses, body.stream === true);
      }
      return chat(state.usage.chat, body.stream === true);
    },
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  return {
    env: {
      OPENAI_BASE_URL: `${base}/v1`,
      XAI_BASE_URL: `${base}/v1`,
      OPENROUTER_BASE_URL: `${base}/api/v1`,
      ANTHROPIC_BASE_URL: base,
      GEMINI_BASE_URL: base,
    },
    get usage() {
      return state.usage;
    },
    set usage(usage: RecordedUsage) {
      state.usage = usage;
    },
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

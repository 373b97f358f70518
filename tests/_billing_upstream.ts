/**
 * A loopback provider that bills what a request lets it: its answers report
 * as output the output limit the request carried (or, with none, a provider
 * maximum far above any catalog's), and any extra usage a test gives it (a
 * server tool's requests, a tier, a router's `cost`), in the shape each
 * provider reports. Every body it received is kept, so a test can see what
 * reached the provider.
 */

/** The output a provider generates for a request without a limit: more than any catalog allows. */
export const PROVIDER_MAXIMUM = 1_000_000;

/** A request as the upstream received it. */
export interface Received {
  path: string;
  headers: Headers;
  body: Record<string, unknown>;
}

/** The running upstream. */
export interface BillingUpstream extends AsyncDisposable {
  /** Its base URL, `http://127.0.0.1:port`. */
  base: string;
  /** Every request it received, in order. */
  received: Received[];
  /** Extra fields merged into every answer's usage object. */
  extraUsage: Record<string, unknown>;
  /** Extra top-level fields of every answer. */
  extraAnswer: Record<string, unknown>;
}

function limitOf(body: Record<string, unknown>, path: string): number {
  if (path.includes("generateContent")) {
    const config = body.generationConfig as
      | { maxOutputTokens?: number }
      | undefined;
    return config?.maxOutputTokens ?? PROVIDER_MAXIMUM;
  }
  const limit = body.max_completion_tokens ?? body.max_tokens ??
    body.max_output_tokens;
  return typeof limit === "number" ? limit : PROVIDER_MAXIMUM;
}

/**
 * Starts the upstream on a free loopback port.
 *
 * @returns The upstream; `await using` closes it.
 */
export function startBillingUpstream(): BillingUpstream {
  const received: Received[] = [];
  const state = {
    extraUsage: {} as Record<string, unknown>,
    extraAnswer: {} as Record<string, unknown>,
  };
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    async (request) => {
      const path = new URL(request.url).pathname;
      const body = await request.json() as Record<string, unknown>;
      received.push({ path, headers: request.headers, body });
      const output = limitOf(body, path);
      const input = 10;
      if (path.includes("generateContent")) {
        return Response.json({
          candidates: [{
            content: { role: "model", parts: [{ text: "hi" }] },
            finishReason: "MAX_TOKENS",
          }],
          usageMetadata: {
            promptTokenCount: input,
            candidatesTokenCount: output,
            totalTokenCount: input + output,
            ...state.extraUsage,
          },
          ...state.extraAnswer,
        });
      }
      if (path.endsWith("/messages")) {
        return Response.json({
          id: "msg_1",
          type: "message",
          role: "assistant",
          model: body.model,
          content: [{ type: "text", text: "hi" }],
          stop_reason: "max_tokens",
          stop_sequence: null,
          usage: {
            input_tokens: input,
            output_tokens: output,
            ...state.extraUsage,
          },
          ...state.extraAnswer,
        });
      }
      if (path.endsWith("/responses")) {
        return Response.json({
          id: `resp_${received.length}`,
          object: "response",
          created_at: 1,
          status: "incomplete",
          model: body.model,
          output: [{
            type: "message",
            id: "msg_1",
            status: "incomplete",
            role: "assistant",
            content: [{ type: "output_text", text: "hi", annotations: [] }],
          }],
          usage: {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input + output,
            ...state.extraUsage,
          },
          ...state.extraAnswer,
        });
      }
      return Response.json({
        id: "chatcmpl-1",
        object: "chat.completion",
        created: 1,
        model: body.model,
        choices: [{
          index: 0,
          message: { role: "assistant", content: "hi" },
          finish_reason: "length",
        }],
        usage: {
          prompt_tokens: input,
          completion_tokens: output,
          total_tokens: input + output,
          ...state.extraUsage,
        },
        ...state.extraAnswer,
      });
    },
  );
  return {
    base: `http://127.0.0.1:${server.addr.port}`,
    received,
    get extraUsage() {
      return state.extraUsage;
    },
    set extraUsage(value) {
      state.extraUsage = value;
    },
    get extraAnswer() {
      return state.extraAnswer;
    },
    set extraAnswer(value) {
      state.extraAnswer = value;
    },
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

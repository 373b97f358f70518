/**
 * Google Gemini: the native `generateContent` / `streamGenerateContent` API
 * passed through on the `gemini` route, and reached from the `chat` route
 * through `translate/chat_gemini.ts`. The key travels in the
 * `x-goog-api-key` header, never in the URL.
 *
 * @module
 */
import {
  fromGeminiResponse,
  GeminiChatStream,
  type GeminiResponse,
  toGeminiRequest,
  usageFromGemini,
} from "../translate/chat_gemini.ts";
import type { Usage } from "../types.ts";
import {
  type CallInput,
  chatRequest,
  type Exchange,
  nestedErrorMessage,
  NO_USAGE,
  passthroughEnd,
  type Provider,
  type SseEvent,
  sseFrame,
  type StreamRelay,
  translatedChatRelay,
} from "./provider.ts";

function methodPath(upstreamModel: string, stream: boolean): string {
  const model = encodeURIComponent(upstreamModel);
  return stream
    ? `/v1beta/models/${model}:streamGenerateContent?alt=sse`
    : `/v1beta/models/${model}:generateContent`;
}

function geminiPassthrough(call: CallInput): Exchange {
  // Upstream always streams SSE; a caller that did not ask for `alt=sse` gets
  // the REST default, one JSON array streamed element by element.
  const asArray = call.query.alt !== "sse";
  return {
    path: methodPath(call.entry.upstream, call.stream),
    body: call.body,
    response(upstream) {
      return {
        body: upstream,
        usage: usageFromGemini((upstream as GeminiResponse).usageMetadata),
      };
    },
    relay: () => new GeminiRelay(asArray),
    streamContentType: asArray ? "application/json; charset=utf-8" : undefined,
  };
}

class GeminiRelay implements StreamRelay {
  #complete = false;
  #sent = 0;
  failure?: string;

  constructor(readonly asArray: boolean) {}

  /** Read when the counts arrive, so an unreadable count fails the stream there. */
  usage: Usage = NO_USAGE;

  event({ data }: SseEvent, parsed: unknown): string {
    const chunk = parsed as GeminiResponse & { error?: { message?: string } };
    if (chunk?.usageMetadata) this.usage = usageFromGemini(chunk.usageMetadata);
    if (chunk?.candidates?.some((c) => c.finishReason)) this.#complete = true;
    if (chunk?.error) {
      this.#complete = true;
      this.failure = chunk.error.message ?? "The provider reported an error";
    }
    if (!this.asArray) return sseFrame(data);
    return (this.#sent++ === 0 ? "[" : ",\r\n") + data;
  }

  end(): string {
    const tail = passthroughEnd("gemini", "gemini", this.#complete);
    if (tail) this.failure ??= "The stream ended before it was complete";
    if (!this.asArray) return tail;
    const error = tail === "" ? "" : (this.#sent++ === 0 ? "[" : ",\r\n") +
      tail.slice("data: ".length).trim();
    return error + (this.#sent === 0 ? "[]" : "]");
  }
}

function chatTranslated(call: CallInput): Exchange {
  const chat = chatRequest(call);
  const { body } = toGeminiRequest(chat, call.entry.upstream);
  return {
    path: methodPath(call.entry.upstream, call.stream),
    body,
    response(upstream) {
      const answer = upstream as GeminiResponse;
      return {
        body: fromGeminiResponse(answer, call.entry.id),
        usage: usageFromGemini(answer.usageMetadata),
      };
    },
    relay: () =>
      translatedChatRelay(
        new GeminiChatStream({
          model: call.entry.id,
          includeUsage: chat.stream_options?.include_usage === true,
        }),
      ),
  };
}

/** The Gemini provider. */
export const gemini: Provider = {
  name: "gemini",
  headers: (secret) => ({ "x-goog-api-key": secret }),
  countTokens: (call) => ({
    path: `/v1beta/models/${
      encodeURIComponent(call.entry.upstream)
    }:countTokens`,
    body: call.body,
  }),
  exchange: (call) =>
    call.route === "gemini" ? geminiPassthrough(call) : chatTranslated(call),
  errorMessage: nestedErrorMessage,
};

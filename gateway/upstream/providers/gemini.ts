/**
 * Google Gemini: the native `generateContent` / `streamGenerateContent` API
 * passed through on the `gemini` route, and reached from the `chat` route
 * through `translate/chat_gemini.ts`. The key travels in the
 * `x-goog-api-key` header, never in the URL.
 *
 * Usage: `usageMetadata` is cumulative on every chunk of a stream, and a
 * later chunk may leave out a count an earlier one gave, so the chunks are
 * folded count by count (the larger reading wins). The prompt is
 * `promptTokenCount` (cache reads, `cachedContentTokenCount`, included) plus
 * `toolUsePromptTokenCount`; the output is `candidatesTokenCount` plus
 * `thoughtsTokenCount`, and whatever `totalTokenCount` holds beyond those.
 *
 * @module
 */
import { toGeminiRequest } from "../translate/chat_gemini.ts";
import {
  fromGeminiResponse,
  type GeminiResponse,
  type GeminiUsageMetadata,
  usageFromGemini,
} from "../translate/chat_gemini_response.ts";
import { GeminiChatStream } from "../translate/chat_gemini_stream.ts";
import { chatUsage } from "../translate/chat_response_types.ts";
import type { Usage } from "../usage.ts";
import { coveringTotal, tokenCount } from "../usage.ts";
import {
  type CallInput,
  chatRequest,
  type Exchange,
  nestedErrorMessage,
  passthroughEnd,
  type Provider,
  type SseEvent,
  sseFrame,
  type StreamRelay,
  StreamUsage,
  type StreamUsageFormat,
  translatedChatRelay,
} from "./provider.ts";

/**
 * Reads Gemini's `usageMetadata` (an answer's, or a stream's chunks folded)
 * for billing: thinking tokens and any part of `totalTokenCount` no other
 * count holds are output; tool-use prompt tokens are input.
 *
 * @example A total that holds thinking tokens the last chunk left out
 * ```ts
 * import { geminiUsage } from "./gemini.ts";
 *
 * geminiUsage({ promptTokenCount: 20, candidatesTokenCount: 68, totalTokenCount: 909 });
 * // { inputTokens: 20, outputTokens: 889, cachedInputTokens: 0 }
 * ```
 *
 * @param usage Gemini's `usageMetadata`.
 * @returns The gateway's usage.
 * @throws {UnreadableUsageError} For a count that cannot be read.
 */
export function geminiUsage(
  usage: GeminiUsageMetadata | null | undefined,
): Usage {
  return coveringTotal(
    usageFromGemini(usage),
    tokenCount(usage?.totalTokenCount, "usageMetadata.totalTokenCount"),
  );
}

/** Usage in a Gemini stream: every chunk's cumulative `usageMetadata`. */
const STREAM_USAGE: StreamUsageFormat = {
  countsIn: (_event, data) =>
    typeof data === "object" && data !== null
      ? (data as GeminiResponse).usageMetadata
      : undefined,
  read: (counts) => geminiUsage(counts as GeminiUsageMetadata),
};

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
  // The caller's limit capped by the catalog's, or the catalog's when the
  // caller sets none: the output the hold covers. The call's input reads
  // `generation_config` into `generationConfig`, so there is one spelling.
  const config = call.body.generationConfig as
    | Record<string, unknown>
    | null
    | undefined;
  const body = {
    ...call.body,
    generationConfig: { ...config, maxOutputTokens: call.maxOutputTokens },
  };
  return {
    path: methodPath(call.entry.upstream, call.stream),
    body,
    response(upstream) {
      return {
        body: upstream,
        usage: geminiUsage((upstream as GeminiResponse).usageMetadata),
      };
    },
    relay: () => new GeminiRelay(asArray),
    streamContentType: asArray ? "application/json; charset=utf-8" : undefined,
  };
}

class GeminiRelay implements StreamRelay {
  #complete = false;
  #sent = 0;
  readonly #usage = new StreamUsage(STREAM_USAGE);
  failure?: string;

  constructor(readonly asArray: boolean) {}

  get usage(): Usage {
    return this.#usage.usage;
  }

  event(event: SseEvent, parsed: unknown): string {
    const { data } = event;
    this.#usage.event(event, parsed);
    const chunk = parsed as GeminiResponse & { error?: { message?: string } };
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
  // The caller's limit, capped by the model's: what the credit hold covers.
  const limit = body.generationConfig?.maxOutputTokens;
  if (limit !== undefined && limit > call.maxOutputTokens) {
    body.generationConfig!.maxOutputTokens = call.maxOutputTokens;
  }
  return {
    path: methodPath(call.entry.upstream, call.stream),
    body,
    response(upstream) {
      const answer = upstream as GeminiResponse;
      const usage = geminiUsage(answer.usageMetadata);
      const body = fromGeminiResponse(answer, call.entry.id);
      return { body: { ...body, usage: chatUsage(usage) }, usage };
    },
    relay: () =>
      translatedChatRelay(
        new GeminiChatStream({
          model: call.entry.id,
          includeUsage: chat.stream_options?.include_usage === true,
        }),
        STREAM_USAGE,
      ),
  };
}

/**
 * The Gemini provider.
 *
 * @example
 * ```ts
 * import { gemini } from "./gemini.ts";
 *
 * gemini.headers("AIza-1"); // { "x-goog-api-key": "AIza-1" }
 * gemini.otelName; // "gcp.gemini"
 * ```
 */
export const gemini: Provider<"gemini"> = {
  name: "gemini",
  defaultBaseUrl: "https://generativelanguage.googleapis.com",
  otelName: "gcp.gemini",
  wire: "gemini",
  imageRule: "gemini",
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

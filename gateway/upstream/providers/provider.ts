/**
 * What a provider is to the gateway: its name and where it lives, how the
 * world names it (telemetry, the simulator, image billing), how to
 * authenticate to it, how to turn a caller's call into an upstream request,
 * and how to turn the upstream's answer (whole or streamed) back into the
 * caller's convention with its usage. The providers themselves are listed in
 * `mod.ts`, the registry every other table derives from.
 *
 * @module
 */
import { GatewayError, streamErrorFrame } from "../../errors.ts";
import type { ChatStreamBase } from "../translate/_shared.ts";
import type { ChatRequest } from "../translate/chat_types.ts";
import { chatUsage } from "../translate/chat_response_types.ts";
import type { RouteName } from "../../conventions.ts";
import type { Usage } from "../usage.ts";
import { mergeUsageCounts } from "../usage.ts";

/** One server-sent event as read from an upstream (`eventsource-parser`). */
export interface SseEvent {
  /** The `event:` field, if named. */
  event?: string;
  /** The `data:` field. */
  data: string;
}

/**
 * What a provider reads of a model's catalog entry (a `CatalogEntry` is
 * one): declared here so the providers do not import the catalog, which
 * takes its provider names from them.
 */
export interface UpstreamModel {
  /** The catalog's model id. */
  readonly id: string;
  /** The name of the provider serving it. */
  readonly provider: string;
  /** The model id sent upstream. */
  readonly upstream: string;
  /** The most output tokens one call may produce. */
  readonly maxOutputTokens: number;
  /** What the model refuses (`false`: the provider answers 400), which a translation refuses first. */
  readonly features?: {
    readonly disabledThinking?: boolean;
    readonly forcedToolChoice?: boolean;
    readonly thinkingBetweenTools?: boolean;
  };
}

/** A call the route layer has authenticated, parsed and resolved to a model. */
export interface CallInput {
  /** The route the caller used. */
  route: RouteName;
  /** The model's catalog entry. */
  entry: UpstreamModel;
  /** The caller's parsed JSON body. */
  body: Record<string, unknown>;
  /** Whether the caller asked for a stream. */
  stream: boolean;
  /** Output tokens the call may produce (the caller's limit, capped by the model's). */
  maxOutputTokens: number;
  /** Query parameters of the caller's request (Gemini's `alt`). */
  query: Record<string, string>;
  /** The caller's request headers (Anthropic's `anthropic-beta` is passed on). */
  headers: Headers;
}

/** Turns one upstream stream into the caller's SSE text. */
export interface StreamRelay {
  /**
   * SSE text to send for one upstream event ("" to send nothing). The call
   * pipeline parses each event once and refuses one that is not JSON, so
   * `data` is the event's parsed JSON (or the string `"[DONE]"`).
   */
  event(event: SseEvent, data: unknown): string;
  /** SSE text to send once the upstream ended: a usage chunk, `[DONE]`, or an error if it ended early. */
  end(): string;
  /** Usage reported so far; billed even if the caller leaves early. */
  readonly usage: Usage;
  /** The answer's content is complete: only usage or the terminal event may follow (the relay reads on for usage when the caller leaves now). */
  readonly contentDone?: boolean;
  /** An error the upstream reported in-stream, if any. */
  readonly failure?: string;
  /** The provider's id for the state this answer stored (a Responses `id`), once an event named it. */
  readonly stateId?: string;
}

/** The upstream half of one call. */
export interface Exchange {
  /** Path (and query) appended to the provider's base URL. */
  path: string;
  /** JSON body sent upstream. */
  body: unknown;
  /** Headers to send beside the key's. */
  headers?: Record<string, string>;
  /** Turns a successful upstream JSON body into the caller's body, the usage and the id of the state it stored (a Responses `id`), if any. */
  response(
    upstream: unknown,
  ): { body: unknown; usage: Usage; stateId?: string };
  /** A relay for one stream, when the caller asked for one. */
  relay(): StreamRelay;
  /** Content type of the streamed answer (SSE unless a route says otherwise). */
  streamContentType?: string;
}

/**
 * The API family a provider's upstream speaks: how its keys, paths, bodies,
 * errors and streams look (`openai`: Chat Completions and Responses;
 * `anthropic`: Messages; `gemini`: `generateContent`). The simulator mounts
 * a provider with its family's endpoints.
 */
export type UpstreamWire = "openai" | "anthropic" | "gemini";

/**
 * How images are billed on a provider's models (`call/images.ts` holds the
 * rules): one of the three published rules, or `dearest`, the highest of the
 * three, for a provider that publishes none for the models it serves.
 */
export type ImageRule = "anthropic" | "openai" | "gemini" | "dearest";

/**
 * A model provider, everything about it in one file under `providers/`.
 *
 * @typeParam Name The provider's name, a string literal (the registry derives `ProviderName` from it).
 */
export interface Provider<Name extends string = string> {
  /**
   * The provider's name, as in the catalog; in upper case it prefixes the
   * provider's environment variables (`<NAME>_API_KEYS`, `<NAME>_BASE_URL`),
   * and the simulator serves it under `/<name>`.
   */
  readonly name: Name;
  /** The upstream base URL when the configuration sets none, in the provider SDK's own convention, without a trailing slash. */
  readonly defaultBaseUrl: string;
  /** The provider's `gen_ai.provider.name` in OpenTelemetry's GenAI semantic conventions (its own name where they list none). */
  readonly otelName: string;
  /** The API family its upstream speaks. */
  readonly wire: UpstreamWire;
  /** How images are billed on its models. */
  readonly imageRule: ImageRule;
  /** Headers that carry a key (and any fixed headers the API needs). */
  headers(secret: string): Record<string, string>;
  /** Builds the upstream half of a call on one of the routes the provider serves. */
  exchange(call: CallInput): Exchange;
  /** The human message inside one of the provider's error bodies. */
  errorMessage(body: string): string;
  /**
   * Wordings of a 429 or 403 message (as `errorMessage` reads it) that are
   * about the request, not the key: its size, its content, a feature the
   * account lacks. Such an answer fails the call and leaves the key alone,
   * so no caller can cool or refuse a key for the others with it. Each
   * comes from the provider's documentation.
   */
  readonly requestRefusals?: readonly RegExp[];
  /** The upstream request that counts a call's input tokens, where the provider has one (not charged). */
  countTokens?(call: CallInput): {
    path: string;
    body: unknown;
    headers?: Record<string, string>;
  };
}

/**
 * Usage with nothing in it.
 *
 * @example
 * ```ts
 * import { NO_USAGE } from "./provider.ts";
 *
 * NO_USAGE.inputTokens + NO_USAGE.outputTokens; // 0
 * ```
 */
export const NO_USAGE: Readonly<Usage> = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cachedInputTokens: 0,
});

/**
 * One SSE frame, as sent on the wire.
 *
 * @param data The `data:` payload.
 * @param event The `event:` name, if any.
 * @returns The frame text.
 *
 * @example
 * ```ts
 * import { sseFrame } from "./provider.ts";
 *
 * sseFrame("[DONE]"); // "data: [DONE]\n\n"
 * sseFrame("{}", "ping"); // "event: ping\ndata: {}\n\n"
 * ```
 */
export function sseFrame(data: string, event?: string): string {
  return event ? `event: ${event}\ndata: ${data}\n\n` : `data: ${data}\n\n`;
}

/**
 * Parses JSON that an upstream sent, or `undefined` for garbage.
 *
 * @param text The text.
 * @returns The value, or `undefined`.
 *
 * @example
 * ```ts
 * import { parseJson } from "./provider.ts";
 *
 * parseJson('{"ok":true}'); // { ok: true }
 * parseJson("<html>"); // undefined
 * ```
 */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * The message of an error body in the OpenAI (`{error:{message}}`), Anthropic
 * (`{error:{message}}`) or Google (`{error:{message}}`) shapes, which agree on
 * where the message sits; otherwise the start of the body.
 *
 * @param body The upstream's error body.
 * @returns A message for the caller.
 *
 * @example
 * ```ts
 * import { nestedErrorMessage } from "./provider.ts";
 *
 * nestedErrorMessage('{"error":{"message":"Rate limited","type":"rate_limit_error"}}'); // "Rate limited"
 * nestedErrorMessage("Bad Gateway"); // "Bad Gateway"
 * ```
 */
export function nestedErrorMessage(body: string): string {
  const parsed = parseJson(body) as {
    error?: { message?: unknown } | string;
    message?: unknown;
  } | undefined;
  if (parsed && typeof parsed === "object") {
    if (
      typeof parsed.error === "object" &&
      typeof parsed.error?.message === "string"
    ) return parsed.error.message;
    if (typeof parsed.error === "string") return parsed.error;
    if (typeof parsed.message === "string") return parsed.message;
  }
  const text = body.trim().slice(0, 200);
  return text === "" ? "The provider returned an error without a body" : text;
}

/**
 * The caller's chat request, typed for translation to another convention.
 * The chat route validated the body with `chatRequestSchema` before the call
 * reached a provider, so this only names its type.
 *
 * @param call The call on the chat route.
 * @returns The typed chat request.
 *
 * @example
 * ```ts
 * import { type CallInput, chatRequest } from "./provider.ts";
 *
 * declare const call: CallInput;
 * chatRequest(call).messages.length;
 * ```
 */
export function chatRequest(call: CallInput): ChatRequest {
  return call.body as unknown as ChatRequest;
}

/** Where a provider's stream events carry usage, and how the provider's usage object is read. */
export interface StreamUsageFormat {
  /**
   * The usage object one event carries, if any.
   *
   * @param event The event, for its name.
   * @param data The event's parsed JSON (or the string `"[DONE]"`).
   * @returns The usage object, or `undefined`.
   */
  countsIn(event: SseEvent, data: unknown): unknown;
  /**
   * Reads the stream's usage objects, folded into one, as the gateway's usage.
   *
   * @param counts The folded usage object.
   * @returns The usage.
   * @throws {UnreadableUsageError} For a count that cannot be read.
   */
  read(counts: Record<string, unknown>): Usage;
}

/**
 * The usage of one stream, whatever event reported which part of it: each
 * event's usage object is folded into the earlier ones with
 * {@linkcode mergeUsageCounts} (the larger totals, the detail kept from the
 * event that gave it) and read again, so an unreadable count fails the
 * stream where it arrives.
 *
 * @example Counts spread over two events
 * ```ts
 * import { StreamUsage } from "./provider.ts";
 *
 * const usage = new StreamUsage({
 *   countsIn: (_event, data) => (data as { usage?: unknown }).usage,
 *   read: (counts) => ({
 *     inputTokens: Number(counts.input ?? 0),
 *     outputTokens: Number(counts.output ?? 0),
 *     cachedInputTokens: 0,
 *   }),
 * });
 * usage.event({ data: "" }, { usage: { input: 10, output: 1 } });
 * usage.event({ data: "" }, { usage: { input: null, output: 12 } });
 * usage.usage; // { inputTokens: 10, outputTokens: 12, cachedInputTokens: 0 }
 * ```
 */
export class StreamUsage {
  #counts: Record<string, unknown> = {};
  #usage: Usage = NO_USAGE;

  /**
   * Starts a stream's usage.
   *
   * @param format Where the provider's events carry usage, and how it is read.
   */
  constructor(readonly format: StreamUsageFormat) {}

  /** Usage reported so far. */
  get usage(): Usage {
    return this.#usage;
  }

  /**
   * Folds in the usage one event carries, if any.
   *
   * @param event The event.
   * @param data The event's parsed JSON.
   * @throws {UnreadableUsageError} For a count that cannot be read.
   */
  event(event: SseEvent, data: unknown): void {
    const counts = this.format.countsIn(event, data);
    if (counts === undefined || counts === null) return;
    this.#counts = mergeUsageCounts(this.#counts, counts);
    this.#usage = this.format.read(this.#counts);
  }
}

/**
 * A relay for a chat stream translated from another convention: each piece
 * becomes a `data:` frame, and `[DONE]` closes a stream that did not fail.
 * The call is billed the usage read from the upstream's own events in the
 * provider's format, every token class at its price, and the final usage
 * chunk shows the caller that usage.
 *
 * @param translator The convention pair's stream translator.
 * @param usageFormat Where the upstream's events carry usage, and how it is read.
 * @returns The relay.
 *
 * @example The chat relay of a translated convention
 * ```ts
 * import { translatedChatRelay } from "./provider.ts";
 * import type { ChatStreamBase } from "../translate/_shared.ts";
 *
 * declare const translator: ChatStreamBase; // e.g. Gemini's stream translator
 * const relay = translatedChatRelay(translator, {
 *   countsIn: (_event, data) => (data as { usageMetadata?: unknown }).usageMetadata,
 *   read: (counts) => ({
 *     inputTokens: Number(counts.promptTokenCount ?? 0),
 *     outputTokens: Number(counts.candidatesTokenCount ?? 0),
 *     cachedInputTokens: 0,
 *   }),
 * });
 * relay.end(); // the stream's last frames, then `data: [DONE]` unless it failed
 * ```
 */
export function translatedChatRelay(
  translator: ChatStreamBase,
  usageFormat: StreamUsageFormat,
): StreamRelay {
  const usage = new StreamUsage(usageFormat);
  const billed = (piece: unknown) =>
    typeof piece === "object" && piece !== null &&
      typeof (piece as { usage?: unknown }).usage === "object" &&
      (piece as { usage?: unknown }).usage !== null
      ? { ...piece, usage: chatUsage(usage.usage) }
      : piece;
  const frames = (pieces: unknown[]) =>
    pieces.map((piece) => sseFrame(JSON.stringify(billed(piece)))).join("");
  return {
    event: (event, data) => {
      usage.event(event, data);
      return frames(translator.pushParsed(data, event));
    },
    end: () => {
      const tail = frames(translator.finish());
      return translator.failed ? tail : tail + sseFrame("[DONE]");
    },
    get usage() {
      return usage.usage;
    },
    get failure() {
      return translator.failed ? "The provider's stream failed" : undefined;
    },
  };
}

/**
 * The end of a passed-through stream: nothing when the upstream sent its
 * terminal event, else the route's in-stream error (the stream broke off).
 *
 * @param route The caller's route.
 * @param provider The provider.
 * @param complete Whether the terminal event was seen.
 * @returns SSE text.
 *
 * @example
 * ```ts
 * import { passthroughEnd } from "./provider.ts";
 *
 * passthroughEnd("chat", "xai", true); // ""
 * passthroughEnd("chat", "xai", false); // 'data: {"error":{"message":"The xai stream ended before it was complete",…}}\n\n'
 * ```
 */
export function passthroughEnd(
  route: RouteName,
  provider: string,
  complete: boolean,
): string {
  if (complete) return "";
  return streamErrorFrame(
    route,
    new GatewayError(
      502,
      `The ${provider} stream ended before it was complete`,
      { code: "upstream_incomplete" },
    ),
  );
}

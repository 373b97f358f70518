/**
 * OpenAI: Chat Completions and Responses, both passed through. Providers
 * that speak the same chat convention (xAI, OpenRouter) are built by
 * `openAICompatible()` in `openai_compatible.ts` on {@linkcode chatPassthrough}.
 *
 * Usage: `prompt_tokens` / `input_tokens` hold the cache reads
 * (`*_tokens_details.cached_tokens`) and OpenRouter's cache writes
 * (`prompt_tokens_details.cache_write_tokens`); `completion_tokens` /
 * `output_tokens` hold reasoning (xAI reports its reasoning beside them), and
 * whatever `total_tokens` holds beyond prompt and output is output too. A
 * stream's usage objects are folded count by count (the larger reading wins).
 *
 * @module
 */
import {
  type ChatUsage,
  usageFromChat,
} from "../translate/chat_response_types.ts";
import type { Usage } from "../usage.ts";
import {
  coveringTotal,
  normalUsage,
  reportedCost,
  tokenCount,
} from "../usage.ts";
import { type CacheTtl, unsplitCacheTtl } from "./anthropic.ts";
import {
  type CallInput,
  type Exchange,
  nestedErrorMessage,
  passthroughEnd,
  type Provider,
  type SseEvent,
  sseFrame,
  type StreamRelay,
  StreamUsage,
  type StreamUsageFormat,
} from "./provider.ts";

/** How a chat-convention provider reports its token classes. */
export interface ChatUsageOptions {
  /** The provider reports reasoning tokens beside `completion_tokens`, not inside them (xAI). */
  reasoningOutsideCompletion?: boolean;
  /** The lifetime of cache writes (OpenRouter's `cache_write_tokens`, for Anthropic models) ({@linkcode unsplitCacheTtl}); default `5m`. */
  cacheWriteTtl?: CacheTtl;
  /** The provider reports what the call cost in `usage.cost`, USD (OpenRouter): charged where it is above the catalog's price. */
  reportsCost?: boolean;
}

/**
 * The chat body field a provider reads as the call's output limit, sent
 * when the caller sets none: OpenAI's current `max_completion_tokens`
 * (`max_tokens` is deprecated there and refused by reasoning models), or
 * the older `max_tokens` most compatible APIs read.
 */
export type OutputLimitField = "max_tokens" | "max_completion_tokens";

/** How a chat-convention provider is passed a call. */
export interface ChatPassthroughOptions
  extends Omit<ChatUsageOptions, "cacheWriteTtl"> {
  /** The field sent as the output limit when the caller sets none; default `max_tokens`. */
  outputLimitField?: OutputLimitField;
}

/** A chat-convention `usage` object as it arrives, with the counts some providers add. */
interface ChatWireUsage {
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
  total_tokens?: unknown;
  prompt_tokens_details?: {
    cached_tokens?: unknown;
    cache_write_tokens?: unknown;
  } | null;
  completion_tokens_details?: { reasoning_tokens?: unknown } | null;
  cost?: unknown;
}

/**
 * Reads chat-convention usage (a completion's, or a stream's chunks folded)
 * for billing: cache reads at the cached price, OpenRouter's cache writes at
 * the cache-write price of `cacheWriteTtl`, reasoning as output (added to
 * `completion_tokens` where the provider reports it beside them), any
 * part of `total_tokens` beyond prompt and output as output, and, where the
 * provider reports one, its own `cost`.
 *
 * @example xAI: reasoning beside completion_tokens
 * ```ts
 * import { chatUsageOf } from "./openai.ts";
 *
 * chatUsageOf({
 *   prompt_tokens: 11, completion_tokens: 1, total_tokens: 240,
 *   completion_tokens_details: { reasoning_tokens: 228 },
 * }, { reasoningOutsideCompletion: true });
 * // { inputTokens: 11, outputTokens: 229, cachedInputTokens: 0, reasoningTokens: 228 }
 * ```
 *
 * @param usage The `usage` object.
 * @param options How the provider reports its classes.
 * @returns The gateway's usage.
 * @throws {UnreadableUsageError} For a count that cannot be read.
 */
export function chatUsageOf(
  usage: ChatWireUsage | null | undefined,
  options: ChatUsageOptions = {},
): Usage {
  const read = usageFromChat(usage, options);
  const written = tokenCount(
    usage?.prompt_tokens_details?.cache_write_tokens,
    "usage.prompt_tokens_details.cache_write_tokens",
  );
  const oneHour = options.cacheWriteTtl === "1h";
  const tokens = coveringTotal(
    normalUsage({
      ...read,
      cacheWriteTokens: oneHour ? 0 : written,
      cacheWrite1hTokens: oneHour ? written : 0,
    }),
    tokenCount(usage?.total_tokens, "usage.total_tokens"),
  );
  const cost = options.reportsCost
    ? reportedCost(usage?.cost, "usage.cost")
    : undefined;
  return cost === undefined ? tokens : { ...tokens, reportedCostUsd: cost };
}

function usageObject(value: unknown): unknown {
  return typeof value === "object" && value !== null
    ? (value as { usage?: unknown }).usage
    : undefined;
}

/**
 * The chat-completions exchange shared by every OpenAI-convention provider:
 * the model id is swapped for the upstream id, the output limit is the
 * caller's capped by the catalog's (the catalog's, in the provider's own
 * field, when the caller sets none), and streams always ask for
 * usage (it is what the caller is billed by); the usage-only final chunk is
 * passed on only to callers who asked for it.
 *
 * @param call The call.
 * @param options How the provider reports its token classes, and its output limit's field.
 * @returns The exchange.
 *
 * @example
 * ```ts
 * import { chatPassthrough } from "./openai.ts";
 *
 * const exchange = chatPassthrough({
 *   route: "chat",
 *   entry: { id: "fast", provider: "openai", upstream: "gpt-4o-mini", maxOutputTokens: 100 },
 *   body: { model: "fast", messages: [{ role: "user", content: "hi" }], max_tokens: 500 },
 *   stream: false,
 *   maxOutputTokens: 100,
 *   query: {},
 *   headers: new Headers(),
 * });
 * exchange.path; // "/chat/completions"
 * exchange.body; // { model: "gpt-4o-mini", messages: [...], max_tokens: 100 }
 * ```
 */
export function chatPassthrough(
  call: CallInput,
  options: ChatPassthroughOptions = {},
): Exchange {
  const { outputLimitField = "max_tokens", ...readOptions } = options;
  const body: Record<string, unknown> = {
    ...call.body,
    model: call.entry.upstream,
  };
  // A limit above the catalog's is capped to it, and a call without one
  // gets the catalog's: the provider's own maximum is not what the hold covers.
  let limited = false;
  for (const field of ["max_tokens", "max_completion_tokens"]) {
    const limit = body[field];
    if (typeof limit !== "number") continue;
    limited = true;
    if (limit > call.entry.maxOutputTokens) {
      body[field] = call.entry.maxOutputTokens;
    }
  }
  if (!limited) body[outputLimitField] = call.maxOutputTokens;
  const usageOptions = {
    ...readOptions,
    cacheWriteTtl: unsplitCacheTtl(body),
  };
  const callerOptions = call.body.stream_options as
    | { include_usage?: boolean }
    | undefined;
  const callerWantsUsage = callerOptions?.include_usage === true;
  if (call.stream) {
    body.stream_options = { ...callerOptions, include_usage: true };
  }
  return {
    path: "/chat/completions",
    body,
    response(upstream) {
      return {
        body: upstream,
        usage: chatUsageOf(
          (upstream as { usage?: ChatWireUsage }).usage,
          usageOptions,
        ),
      };
    },
    relay: () =>
      new ChatRelay(callerWantsUsage, call.entry.provider, usageOptions),
  };
}

// A stream is complete once its terminal event arrives; one that ends before
// ends with the route's in-stream error instead.
class ChatRelay implements StreamRelay {
  failure?: string;
  contentDone = false;
  #complete = false;
  readonly #callerWantsUsage: boolean;
  readonly #provider: string;
  readonly #usage: StreamUsage;

  constructor(
    callerWantsUsage: boolean,
    provider: string,
    options: ChatUsageOptions,
  ) {
    this.#callerWantsUsage = callerWantsUsage;
    this.#provider = provider;
    this.#usage = new StreamUsage({
      countsIn: (_event, data) => usageObject(data),
      read: (counts) => chatUsageOf(counts as ChatWireUsage, options),
    });
  }

  get usage(): Usage {
    return this.#usage.usage;
  }

  event(event: SseEvent, parsed: unknown): string {
    const { data } = event;
    if (data === "[DONE]") {
      this.#complete = true;
      return sseFrame(data);
    }
    this.#usage.event(event, parsed);
    const chunk = parsed as {
      usage?: ChatUsage | null;
      choices?: unknown[];
      error?: { message?: string };
    };
    if (chunk?.error) {
      this.failure = chunk.error.message ?? "The provider reported an error";
    }
    if (
      chunk?.choices?.some((choice) =>
        (choice as { finish_reason?: unknown }).finish_reason
      )
    ) {
      this.contentDone = true;
    }
    if (chunk?.usage) {
      const usageOnly = Array.isArray(chunk.choices) &&
        chunk.choices.length === 0;
      if (usageOnly && !this.#callerWantsUsage) return "";
      if (!this.#callerWantsUsage) {
        // Some upstreams put usage on the last content chunk: keep the chunk, drop what was not asked for.
        const { usage: _usage, ...rest } = chunk;
        return sseFrame(JSON.stringify(rest));
      }
    }
    return sseFrame(data);
  }

  end(): string {
    if (this.failure) return "";
    const tail = passthroughEnd("chat", this.#provider, this.#complete);
    if (tail) this.failure = "The stream ended before it was complete";
    return tail;
  }
}

interface ResponsesUsage {
  input_tokens?: unknown;
  output_tokens?: unknown;
  total_tokens?: unknown;
  input_tokens_details?: { cached_tokens?: unknown } | null;
  output_tokens_details?: { reasoning_tokens?: unknown } | null;
}

/**
 * Normalises Responses-convention usage: cache reads
 * (`input_tokens_details.cached_tokens`) are part of `input_tokens`,
 * reasoning (`output_tokens_details.reasoning_tokens`) part of
 * `output_tokens`, and any part of `total_tokens` beyond the two is output.
 *
 * @example
 * ```ts
 * import { usageFromResponses } from "./openai.ts";
 *
 * usageFromResponses({
 *   input_tokens: 100, output_tokens: 20, total_tokens: 120,
 *   input_tokens_details: { cached_tokens: 60 },
 * });
 * // { inputTokens: 100, outputTokens: 20, cachedInputTokens: 60 }
 * ```
 *
 * @param usage The `usage` of a response.
 * @returns The gateway's usage.
 * @throws {UnreadableUsageError} For a count that cannot be read.
 */
export function usageFromResponses(
  usage: ResponsesUsage | null | undefined,
): Usage {
  return coveringTotal(
    normalUsage({
      inputTokens: tokenCount(usage?.input_tokens, "usage.input_tokens"),
      outputTokens: tokenCount(usage?.output_tokens, "usage.output_tokens"),
      cachedInputTokens: tokenCount(
        usage?.input_tokens_details?.cached_tokens,
        "usage.input_tokens_details.cached_tokens",
      ),
      reasoningTokens: tokenCount(
        usage?.output_tokens_details?.reasoning_tokens,
        "usage.output_tokens_details.reasoning_tokens",
      ),
    }),
    tokenCount(usage?.total_tokens, "usage.total_tokens"),
  );
}

/**
 * Usage with the web searches a response ran: one per `web_search_call`
 * item of its output, each billed per call beside the tokens.
 */
function withWebSearches(usage: Usage, output: unknown, seen = 0): Usage {
  const listed = Array.isArray(output)
    ? output.filter(isWebSearchCall).length
    : 0;
  const searches = Math.max(listed, seen);
  return searches > 0 ? { ...usage, webSearches: searches } : usage;
}

function isWebSearchCall(item: unknown): boolean {
  return typeof item === "object" && item !== null &&
    (item as { type?: unknown }).type === "web_search_call";
}

/** Usage in a Responses stream: the `response` an event carries (the terminal event's). */
const RESPONSES_STREAM_USAGE: StreamUsageFormat = {
  countsIn: (_event, data) =>
    usageObject(
      typeof data === "object" && data !== null
        ? (data as { response?: unknown }).response
        : undefined,
    ),
  read: (counts) => usageFromResponses(counts),
};

function responsesPassthrough(call: CallInput): Exchange {
  return {
    path: "/responses",
    body: {
      ...call.body,
      model: call.entry.upstream,
      // The caller's limit capped by the catalog's, or the catalog's when
      // the caller sets none: the output the hold covers.
      max_output_tokens: call.maxOutputTokens,
    },
    response(upstream) {
      const { id, usage, output } = upstream as {
        id?: unknown;
        usage?: ResponsesUsage;
        output?: unknown;
      };
      return {
        body: upstream,
        usage: withWebSearches(usageFromResponses(usage), output),
        ...(typeof id === "string" && { stateId: id }),
      };
    },
    relay: () => new ResponsesRelay(),
  };
}

/** The most announced web searches a stream keeps ids of: a bound on memory a hostile upstream cannot push further. */
const MAX_COUNTED_SEARCHES = 10_000;

class ResponsesRelay implements StreamRelay {
  failure?: string;
  stateId?: string;
  #complete = false;
  readonly #usage = new StreamUsage(RESPONSES_STREAM_USAGE);
  /** The output of the terminal event's response: its web searches are billed. */
  #output: unknown;
  /** The web searches the stream announced, by item id: billed if the caller leaves before the end. */
  readonly #searches = new Set<string>();

  get usage(): Usage {
    return withWebSearches(
      this.#usage.usage,
      this.#output,
      this.#searches.size,
    );
  }

  event(event: SseEvent, parsed: unknown): string {
    const { data } = event;
    this.#usage.event(event, parsed);
    const body = parsed as {
      response?: {
        id?: unknown;
        error?: { message?: string };
        output?: unknown;
      };
      message?: string;
      item?: { id?: unknown };
    };
    if (
      isWebSearchCall(body?.item) && typeof body.item?.id === "string" &&
      this.#searches.size < MAX_COUNTED_SEARCHES
    ) this.#searches.add(body.item.id);
    // The first event (response.created) names the answer's id.
    if (this.stateId === undefined && typeof body?.response?.id === "string") {
      this.stateId = body.response.id;
    }
    // Usage arrives on the terminal event (completed, incomplete or failed).
    if (
      event.event === "response.completed" ||
      event.event === "response.incomplete" ||
      event.event === "response.failed"
    ) {
      this.#complete = true;
      this.#output = body?.response?.output;
      if (event.event === "response.failed") {
        this.failure = body?.response?.error?.message ?? "The response failed";
      }
    } else if (event.event === "error") {
      this.failure = body?.message ?? "The provider reported an error";
    }
    return sseFrame(data, event.event);
  }

  end(): string {
    if (this.failure) return "";
    const tail = passthroughEnd("responses", "openai", this.#complete);
    if (tail) this.failure = "The stream ended before it was complete";
    return tail;
  }
}

/**
 * The OpenAI provider.
 *
 * @example
 * ```ts
 * import { openai } from "./openai.ts";
 *
 * openai.headers("sk-1"); // { authorization: "Bearer sk-1" }
 * openai.defaultBaseUrl; // "https://api.openai.com/v1"
 * ```
 */
export const openai: Provider<"openai"> = {
  name: "openai",
  defaultBaseUrl: "https://api.openai.com/v1",
  otelName: "openai",
  wire: "openai",
  imageRule: "openai",
  headers: (secret) => ({ authorization: `Bearer ${secret}` }),
  exchange: (call) =>
    call.route === "responses"
      ? responsesPassthrough(call)
      : chatPassthrough(call, { outputLimitField: "max_completion_tokens" }),
  errorMessage: nestedErrorMessage,
  // A request bigger than the key's tokens-per-minute limit is answered 429
  // "Request too large for <model> ... on tokens per min (TPM): Limit L,
  // Requested R" (https://platform.openai.com/docs/guides/rate-limits): no
  // wait helps it, and the key's room for other requests is untouched.
  requestRefusals: [/^Request too large\b/i],
};

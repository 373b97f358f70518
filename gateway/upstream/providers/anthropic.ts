/**
 * Anthropic: the Messages API passed through on the `messages` route, and
 * reached from the `chat` route through `translate/chat_anthropic.ts`.
 *
 * Usage: `input_tokens` excludes cache reads and writes, so the prompt is
 * the three summed. Cache writes are priced by lifetime: the split in
 * `cache_creation` where one is given, and the rest of
 * `cache_creation_input_tokens` (a streamed `message_delta` repeats a larger
 * total without the split) at the 5-minute price, or the 1-hour price when
 * every `cache_control` of the request asked for 1-hour caching.
 *
 * @module
 */
import { toAnthropicRequest } from "../translate/chat_anthropic.ts";
import {
  type AnthropicResponse,
  type AnthropicUsage,
  fromAnthropicResponse,
} from "../translate/chat_anthropic_response.ts";
import { AnthropicChatStream } from "../translate/chat_anthropic_stream.ts";
import { chatUsage } from "../translate/chat_response_types.ts";
import type { Usage } from "../usage.ts";
import { normalUsage, tokenCount } from "../usage.ts";
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

const API_VERSION = "2023-06-01";

function passedHeaders(call: CallInput): Record<string, string> {
  const beta = call.headers.get("anthropic-beta");
  return {
    "anthropic-version": call.headers.get("anthropic-version") ?? API_VERSION,
    ...(beta ? { "anthropic-beta": beta } : {}),
  };
}

/** A cache lifetime Anthropic prices writes by. */
export type CacheTtl = "5m" | "1h";

/**
 * The lifetime of the cache writes Anthropic reports without a split: `1h`
 * when the request marks something for caching and every `cache_control` in
 * it (top level, system blocks, tools, message content and tool results)
 * asks for `ttl: "1h"`; otherwise `5m`, Anthropic's default.
 *
 * @example
 * ```ts
 * import { unsplitCacheTtl } from "./anthropic.ts";
 *
 * unsplitCacheTtl({
 *   system: [{ type: "text", text: "…", cache_control: { type: "ephemeral", ttl: "1h" } }],
 *   messages: [],
 * }); // "1h"
 * ```
 *
 * @param body The request body sent upstream (Messages or chat convention).
 * @returns The lifetime to price unsplit writes at.
 */
export function unsplitCacheTtl(body: unknown): CacheTtl {
  const marks = cacheControls(body);
  return marks.length > 0 &&
      marks.every((mark) => field(mark, "ttl") === "1h")
    ? "1h"
    : "5m";
}

function field(value: unknown, name: string): unknown {
  return typeof value === "object" && value !== null
    ? (value as Record<string, unknown>)[name]
    : undefined;
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** Every `cache_control` where a request can place one. */
function cacheControls(body: unknown): unknown[] {
  // Pushed one at a time: spreading a caller's list of a million blocks into
  // push() passes a million arguments, past the call stack.
  const holders: unknown[] = [body];
  const add = (values: unknown[]) => {
    for (const value of values) holders.push(value);
  };
  add(list(field(body, "system")));
  add(list(field(body, "tools")));
  for (const message of list(field(body, "messages"))) {
    for (const block of list(field(message, "content"))) {
      holders.push(block);
      add(list(field(block, "content")));
    }
  }
  return holders.map((holder) => field(holder, "cache_control"))
    .filter((mark) => mark !== undefined && mark !== null);
}

/**
 * Reads Anthropic usage (a message's, or a stream's events folded) for
 * billing: the prompt is `input_tokens` plus cache reads plus cache writes;
 * every cache write is priced at a cache-write price, the split in
 * `cache_creation` where given and the unsplit rest at `unsplitTtl`'s;
 * the web searches its server tool ran (`server_tool_use.web_search_requests`)
 * are counted, priced per 1,000.
 *
 * @example A stream's totals above the split it gave in message_start
 * ```ts
 * import { anthropicUsage } from "./anthropic.ts";
 *
 * anthropicUsage({
 *   input_tokens: 5, output_tokens: 40, cache_creation_input_tokens: 3_337,
 *   cache_creation: { ephemeral_5m_input_tokens: 3_068, ephemeral_1h_input_tokens: 0 },
 * }, "5m");
 * // { inputTokens: 3_342, outputTokens: 40, cachedInputTokens: 0, cacheWriteTokens: 3_337 }
 * ```
 *
 * @param usage Anthropic's `usage`.
 * @param unsplitTtl The lifetime of writes reported without a split ({@linkcode unsplitCacheTtl}).
 * @returns The gateway's usage.
 * @throws {UnreadableUsageError} For a count that cannot be read.
 */
export function anthropicUsage(
  usage: AnthropicUsage | null | undefined,
  unsplitTtl: CacheTtl,
): Usage {
  const count = (value: unknown, name: string) =>
    tokenCount(value, `usage.${name}`);
  const split = usage?.cache_creation;
  const split5m = count(
    split?.ephemeral_5m_input_tokens,
    "cache_creation.ephemeral_5m_input_tokens",
  );
  const split1h = count(
    split?.ephemeral_1h_input_tokens,
    "cache_creation.ephemeral_1h_input_tokens",
  );
  const written = count(
    usage?.cache_creation_input_tokens,
    "cache_creation_input_tokens",
  );
  const unsplit = Math.max(0, written - split5m - split1h);
  const read = count(usage?.cache_read_input_tokens, "cache_read_input_tokens");
  const searches = count(
    usage?.server_tool_use?.web_search_requests,
    "server_tool_use.web_search_requests",
  );
  const tokens = normalUsage({
    inputTokens: count(usage?.input_tokens, "input_tokens") + read +
      split5m + split1h + unsplit,
    outputTokens: count(usage?.output_tokens, "output_tokens"),
    cachedInputTokens: read,
    cacheWriteTokens: split5m + (unsplitTtl === "5m" ? unsplit : 0),
    cacheWrite1hTokens: split1h + (unsplitTtl === "1h" ? unsplit : 0),
  });
  return searches > 0 ? { ...tokens, webSearches: searches } : tokens;
}

/** Usage in Anthropic's stream: `message_start`'s message, then each `message_delta`'s cumulative counts. */
function streamUsageFormat(unsplitTtl: CacheTtl): StreamUsageFormat {
  return {
    countsIn({ event }, data) {
      const type = field(data, "type") ?? event;
      if (type === "message_start") {
        return field(field(data, "message"), "usage");
      }
      if (type === "message_delta") return field(data, "usage");
      return undefined;
    },
    read: (counts) => anthropicUsage(counts as AnthropicUsage, unsplitTtl),
  };
}

function messagesPassthrough(call: CallInput): Exchange {
  // The output the hold covers: the caller's limit, capped by the catalog's.
  const body = {
    ...call.body,
    model: call.entry.upstream,
    max_tokens: call.maxOutputTokens,
  };
  const ttl = unsplitCacheTtl(body);
  return {
    path: "/v1/messages",
    body,
    headers: passedHeaders(call),
    response(upstream) {
      return {
        body: upstream,
        usage: anthropicUsage((upstream as AnthropicResponse).usage, ttl),
      };
    },
    relay: () => new MessagesRelay(ttl),
  };
}

class MessagesRelay implements StreamRelay {
  readonly #usage: StreamUsage;
  #complete = false;
  failure?: string;

  constructor(unsplitTtl: CacheTtl) {
    this.#usage = new StreamUsage(streamUsageFormat(unsplitTtl));
  }

  get usage(): Usage {
    return this.#usage.usage;
  }

  event(event: SseEvent, parsed: unknown): string {
    this.#usage.event(event, parsed);
    if (event.event === "message_stop") {
      this.#complete = true;
    } else if (event.event === "error") {
      this.#complete = true;
      const message = field(field(parsed, "error"), "message");
      this.failure = typeof message === "string"
        ? message
        : "The provider reported an error";
    }
    return sseFrame(event.data, event.event);
  }

  end(): string {
    const tail = passthroughEnd("messages", "anthropic", this.#complete);
    if (tail) this.failure ??= "The stream ended before it was complete";
    return tail;
  }
}

function chatTranslated(call: CallInput): Exchange {
  const chat = chatRequest(call);
  const body = toAnthropicRequest(
    chat,
    call.entry.upstream,
    call.maxOutputTokens,
    call.entry,
  );
  // The caller's limit, capped by the model's: what the credit hold covers.
  body.max_tokens = Math.min(body.max_tokens, call.maxOutputTokens);
  const ttl = unsplitCacheTtl(body);
  return {
    path: "/v1/messages",
    body,
    headers: { "anthropic-version": API_VERSION },
    response(upstream) {
      const message = upstream as AnthropicResponse;
      const usage = anthropicUsage(message.usage, ttl);
      const body = fromAnthropicResponse(message, call.entry.id);
      return { body: { ...body, usage: chatUsage(usage) }, usage };
    },
    relay: () =>
      translatedChatRelay(
        new AnthropicChatStream({
          model: call.entry.id,
          includeUsage: chat.stream_options?.include_usage === true,
        }),
        streamUsageFormat(ttl),
      ),
  };
}

/**
 * The Anthropic provider.
 *
 * @example
 * ```ts
 * import { anthropic } from "./anthropic.ts";
 *
 * anthropic.headers("sk-ant-1"); // { "x-api-key": "sk-ant-1" }
 * anthropic.wire; // "anthropic"
 * ```
 */
export const anthropic: Provider<"anthropic"> = {
  name: "anthropic",
  defaultBaseUrl: "https://api.anthropic.com",
  otelName: "anthropic",
  wire: "anthropic",
  imageRule: "anthropic",
  headers: (secret) => ({ "x-api-key": secret }),
  countTokens: (call) => ({
    path: "/v1/messages/count_tokens",
    body: { ...call.body, model: call.entry.upstream },
    headers: passedHeaders(call),
  }),
  exchange: (call) =>
    call.route === "messages"
      ? messagesPassthrough(call)
      : chatTranslated(call),
  errorMessage: nestedErrorMessage,
};

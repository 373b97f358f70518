/**
 * Anthropic: the Messages API passed through on the `messages` route, and
 * reached from the `chat` route through `translate/chat_anthropic.ts`.
 *
 * @module
 */
import {
  AnthropicChatStream,
  type AnthropicResponse,
  type AnthropicUsage,
  fromAnthropicResponse,
  toAnthropicRequest,
  usageFromAnthropic,
} from "../translate/chat_anthropic.ts";
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

const API_VERSION = "2023-06-01";

function passedHeaders(call: CallInput): Record<string, string> {
  const beta = call.headers.get("anthropic-beta");
  return {
    "anthropic-version": call.headers.get("anthropic-version") ?? API_VERSION,
    ...(beta ? { "anthropic-beta": beta } : {}),
  };
}

function messagesPassthrough(call: CallInput): Exchange {
  return {
    path: "/v1/messages",
    body: { ...call.body, model: call.entry.upstream },
    headers: passedHeaders(call),
    response(upstream) {
      return {
        body: upstream,
        usage: usageFromAnthropic((upstream as AnthropicResponse).usage),
      };
    },
    relay: () => new MessagesRelay(call),
  };
}

class MessagesRelay implements StreamRelay {
  #usage: AnthropicUsage = {};
  #complete = false;
  failure?: string;

  constructor(readonly call: CallInput) {}

  /** Read when the counts arrive, so an unreadable count fails the stream there. */
  usage: Usage = NO_USAGE;

  event({ event, data }: SseEvent, parsed: unknown): string {
    const message = parsed as {
      message?: { usage?: AnthropicUsage };
      usage?: AnthropicUsage;
      error?: { message?: string };
    };
    if (event === "message_start" || event === "message_delta") {
      // message_delta's counts are cumulative and may repeat the input counts.
      const counts = message.message?.usage ?? message.usage ?? {};
      for (const [field, value] of Object.entries(counts)) {
        // message_delta sends nulls for counts it does not repeat.
        if (value !== null && value !== undefined) {
          (this.#usage as Record<string, unknown>)[field] = value;
        }
      }
      this.usage = usageFromAnthropic(this.#usage);
    } else if (event === "message_stop") {
      this.#complete = true;
    } else if (event === "error") {
      this.#complete = true;
      this.failure = message.error?.message ?? "The provider reported an error";
    }
    return sseFrame(data, event);
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
  );
  return {
    path: "/v1/messages",
    body,
    headers: { "anthropic-version": API_VERSION },
    response(upstream) {
      const message = upstream as AnthropicResponse;
      return {
        body: fromAnthropicResponse(message, call.entry.id),
        usage: usageFromAnthropic(message.usage),
      };
    },
    relay: () =>
      translatedChatRelay(
        new AnthropicChatStream({
          model: call.entry.id,
          includeUsage: chat.stream_options?.include_usage === true,
        }),
      ),
  };
}

/** The Anthropic provider. */
export const anthropic: Provider = {
  name: "anthropic",
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

/**
 * OpenAI: Chat Completions and Responses, both passed through. xAI and
 * OpenRouter speak the same chat convention and reuse {@linkcode chatPassthrough}.
 *
 * @module
 */
import { type ChatUsage, usageFromChat } from "../translate/chat_types.ts";
import type { ProviderName, Usage } from "../types.ts";
import { normalUsage, tokenCount } from "../usage.ts";
import {
  type CallInput,
  type Exchange,
  nestedErrorMessage,
  NO_USAGE,
  passthroughEnd,
  type Provider,
  type SseEvent,
  sseFrame,
  type StreamRelay,
} from "./provider.ts";

/**
 * The chat-completions exchange shared by every OpenAI-convention provider:
 * the model id is swapped for the upstream id, and streams always ask for
 * usage (it is what the caller is billed by); the usage-only final chunk is
 * passed on only to callers who asked for it.
 *
 * @param call The call.
 * @returns The exchange.
 */
export function chatPassthrough(
  call: CallInput,
  options: { reasoningOutsideCompletion?: boolean } = {},
): Exchange {
  const body: Record<string, unknown> = {
    ...call.body,
    model: call.entry.upstream,
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
        usage: usageFromChat(
          (upstream as { usage?: ChatUsage }).usage,
          options,
        ),
      };
    },
    relay: () => new ChatRelay(callerWantsUsage, call.entry.provider, options),
  };
}

// A stream is complete once its terminal event arrives; one that ends before
// ends with the route's in-stream error instead.
class ChatRelay implements StreamRelay {
  usage: Usage = NO_USAGE;
  failure?: string;
  contentDone = false;
  #complete = false;
  readonly #callerWantsUsage: boolean;
  readonly #provider: ProviderName;
  readonly #options: { reasoningOutsideCompletion?: boolean };

  constructor(
    callerWantsUsage: boolean,
    provider: ProviderName,
    options: { reasoningOutsideCompletion?: boolean },
  ) {
    this.#callerWantsUsage = callerWantsUsage;
    this.#provider = provider;
    this.#options = options;
  }

  event({ data }: SseEvent, parsed: unknown): string {
    if (data === "[DONE]") {
      this.#complete = true;
      return sseFrame(data);
    }
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
      this.usage = usageFromChat(chunk.usage, this.#options);
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
  input_tokens_details?: { cached_tokens?: unknown } | null;
  output_tokens_details?: { reasoning_tokens?: unknown } | null;
}

/**
 * Normalises Responses-convention usage.
 *
 * @param usage The `usage` of a response.
 * @returns The gateway's usage.
 */
export function usageFromResponses(
  usage: ResponsesUsage | null | undefined,
): Usage {
  return normalUsage({
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
  });
}

function responsesPassthrough(call: CallInput): Exchange {
  return {
    path: "/responses",
    body: { ...call.body, model: call.entry.upstream },
    response(upstream) {
      return {
        body: upstream,
        usage: usageFromResponses(
          (upstream as { usage?: ResponsesUsage }).usage,
        ),
      };
    },
    relay: () => new ResponsesRelay(),
  };
}

class ResponsesRelay implements StreamRelay {
  usage: Usage = NO_USAGE;
  failure?: string;
  #complete = false;

  event({ event, data }: SseEvent, parsed: unknown): string {
    const body = parsed as {
      response?: { usage?: ResponsesUsage; error?: { message?: string } };
      message?: string;
    };
    // Usage arrives once, on the terminal event (completed, incomplete or failed).
    if (
      event === "response.completed" || event === "response.incomplete" ||
      event === "response.failed"
    ) {
      this.#complete = true;
      this.usage = usageFromResponses(body?.response?.usage);
      if (event === "response.failed") {
        this.failure = body?.response?.error?.message ?? "The response failed";
      }
    } else if (event === "error") {
      this.failure = body?.message ?? "The provider reported an error";
    }
    return sseFrame(data, event);
  }

  end(): string {
    if (this.failure) return "";
    const tail = passthroughEnd("responses", "openai", this.#complete);
    if (tail) this.failure = "The stream ended before it was complete";
    return tail;
  }
}

/** The OpenAI provider. */
export const openai: Provider = {
  name: "openai",
  headers: (secret) => ({ authorization: `Bearer ${secret}` }),
  exchange: (call) =>
    call.route === "responses"
      ? responsesPassthrough(call)
      : chatPassthrough(call),
  errorMessage: nestedErrorMessage,
};

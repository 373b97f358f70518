/**
 * Translation of Anthropic's answers into the OpenAI Chat Completions
 * convention: a whole message, its stop reason and usage, and an error body.
 * Pure functions, no I/O.
 *
 * @module
 */
import { openAIErrorType } from "../../conventions.ts";
import type { Usage } from "../usage.ts";
import { normalUsage, tokenCount } from "../usage.ts";
import { chatId, nowSeconds } from "./_shared.ts";
import type { ChatReasoningDetail, ChatToolCall } from "./chat_types.ts";
import {
  type ChatCompletion,
  chatError,
  type ChatErrorBody,
  type ChatErrorType,
  type ChatFinishReason,
  chatUsage,
} from "./chat_response_types.ts";
import type { AnthropicTextBlock } from "./chat_anthropic.ts";
import { reasoningDetailOf } from "./_anthropic_thinking.ts";

/** Anthropic usage, as in a message and in `message_start` / `message_delta` events. */
export interface AnthropicUsage {
  /** Uncached input tokens (cache reads and writes excluded). */
  input_tokens?: number | null;
  /** Output tokens. */
  output_tokens?: number | null;
  /** Input tokens written to the cache. */
  cache_creation_input_tokens?: number | null;
  /** Input tokens read from the cache. */
  cache_read_input_tokens?: number | null;
  /** Server tools' requests (billed apart from tokens). */
  server_tool_use?: { web_search_requests?: number | null } | null;
  /** Cache writes by lifetime (their sum is `cache_creation_input_tokens`). */
  cache_creation?: {
    ephemeral_5m_input_tokens?: number | null;
    ephemeral_1h_input_tokens?: number | null;
  } | null;
}

/** A content block of an Anthropic response. */
export type AnthropicResponseBlock =
  | AnthropicTextBlock
  | { type: "tool_use"; id: string; name: string; input: unknown }
  | { type: string; [key: string]: unknown };

/** A non-streamed Anthropic response. */
export interface AnthropicResponse {
  /** Message id, `msg_…`. */
  id: string;
  /** Always `"message"`. */
  type: "message";
  /** Always `"assistant"`. */
  role: "assistant";
  /** Upstream model id. */
  model: string;
  /** Generated blocks. */
  content: AnthropicResponseBlock[];
  /** Why generation stopped. */
  stop_reason: string | null;
  /** The stop sequence hit, if any. */
  stop_sequence?: string | null;
  /** Token usage. */
  usage: AnthropicUsage;
}

/**
 * Maps an Anthropic stop reason to the chat convention.
 *
 * @param reason Anthropic's `stop_reason`.
 * @returns The chat `finish_reason`.
 */
export function finishReasonFromAnthropic(
  reason: string | null | undefined,
): ChatFinishReason {
  switch (reason) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "refusal":
      return "content_filter";
    default:
      // end_turn, stop_sequence, pause_turn.
      return "stop";
  }
}

/**
 * Normalises Anthropic usage. Anthropic's `input_tokens` excludes cache reads
 * and cache writes, so all three are summed. Cache reads are the cached part;
 * cache writes are split by lifetime (`cache_creation`, else all 5-minute),
 * each billed at its cache-write price.
 *
 * @param usage Anthropic's `usage`.
 * @returns The gateway's {@link Usage}.
 * @throws {UnreadableUsageError} For a count that cannot be read.
 */
export function usageFromAnthropic(
  usage: AnthropicUsage | null | undefined,
): Usage {
  const read = tokenCount(
    usage?.cache_read_input_tokens,
    "usage.cache_read_input_tokens",
  );
  const written = tokenCount(
    usage?.cache_creation_input_tokens,
    "usage.cache_creation_input_tokens",
  );
  const write1h = tokenCount(
    usage?.cache_creation?.ephemeral_1h_input_tokens,
    "usage.cache_creation.ephemeral_1h_input_tokens",
  );
  const write5m = usage?.cache_creation
    ? tokenCount(
      usage.cache_creation.ephemeral_5m_input_tokens,
      "usage.cache_creation.ephemeral_5m_input_tokens",
    )
    : written;
  return normalUsage({
    inputTokens: tokenCount(usage?.input_tokens, "usage.input_tokens") +
      read + Math.max(written, write5m + write1h),
    outputTokens: tokenCount(usage?.output_tokens, "usage.output_tokens"),
    cachedInputTokens: read,
    cacheWriteTokens: write5m,
    cacheWrite1hTokens: write1h,
  });
}

/**
 * Translates a non-streamed Anthropic response into a chat completion. Text
 * blocks join into `content`, tool-use blocks become `tool_calls`, and
 * thinking blocks become `reasoning_details` indexed by their position, for
 * the caller to send back unchanged.
 *
 * @param message The Messages response body.
 * @param model The model id as the caller sent it.
 * @returns The chat completion.
 */
export function fromAnthropicResponse(
  message: AnthropicResponse,
  model: string,
): ChatCompletion {
  const texts: string[] = [];
  const toolCalls: ChatToolCall[] = [];
  const reasoning: ChatReasoningDetail[] = [];
  for (const [index, block] of message.content.entries()) {
    const detail = reasoningDetailOf(block, index);
    if (detail) reasoning.push(detail);
    if (block.type === "text") texts.push((block as AnthropicTextBlock).text);
    if (block.type === "tool_use") {
      const use = block as { id: string; name: string; input: unknown };
      toolCalls.push({
        id: use.id,
        type: "function",
        function: {
          name: use.name,
          arguments: JSON.stringify(use.input ?? {}),
        },
      });
    }
  }
  return {
    id: chatId(message.id),
    object: "chat.completion",
    created: nowSeconds(),
    model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: texts.length > 0 ? texts.join("") : null,
        refusal: null,
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        ...(reasoning.length > 0 ? { reasoning_details: reasoning } : {}),
      },
      finish_reason: finishReasonFromAnthropic(message.stop_reason),
      logprobs: null,
    }],
    usage: chatUsage(usageFromAnthropic(message.usage)),
  };
}

const anthropicErrorTypes = new Map<string, ChatErrorType>([
  ["invalid_request_error", "invalid_request_error"],
  ["request_too_large", "invalid_request_error"],
  ["authentication_error", "authentication_error"],
  ["permission_error", "permission_error"],
  ["billing_error", "permission_error"],
  ["not_found_error", "not_found_error"],
  ["rate_limit_error", "rate_limit_error"],
  ["api_error", "server_error"],
  ["overloaded_error", "server_error"],
  ["timeout_error", "server_error"],
]);

/**
 * Translates an Anthropic error body (`{type:"error", error:{type, message}}`)
 * into the chat convention, keeping Anthropic's type as `code`.
 *
 * @param status The upstream HTTP status (used when the body says nothing).
 * @param body The parsed upstream body, or anything unreadable.
 * @returns The chat error body.
 */
export function errorFromAnthropic(
  status: number,
  body: unknown,
): ChatErrorBody {
  const error =
    (body as { error?: { type?: unknown; message?: unknown } } | null)?.error;
  const upstreamType = typeof error?.type === "string" ? error.type : undefined;
  const message = typeof error?.message === "string"
    ? error.message
    : `Upstream answered status "${status}"`;
  return chatError(
    message,
    anthropicErrorTypes.get(upstreamType ?? "") ?? openAIErrorType(status),
    upstreamType ?? null,
  );
}

/**
 * The OpenAI Chat Completions answer as the gateway's `chat` route sends it:
 * the types of a completion, a stream chunk and an in-stream error, what every
 * stream translator implements, and usage and errors in that convention.
 *
 * @module
 */
import type { OpenAIErrorType } from "../../conventions.ts";
import type { ChatReasoningDetail, ChatToolCall } from "./chat_types.ts";
import type { Usage } from "../usage.ts";
import { normalUsage, tokenCount } from "../usage.ts";

/** Why the model stopped, in the chat convention. */
export type ChatFinishReason =
  | "stop"
  | "length"
  | "tool_calls"
  | "content_filter";

/** Token usage in the chat convention. */
export interface ChatUsage {
  /** Prompt tokens, cached ones included. */
  prompt_tokens: number;
  /** Completion tokens. */
  completion_tokens: number;
  /** Sum of both. */
  total_tokens: number;
  /** Breakdown of the prompt tokens. */
  prompt_tokens_details?: { cached_tokens?: number };
  /** Breakdown of the completion tokens. */
  completion_tokens_details?: { reasoning_tokens?: number };
}

/** A non-streamed chat completion. */
export interface ChatCompletion {
  /** Completion id. */
  id: string;
  /** Always `"chat.completion"`. */
  object: "chat.completion";
  /** Unix seconds. */
  created: number;
  /** Model id as the caller sent it. */
  model: string;
  /** One choice per candidate answer. */
  choices: {
    index: number;
    message: {
      role: "assistant";
      content: string | null;
      refusal: string | null;
      tool_calls?: ChatToolCall[];
      reasoning_details?: ChatReasoningDetail[];
    };
    finish_reason: ChatFinishReason;
    logprobs: null;
  }[];
  /** Token usage. */
  usage: ChatUsage;
}

/** A tool call fragment in a stream chunk; `id`, `type` and `name` come only in the first. */
export interface ChatToolCallDelta {
  /** Position of the call in the message's `tool_calls`. */
  index: number;
  /** Call id (first fragment only). */
  id?: string;
  /** Always `"function"` (first fragment only). */
  type?: "function";
  /** Name (first fragment) and a piece of the arguments JSON. */
  function: { name?: string; arguments: string };
  /** Provider data, as on {@link ChatToolCall} (first fragment only). */
  extra_content?: { google?: { thought_signature?: string } };
}

/** One `chat.completion.chunk` of a stream. */
export interface ChatCompletionChunk {
  /** Completion id, the same in every chunk. */
  id: string;
  /** Always `"chat.completion.chunk"`. */
  object: "chat.completion.chunk";
  /** Unix seconds, the same in every chunk. */
  created: number;
  /** Model id as the caller sent it. */
  model: string;
  /** The delta; empty in the final usage chunk. */
  choices: {
    index: number;
    delta: {
      role?: "assistant";
      content?: string | null;
      refusal?: string | null;
      tool_calls?: ChatToolCallDelta[];
      reasoning_details?: ChatReasoningDetail[];
    };
    finish_reason: ChatFinishReason | null;
    logprobs: null;
  }[];
  /** `null` in every chunk but the last when the caller asked for usage. */
  usage?: ChatUsage | null;
}

/** Error categories of the OpenAI convention. */
export type ChatErrorType = OpenAIErrorType;

/**
 * An error body in the OpenAI convention: the body of an error response, and
 * also the `data:` of an in-stream error event.
 */
export interface ChatErrorBody {
  /** The error. */
  error: {
    message: string;
    type: ChatErrorType;
    param: string | null;
    code: string | null;
  };
}

/** What a stream translator emits: chunks and, at most once and last, an error event. */
export type ChatStreamPiece = ChatCompletionChunk | ChatErrorBody;

/** One upstream server-sent event, as `eventsource-parser` yields it. */
export interface UpstreamEvent {
  /** The `event:` field, when the upstream names its events. */
  event?: string;
  /** The `data:` field. */
  data: string;
}

/**
 * Translates one upstream stream into chat chunks. Create one per call, feed
 * every upstream event to `push()`, then call `finish()` once when the upstream
 * body ends. Each piece is written as `data: ${JSON.stringify(piece)}`; after
 * `finish()` the caller writes `data: [DONE]` unless the last piece was an error.
 */
export interface ChatStreamTranslator {
  /** Translates one upstream event into zero or more pieces. */
  push(event: UpstreamEvent): ChatStreamPiece[];
  /**
   * Ends the stream: the usage chunk (`choices: []`) when the caller asked for
   * `stream_options.include_usage`, as OpenAI does, or an error event when the
   * upstream stopped before its end.
   */
  finish(): ChatStreamPiece[];
  /** Tokens the upstream reported so far; bill this even if the client left. */
  readonly usage: Usage;
  /** Whether an error event has been emitted. */
  readonly failed: boolean;
}

/** Options every stream translator takes. */
export interface ChatStreamOptions {
  /** Model id as the caller sent it. */
  model: string;
  /** Emit the final usage chunk (the caller's `stream_options.include_usage`). */
  includeUsage: boolean;
}

/**
 * Normalises chat-convention usage (OpenAI, xAI, OpenRouter passthrough).
 * OpenAI and OpenRouter count reasoning inside `completion_tokens`; xAI
 * reports it beside them (its `total_tokens` adds both), so every output
 * token is billed once either way.
 *
 * @param usage The `usage` object of a completion or final chunk (tolerates the `null`s some providers send).
 * @param options `reasoningOutsideCompletion`: the provider reports reasoning tokens apart from `completion_tokens` (xAI).
 * @returns The gateway's {@link Usage}.
 * @throws {UnreadableUsageError} For a count that cannot be read.
 */
export function usageFromChat(
  usage:
    | {
      prompt_tokens?: unknown;
      completion_tokens?: unknown;
      total_tokens?: unknown;
      prompt_tokens_details?: { cached_tokens?: unknown } | null;
      completion_tokens_details?: { reasoning_tokens?: unknown } | null;
    }
    | null
    | undefined,
  options: { reasoningOutsideCompletion?: boolean } = {},
): Usage {
  const completion = tokenCount(
    usage?.completion_tokens,
    "usage.completion_tokens",
  );
  const reasoning = tokenCount(
    usage?.completion_tokens_details?.reasoning_tokens,
    "usage.completion_tokens_details.reasoning_tokens",
  );
  return normalUsage({
    inputTokens: tokenCount(usage?.prompt_tokens, "usage.prompt_tokens"),
    outputTokens: options.reasoningOutsideCompletion
      ? completion + reasoning
      : completion,
    cachedInputTokens: tokenCount(
      usage?.prompt_tokens_details?.cached_tokens,
      "usage.prompt_tokens_details.cached_tokens",
    ),
    reasoningTokens: reasoning,
  });
}

/**
 * Expresses gateway usage in the chat convention.
 *
 * @param usage Normalised usage.
 * @returns The chat `usage` object, cached tokens in `prompt_tokens_details`.
 */
export function chatUsage(usage: Usage): ChatUsage {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedInputTokens },
    ...(usage.reasoningTokens
      ? {
        completion_tokens_details: { reasoning_tokens: usage.reasoningTokens },
      }
      : {}),
  };
}

/**
 * Builds an OpenAI-convention error body.
 *
 * @param message Human-readable message.
 * @param type Error category.
 * @param code Machine code, if any.
 * @returns The body, usable as a response or as an in-stream error event.
 */
export function chatError(
  message: string,
  type: ChatErrorType,
  code: string | null = null,
): ChatErrorBody {
  return { error: { message, type, param: null, code } };
}

/**
 * Tells an in-stream error event from a chunk.
 *
 * @param piece A piece a stream translator emitted.
 * @returns Whether it is the error event.
 */
export function isChatStreamError(
  piece: ChatStreamPiece,
): piece is ChatErrorBody {
  return "error" in piece;
}

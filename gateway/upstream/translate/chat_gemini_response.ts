/**
 * Translation of Gemini's answers into the OpenAI Chat Completions
 * convention: a whole `generateContent` response, its finish reason and
 * usage, and an error body. Pure functions, no I/O.
 *
 * @module
 */
import { openAIErrorType } from "../../conventions.ts";
import type { Usage } from "../usage.ts";
import { normalUsage, tokenCount } from "../usage.ts";
import { chatId, newToolCallId, nowSeconds } from "./_shared.ts";
import type { ChatToolCall } from "./chat_types.ts";
import {
  type ChatCompletion,
  chatError,
  type ChatErrorBody,
  type ChatErrorType,
  type ChatFinishReason,
  chatUsage,
} from "./chat_response_types.ts";
import type { GeminiPart } from "./chat_gemini.ts";

/** Gemini token usage. `promptTokenCount` includes the cached tokens. */
export interface GeminiUsageMetadata {
  /** Prompt tokens, cached included. */
  promptTokenCount?: number;
  /** The cached part of the prompt. */
  cachedContentTokenCount?: number;
  /** Answer tokens. */
  candidatesTokenCount?: number;
  /** Thinking tokens, billed as output. */
  thoughtsTokenCount?: number;
  /** Prompt tokens of tool use (e.g. search results), billed as input. */
  toolUsePromptTokenCount?: number;
  /** Everything. */
  totalTokenCount?: number;
}

/** A `generateContent` response, and each chunk of a stream. */
export interface GeminiResponse {
  /** Candidate answers. */
  candidates?: {
    content?: { role?: string; parts?: GeminiPart[] };
    finishReason?: string;
    index?: number;
  }[];
  /** Why the prompt was blocked, if it was. */
  promptFeedback?: { blockReason?: string };
  /** Token usage (in a stream, cumulative on every chunk). */
  usageMetadata?: GeminiUsageMetadata;
  /** Model version that answered. */
  modelVersion?: string;
  /** Response id. */
  responseId?: string;
}

const filteredReasons = new Set([
  "SAFETY",
  "RECITATION",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION",
  "LANGUAGE",
]);

/**
 * Maps a Gemini finish reason to the chat convention.
 *
 * @param reason Gemini's `finishReason`.
 * @param calledFunctions Whether the answer holds function calls (Gemini says `STOP` for those).
 * @returns The chat `finish_reason`.
 */
export function finishReasonFromGemini(
  reason: string | undefined,
  calledFunctions: boolean,
): ChatFinishReason {
  if (reason === "MAX_TOKENS") return "length";
  if (reason !== undefined && filteredReasons.has(reason)) {
    return "content_filter";
  }
  return calledFunctions ? "tool_calls" : "stop";
}

/**
 * Normalises Gemini usage. `promptTokenCount` already includes the cached
 * tokens; thinking tokens are output, tool-use prompt tokens are input.
 *
 * @param usage Gemini's `usageMetadata`.
 * @returns The gateway's {@link Usage}.
 * @throws {UnreadableUsageError} For a count that cannot be read.
 */
export function usageFromGemini(
  usage: GeminiUsageMetadata | null | undefined,
): Usage {
  const count = (field: keyof GeminiUsageMetadata) =>
    tokenCount(usage?.[field], `usageMetadata.${field}`);
  const thoughts = count("thoughtsTokenCount");
  return normalUsage({
    inputTokens: count("promptTokenCount") + count("toolUsePromptTokenCount"),
    outputTokens: count("candidatesTokenCount") + thoughts,
    cachedInputTokens: count("cachedContentTokenCount"),
    reasoningTokens: thoughts,
  });
}

/**
 * A function call part as a chat tool call, its thought signature kept for
 * the next turn.
 *
 * @param part The Gemini part holding a `functionCall`.
 * @returns The chat tool call.
 */
export function toolCallFromPart(part: GeminiPart): ChatToolCall {
  const call = part.functionCall!;
  return {
    id: call.id ?? newToolCallId(),
    type: "function",
    function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) },
    ...(part.thoughtSignature
      ? {
        extra_content: { google: { thought_signature: part.thoughtSignature } },
      }
      : {}),
  };
}

/**
 * Translates a non-streamed Gemini response into a chat completion.
 *
 * @param response The `generateContent` response body.
 * @param model The model id as the caller sent it.
 * @returns The chat completion.
 */
export function fromGeminiResponse(
  response: GeminiResponse,
  model: string,
): ChatCompletion {
  const candidate = response.candidates?.[0];
  const parts = (candidate?.content?.parts ?? []).filter((part) =>
    !part.thought
  );
  const texts = parts.flatMap((part) => (part.text ? [part.text] : []));
  const toolCalls = parts.filter((part) => part.functionCall).map(
    toolCallFromPart,
  );
  const blocked = candidate === undefined &&
    response.promptFeedback?.blockReason !== undefined;
  return {
    id: chatId(response.responseId),
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
      },
      finish_reason: blocked
        ? "content_filter"
        : finishReasonFromGemini(candidate?.finishReason, toolCalls.length > 0),
      logprobs: null,
    }],
    usage: chatUsage(usageFromGemini(response.usageMetadata)),
  };
}

const geminiStatusTypes = new Map<string, ChatErrorType>([
  ["INVALID_ARGUMENT", "invalid_request_error"],
  ["FAILED_PRECONDITION", "invalid_request_error"],
  ["OUT_OF_RANGE", "invalid_request_error"],
  ["UNAUTHENTICATED", "authentication_error"],
  ["PERMISSION_DENIED", "permission_error"],
  ["NOT_FOUND", "not_found_error"],
  ["RESOURCE_EXHAUSTED", "rate_limit_error"],
  ["INTERNAL", "server_error"],
  ["UNAVAILABLE", "server_error"],
  ["DEADLINE_EXCEEDED", "server_error"],
]);

/**
 * Translates a Google error body (`{error:{code, message, status}}`) into the
 * chat convention, keeping Google's status as `code`.
 *
 * @param status The upstream HTTP status (used when the body says nothing).
 * @param body The parsed upstream body, or anything unreadable.
 * @returns The chat error body.
 */
export function errorFromGemini(status: number, body: unknown): ChatErrorBody {
  const error = (body as
    | { error?: { code?: unknown; message?: unknown; status?: unknown } }
    | null)?.error;
  const googleStatus = typeof error?.status === "string"
    ? error.status
    : undefined;
  const code = typeof error?.code === "number" ? error.code : status;
  const message = typeof error?.message === "string"
    ? error.message
    : `Upstream answered status "${status}"`;
  return chatError(
    message,
    geminiStatusTypes.get(googleStatus ?? "") ?? openAIErrorType(code),
    googleStatus ?? null,
  );
}

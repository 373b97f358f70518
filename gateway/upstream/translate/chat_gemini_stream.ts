/**
 * Translation of a Gemini `streamGenerateContent?alt=sse` stream into OpenAI
 * Chat Completions chunks ({@linkcode GeminiChatStream}). Pure, no I/O.
 *
 * @module
 */
import type { Usage } from "../usage.ts";
import { chatId, ChatStreamBase } from "./_shared.ts";
import type { ChatStreamPiece } from "./chat_response_types.ts";
import {
  errorFromGemini,
  finishReasonFromGemini,
  type GeminiResponse,
  toolCallFromPart,
  usageFromGemini,
} from "./chat_gemini_response.ts";

/**
 * Translates one Gemini `streamGenerateContent?alt=sse` stream into chat
 * chunks. Each upstream event is a whole `GenerateContentResponse`: text parts
 * become `content` deltas; a function call arrives whole, so it becomes one
 * tool call fragment with a generated id, its name and all its arguments; the
 * chunk with `finishReason` gives the finish reason. Usage is cumulative on
 * every chunk. An `{error}` event becomes the OpenAI in-stream error.
 *
 * @example Feed a recorded stream
 * ```ts
 * import { GeminiChatStream } from "./chat_gemini_stream.ts";
 * const stream = new GeminiChatStream({ model: "gemini-2.5-pro", includeUsage: false });
 * const pieces = stream.push({ data: '{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]}}]}' });
 * console.log(pieces.length); // 2: the role chunk, then the text
 * ```
 */
export class GeminiChatStream extends ChatStreamBase {
  // Read when the counts arrive, so an unreadable count fails the stream there.
  #usage: Usage = usageFromGemini(undefined);
  #toolCalls = 0;
  #started = false;

  /** Tokens Gemini reported so far. */
  get usage(): Usage {
    return this.#usage;
  }

  /**
   * Translates one parsed Gemini chunk (a whole `GenerateContentResponse`).
   *
   * @param parsed The event's data.
   * @returns The chat pieces to send, possibly none.
   */
  protected translate(parsed: unknown): ChatStreamPiece[] {
    const data = parsed as GeminiResponse & { error?: unknown };
    if (data.error !== undefined) return this.fail(errorFromGemini(500, data));
    if (data.usageMetadata) this.#usage = usageFromGemini(data.usageMetadata);
    const pieces: ChatStreamPiece[] = [];
    if (!this.#started) {
      this.#started = true;
      this.chunks.id = chatId(data.responseId);
      pieces.push(
        this.chunks.delta({ role: "assistant", content: "", refusal: null }),
      );
    }
    const candidate = data.candidates?.[0];
    for (const part of candidate?.content?.parts ?? []) {
      if (part.thought) continue;
      if (part.text) pieces.push(this.chunks.delta({ content: part.text }));
      if (part.functionCall) {
        const { id, function: fn, extra_content } = toolCallFromPart(part);
        pieces.push(this.chunks.delta({
          tool_calls: [{
            index: this.#toolCalls++,
            id,
            type: "function",
            function: fn,
            ...(extra_content ? { extra_content } : {}),
          }],
        }));
      }
    }
    const blocked = candidate === undefined &&
      data.promptFeedback?.blockReason !== undefined;
    if (blocked || candidate?.finishReason) {
      this.finished = true;
      const reason = blocked
        ? "content_filter"
        : finishReasonFromGemini(candidate?.finishReason, this.#toolCalls > 0);
      pieces.push(this.chunks.delta({}, reason));
    }
    return pieces;
  }
}

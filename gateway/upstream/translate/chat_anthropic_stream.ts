/**
 * Translation of an Anthropic Messages stream into OpenAI Chat Completions
 * chunks ({@linkcode AnthropicChatStream}). Pure, no I/O.
 *
 * @module
 */
import type { Usage } from "../usage.ts";
import { chatId, ChatStreamBase } from "./_shared.ts";
import type { ChatStreamPiece, UpstreamEvent } from "./chat_response_types.ts";
import { ANTHROPIC_REASONING_FORMAT } from "./_anthropic_thinking.ts";
import {
  type AnthropicUsage,
  errorFromAnthropic,
  finishReasonFromAnthropic,
  usageFromAnthropic,
} from "./chat_anthropic_response.ts";

interface StreamEvent {
  type: string;
  index?: number;
  message?: { id?: string; usage?: AnthropicUsage };
  content_block?: { type: string; id?: string; name?: string; data?: string };
  delta?: {
    type?: string;
    text?: string;
    partial_json?: string;
    thinking?: string;
    signature?: string;
    stop_reason?: string | null;
  };
  usage?: AnthropicUsage;
  error?: { type?: string; message?: string };
}

/**
 * Translates one Anthropic Messages stream into chat chunks: the first chunk
 * carries the role, text deltas become `content`, each `tool_use` block becomes
 * a tool call whose first fragment holds `index`, `id`, `type` and name and
 * whose `input_json_delta`s follow as `arguments` fragments, thinking becomes
 * `reasoning_details` pieces indexed by the block (a `thinking_delta` is a
 * piece of its text, a `signature_delta` its signature, a redacted block its
 * data: a client joins the pieces of one index), and `message_delta` gives
 * the finish reason. `event: error` becomes the OpenAI in-stream error.
 *
 * @example Feed a recorded stream
 * ```ts
 * import { AnthropicChatStream } from "./chat_anthropic_stream.ts";
 * const stream = new AnthropicChatStream({ model: "claude-haiku-4-5", includeUsage: true });
 * stream.push({ event: "message_start", data: '{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":5,"output_tokens":1}}}' });
 * console.log(stream.usage.inputTokens); // 5
 * ```
 */
export class AnthropicChatStream extends ChatStreamBase {
  #usage: AnthropicUsage = {};
  // Read when the counts arrive, so an unreadable count fails the stream there.
  #parsedUsage: Usage = usageFromAnthropic(undefined);
  /** Anthropic content block index → chat tool call index and arguments seen so far. */
  #toolCalls = new Map<number, { index: number; arguments: string }>();
  #started = false;

  /** Tokens Anthropic reported so far. */
  get usage(): Usage {
    return this.#parsedUsage;
  }

  /**
   * Translates one parsed Anthropic event.
   *
   * @param parsed The event's data.
   * @param event The event, for its name.
   * @returns The chat pieces to send, possibly none.
   */
  protected translate(
    parsed: unknown,
    event: UpstreamEvent,
  ): ChatStreamPiece[] {
    const data = parsed as StreamEvent;
    switch (data.type ?? event.event) {
      case "message_start":
        return this.#start(data);
      case "content_block_start":
        return this.#blockStart(data);
      case "content_block_delta":
        return this.#blockDelta(data);
      case "content_block_stop":
        return this.#blockStop(data);
      case "message_delta":
        Object.assign(this.#usage, definedFields(data.usage));
        this.#parsedUsage = usageFromAnthropic(this.#usage);
        this.finished = true;
        return [
          this.chunks.delta(
            {},
            finishReasonFromAnthropic(data.delta?.stop_reason),
          ),
        ];
      case "error":
        return this.fail(errorFromAnthropic(500, data));
      default:
        // ping, message_stop and event types added after this was written.
        return [];
    }
  }

  #start(data: StreamEvent): ChatStreamPiece[] {
    if (this.#started) return [];
    this.#started = true;
    this.chunks.id = chatId(data.message?.id);
    Object.assign(this.#usage, definedFields(data.message?.usage));
    this.#parsedUsage = usageFromAnthropic(this.#usage);
    return [
      this.chunks.delta({ role: "assistant", content: "", refusal: null }),
    ];
  }

  #blockStart(data: StreamEvent): ChatStreamPiece[] {
    const block = data.content_block;
    if (
      block?.type === "redacted_thinking" && data.index !== undefined &&
      typeof block.data === "string"
    ) {
      return [this.chunks.delta({
        reasoning_details: [{
          type: "reasoning.encrypted",
          data: block.data,
          format: ANTHROPIC_REASONING_FORMAT,
          index: data.index,
        }],
      })];
    }
    if (block?.type !== "tool_use" || data.index === undefined) return [];
    const index = this.#toolCalls.size;
    this.#toolCalls.set(data.index, { index, arguments: "" });
    return [this.chunks.delta({
      tool_calls: [{
        index,
        id: block.id,
        type: "function",
        function: { name: block.name, arguments: "" },
      }],
    })];
  }

  #blockDelta(data: StreamEvent): ChatStreamPiece[] {
    const delta = data.delta;
    if (delta?.type === "text_delta" && delta.text) {
      return [this.chunks.delta({ content: delta.text })];
    }
    if (delta?.type === "input_json_delta" && delta.partial_json) {
      const call = this.#toolCalls.get(data.index ?? -1);
      if (!call) return [];
      call.arguments += delta.partial_json;
      return [
        this.chunks.delta({
          tool_calls: [{
            index: call.index,
            function: { arguments: delta.partial_json },
          }],
        }),
      ];
    }
    const thinking = delta?.type === "thinking_delta" && delta.thinking;
    const signature = delta?.type === "signature_delta" && delta.signature;
    if ((thinking || signature) && data.index !== undefined) {
      return [this.chunks.delta({
        reasoning_details: [{
          type: "reasoning.text",
          text: thinking || "",
          ...(signature ? { signature } : {}),
          format: ANTHROPIC_REASONING_FORMAT,
          index: data.index,
        }],
      })];
    }
    // Citation deltas have no chat counterpart.
    return [];
  }

  #blockStop(data: StreamEvent): ChatStreamPiece[] {
    const call = this.#toolCalls.get(data.index ?? -1);
    // A tool called without input streams no JSON at all; "{}" keeps the joined arguments valid.
    if (!call || call.arguments !== "") return [];
    call.arguments = "{}";
    return [
      this.chunks.delta({
        tool_calls: [{ index: call.index, function: { arguments: "{}" } }],
      }),
    ];
  }
}

/** The fields of an Anthropic usage object that are set (message_delta sends nulls). */
function definedFields(usage: AnthropicUsage | undefined): AnthropicUsage {
  return Object.fromEntries(
    Object.entries(usage ?? {}).filter(([, value]) =>
      value !== null && value !== undefined
    ),
  );
}

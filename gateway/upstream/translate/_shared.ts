/**
 * Helpers the chat translators share: reading chat content, data URLs, tool
 * call arguments, and building stream chunks.
 *
 * @module
 */

import type { Usage } from "../usage.ts";
import {
  type ChatMessage,
  type ChatRequest,
  type ChatTextPart,
  type ChatTool,
  TranslationError,
} from "./chat_types.ts";
import {
  type ChatCompletionChunk,
  chatError,
  type ChatErrorBody,
  type ChatFinishReason,
  type ChatStreamOptions,
  type ChatStreamPiece,
  type ChatStreamTranslator,
  chatUsage,
  type UpstreamEvent,
} from "./chat_response_types.ts";

/** The text of a string-or-text-parts content, parts joined without separator. */
export function textOf(content: string | ChatTextPart[]): string {
  return typeof content === "string"
    ? content
    : content.map((part) => part.text).join("");
}

/** A decoded `data:` URL: its media type and base64 payload. */
export interface DataUrl {
  mediaType: string;
  base64: string;
}

/**
 * Splits a base64 `data:` URL. Returns `null` for any other URL; throws for a
 * `data:` URL that is not base64, which no upstream accepts.
 */
export function parseDataUrl(url: string, param: string): DataUrl | null {
  if (!url.startsWith("data:")) return null;
  const match = /^data:([^;,]+)((?:;[^;,]+)*);base64,(.*)$/s.exec(url);
  if (!match) {
    throw new TranslationError(
      `Cannot read data URL "${url.slice(0, 40)}": expected base64`,
      param,
    );
  }
  return { mediaType: match[1].toLowerCase(), base64: match[3] };
}

/** Whether a URL can be fetched by the upstream itself. */
export function isHttpUrl(url: string): boolean {
  return url.startsWith("https://") || url.startsWith("http://");
}

/** Parses a tool call's arguments JSON into the object upstreams expect. */
export function parseArguments(
  json: string,
  param: string,
): Record<string, unknown> {
  if (json.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new TranslationError(
      `Cannot parse tool call arguments "${json.slice(0, 40)}": expected JSON`,
      param,
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TranslationError(
      `Tool call arguments "${json.slice(0, 40)}" are not a JSON object`,
      param,
    );
  }
  return value as Record<string, unknown>;
}

/** Maps every tool call id in the conversation to its function name. */
export function toolNamesById(messages: ChatMessage[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const message of messages) {
    if (message.role !== "assistant") continue;
    for (const call of message.tool_calls ?? []) {
      names.set(call.id, call.function.name);
    }
  }
  return names;
}

/** The caller's stop sequences as a list, or `undefined` when there are none. */
export function stopSequences(stop: ChatRequest["stop"]): string[] | undefined {
  if (stop === undefined || stop === null) return undefined;
  const list = (typeof stop === "string" ? [stop] : stop).filter((s) =>
    s.length > 0
  );
  return list.length > 0 ? list : undefined;
}

/** The caller's output token cap (`max_completion_tokens` wins over `max_tokens`). */
export function maxOutputTokens(chat: ChatRequest): number | undefined {
  return chat.max_completion_tokens ?? chat.max_tokens ?? undefined;
}

/** Rejects `n > 1`, which neither translated upstream can stream as choices. */
export function requireSingleChoice(chat: ChatRequest): void {
  if ((chat.n ?? 1) > 1) {
    throw new TranslationError(
      `Cannot use "n" ${chat.n} with this model: only n=1 is supported`,
      "n",
    );
  }
}

/** A function tool the upstream is sent, with its place in the caller's `tools`. */
export interface PlacedTool {
  /** The tool. */
  tool: ChatTool;
  /** Its index in the request's `tools`, for error params. */
  index: number;
}

/** The tool choice the translators express: `allowed_tools` and custom choices resolved. */
export type FunctionToolChoice =
  | "auto"
  | "none"
  | "required"
  | { type: "function"; function: { name: string } };

/**
 * The function tools to send and how the model may use them. Custom tools
 * (free-text input) have no counterpart upstream and are refused;
 * `allowed_tools` becomes the allowed tools alone with its mode as the
 * choice, which lets the model call exactly what the caller allowed. A
 * choice that forces a call with no tool to call is refused.
 *
 * @param chat The validated chat request.
 * @returns The tools (possibly none) and the choice, if any.
 * @throws {TranslationError} For a custom tool, a custom choice or an unknown allowed tool.
 */
export function functionTools(
  chat: ChatRequest,
): { tools: PlacedTool[]; choice: FunctionToolChoice | undefined } {
  let tools = (chat.tools ?? []).map((tool, index): PlacedTool => {
    if (tool.type !== "function") {
      throw new TranslationError(
        `Cannot use custom tool "${tool.custom.name}" with this model: the upstream's tools take JSON arguments, not free text`,
        `tools[${index}]`,
      );
    }
    return { tool, index };
  });
  let choice: FunctionToolChoice | undefined;
  const asked = chat.tool_choice;
  if (typeof asked === "object" && asked.type === "custom") {
    throw new TranslationError(
      `Cannot use "tool_choice" custom tool "${asked.custom.name}" with this model: the upstream has no custom tools`,
      "tool_choice",
    );
  } else if (typeof asked === "object" && asked.type === "allowed_tools") {
    const allowed = new Set(
      asked.allowed_tools.tools.map((entry, j) => {
        const name = (entry as { function?: { name?: unknown } }).function
          ?.name;
        if (entry.type !== "function" || typeof name !== "string") {
          throw new TranslationError(
            'Cannot use this allowed tool: expected {type: "function", function: {name}}',
            `tool_choice.allowed_tools.tools[${j}]`,
          );
        }
        if (!tools.some(({ tool }) => tool.function.name === name)) {
          throw new TranslationError(
            `Allowed tool "${name}" is not in "tools"`,
            `tool_choice.allowed_tools.tools[${j}]`,
          );
        }
        return name;
      }),
    );
    tools = tools.filter(({ tool }) => allowed.has(tool.function.name));
    choice = asked.allowed_tools.mode;
  } else {
    choice = asked;
  }
  if (
    (choice === "required" || typeof choice === "object") && tools.length === 0
  ) {
    throw new TranslationError(
      'Cannot use "tool_choice" that forces a call without "tools"',
      "tool_choice",
    );
  }
  return { tools, choice };
}

/** Current Unix time in seconds, as `created`. */
export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** A completion id in the chat convention, keeping the upstream id for cross-reference. */
export function chatId(upstreamId: string | undefined): string {
  return `chatcmpl-${upstreamId ?? crypto.randomUUID().replaceAll("-", "")}`;
}

/** A tool call id for upstreams that do not name their calls. */
export function newToolCallId(): string {
  return `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
}

/** Builds the chunks of one stream, all sharing id, `created` and model. */
export class ChunkBuilder {
  id: string;
  readonly created: number = nowSeconds();

  constructor(
    readonly model: string,
    readonly includeUsage: boolean,
    upstreamId?: string,
  ) {
    this.id = chatId(upstreamId);
  }

  /** A chunk with one choice. */
  delta(
    delta: ChatCompletionChunk["choices"][number]["delta"],
    finishReason: ChatFinishReason | null = null,
  ): ChatCompletionChunk {
    const chunk: ChatCompletionChunk = {
      id: this.id,
      object: "chat.completion.chunk",
      created: this.created,
      model: this.model,
      choices: [{
        index: 0,
        delta,
        finish_reason: finishReason,
        logprobs: null,
      }],
    };
    // OpenAI marks every chunk `usage: null` once the caller asked for usage.
    if (this.includeUsage) chunk.usage = null;
    return chunk;
  }

  /** The final usage chunk, `choices: []`. */
  usage(usage: Usage): ChatCompletionChunk {
    return {
      id: this.id,
      object: "chat.completion.chunk",
      created: this.created,
      model: this.model,
      choices: [],
      usage: chatUsage(usage),
    };
  }
}

/**
 * What the translated streams share: an event that is not JSON fails the
 * stream, nothing is emitted after a failure, and a stream that ends before
 * its finish reason fails; otherwise it ends with the usage chunk when the
 * caller asked for one. Subclasses translate one parsed event at a time.
 */
export abstract class ChatStreamBase implements ChatStreamTranslator {
  protected readonly chunks: ChunkBuilder;
  /** Set by the subclass once the upstream gave its finish reason. */
  protected finished = false;
  #failed = false;

  constructor(options: ChatStreamOptions) {
    this.chunks = new ChunkBuilder(options.model, options.includeUsage);
  }

  /** Tokens the upstream reported so far. */
  abstract get usage(): Usage;

  /** Whether an error event has been emitted. */
  get failed(): boolean {
    return this.#failed;
  }

  /**
   * Translates one upstream event.
   *
   * @param event The server-sent event as `eventsource-parser` gives it.
   * @returns The chat pieces to send, possibly none.
   */
  push(event: UpstreamEvent): ChatStreamPiece[] {
    if (this.#failed) return [];
    let data: unknown;
    try {
      data = JSON.parse(event.data);
    } catch {
      return this.fail(
        chatError("Upstream sent a malformed stream event", "server_error"),
      );
    }
    return this.pushParsed(data, event);
  }

  /**
   * Translates one upstream event whose data the caller already parsed.
   *
   * @param data The event's parsed JSON.
   * @param event The event, for its name.
   * @returns The chat pieces to send, possibly none.
   */
  pushParsed(data: unknown, event: UpstreamEvent): ChatStreamPiece[] {
    if (this.#failed) return [];
    return this.translate(data, event);
  }

  /**
   * Ends the stream.
   *
   * @returns The usage chunk when asked for, or an error event if the upstream stopped early.
   */
  finish(): ChatStreamPiece[] {
    if (this.#failed) return [];
    if (!this.finished) {
      return this.fail(
        chatError(
          "Upstream stream ended before the answer was complete",
          "server_error",
        ),
      );
    }
    return this.chunks.includeUsage ? [this.chunks.usage(this.usage)] : [];
  }

  /** Translates one parsed upstream event. */
  protected abstract translate(
    data: unknown,
    event: UpstreamEvent,
  ): ChatStreamPiece[];

  /** Emits `error` as the stream's last piece. */
  protected fail(error: ChatErrorBody): ChatStreamPiece[] {
    this.#failed = true;
    return [error];
  }
}

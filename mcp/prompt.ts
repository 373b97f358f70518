/**
 * Prompts for `MCPServer.prompt(options, fn)`: options, and the normalisation
 * that turns what a prompt function returns into a `GetPromptResult`.
 *
 * @module
 */
import type { ContentBlock } from "./_sdk.ts";
import type { Shape, ToolArgs, ToolExtra } from "./tool.ts";

/** Options of `MCPServer.prompt()`. */
export interface PromptOptions<S extends Shape = Shape> {
  /** Prompt name; defaults to the function's name. */
  name?: string;
  /** Human-readable title. */
  title?: string;
  /** What the prompt is for. */
  description?: string;
  /** Zod shape of the arguments (clients send strings; coerce with `z.coerce`). */
  input?: S;
}

/** One message of a prompt. */
export interface PromptMessage {
  /** Who says it. */
  role: "user" | "assistant";
  /** One content item. */
  content: ContentBlock;
}

/** A full prompt result, as the SDK sends it. */
export interface PromptResult {
  /** Optional description of this rendering. */
  description?: string;
  /** The messages. */
  messages: PromptMessage[];
  /** Anything else the result carries. */
  [key: string]: unknown;
}

/**
 * What a prompt function may return: a string (one user message), one
 * content item, a list of messages, or a full result.
 */
export type PromptReturn =
  | string
  | ContentBlock
  | PromptMessage[]
  | PromptResult;

/** A prompt function with argument shape `S`. */
export type PromptFunction<S extends Shape = Shape> = (
  args: ToolArgs<S>,
  extra: ToolExtra,
) => PromptReturn | Promise<PromptReturn>;

/**
 * Turns what a prompt function returned into a `GetPromptResult`.
 *
 * @param value What the function returned.
 * @returns The result to send.
 */
export function toPromptResult(value: PromptReturn): PromptResult {
  if (typeof value === "string") {
    return {
      messages: [{ role: "user", content: { type: "text", text: value } }],
    };
  }
  if (Array.isArray(value)) return { messages: value };
  if (
    ("messages" in value && Array.isArray(value.messages)) ||
    // A multi round-trip request (2026-07-28): the SDK sends it as it is.
    ("resultType" in value && value.resultType === "input_required")
  ) {
    return value as PromptResult;
  }
  return { messages: [{ role: "user", content: value as ContentBlock }] };
}

/**
 * Prompts for `MCPServer.prompt(options, fn)`: options, their registration on
 * an SDK server, and the normalisation that turns what a prompt function
 * returns into a `GetPromptResult`.
 *
 * @module
 */
import type {
  ContentBlock,
  McpServer,
  RegisteredPrompt,
  ServerContext,
} from "../_sdk.ts";
import {
  type Shape,
  type ToolArgs,
  type ToolExtra,
  toolExtra,
} from "./tool.ts";

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

/**
 * Registers a prompt function on an SDK server; its arguments are validated
 * by `options.input` and what it returns goes through
 * {@linkcode toPromptResult}.
 *
 * @param server The server whose registry gets the prompt.
 * @param options Name (default: `fn.name`), title, description, zod `input`.
 * @param fn The prompt function.
 * @throws {TypeError} When neither `options.name` nor `fn.name` names it.
 */
export function registerPromptFunction<S extends Shape>(
  server: McpServer,
  options: PromptOptions<S>,
  fn: PromptFunction<S>,
): void {
  const name = options.name ?? fn.name;
  if (!name) throw new TypeError("Cannot register a prompt without a name");
  const register = server.registerPrompt as (
    name: string,
    config: Record<string, unknown>,
    cb: (args: unknown, ctx: ServerContext) => Promise<unknown>,
  ) => RegisteredPrompt;
  register.call(
    server,
    name,
    {
      title: options.title,
      description: options.description,
      argsSchema: options.input ?? {},
    },
    async (args, ctx) =>
      toPromptResult(await fn(args as ToolArgs<S>, toolExtra(ctx))),
  );
}

/**
 * What the simulator answers, independent of wire format: each format's parser
 * reduces a request to a {@linkcode Prompt}, and {@linkcode decideReply} turns
 * it into a text or tool-call reply with deterministic usage.
 *
 * Rules:
 * - Computer-use agent: when the request declares a computer tool and the
 *   first user message gives instructions, the next action of the plan
 *   (`computer_use.ts`), then a text starting with "Done".
 * - Scripted agent (every convention: chat, Responses, Messages, Gemini): the
 *   first user message names declared tools in backticks (`` `look` ``): call
 *   each once, in the order named, with arguments generated from its schema;
 *   after the last, the rules below answer (with the last tool result). The
 *   tools already called are read from the conversation in the wire's own
 *   shape (chat `tool_calls`, Responses `function_call` items, Anthropic
 *   `tool_use` blocks, Gemini `functionCall` parts).
 * - The last message is a tool result: reply `Tool <name> returned: <result>`.
 * - Tools are declared and either the request forces one (`tool_choice`
 *   `required`/named, Anthropic `any`/`tool`, Gemini mode `ANY`) or the last
 *   user text contains `call tool <name>` naming a declared tool: reply with a
 *   call of that tool, arguments generated from its parameter schema.
 * - Otherwise: the behaviour's `reply`, else `Echo: <last user text>` (first
 *   200 characters), or the tool-result sentence above. When the request asks
 *   for structured output ({@linkcode OutputFormat}), that text is replaced by
 *   JSON generated from the schema (`{"reply": <text>}` without one), which
 *   validates against it.
 * - Input tokens: ceil(characters of all prompt text, tool definitions and
 *   tool arguments / 4) + each image's tokens as its provider bills it
 *   (`image.ts`; 258 when its size cannot be read). Cached tokens: see
 *   {@linkcode defaultCachedTokens}. Output tokens: ceil(reply characters / 4);
 *   a text reply over the request's output limit is cut to limit × 4
 *   characters and reported as stopped for length. Tool calls are never cut.
 *
 * @module
 */

import type { Behaviour } from "./behaviour.ts";
import { argumentsFromSchema, valueFromSchema } from "./schema.ts";
import {
  type ComputerAction,
  type ComputerTurn,
  doneText,
  turnActions,
} from "./computer_use.ts";
import {
  IMAGE_TOKENS,
  type ImageBilling,
  type ImageSize,
  imageSizeFromBase64,
  imageTokens,
} from "./image.ts";
import { defaultCachedTokens, tokensForChars } from "./tokens.ts";

/** A tool the request declares. */
export interface ToolDeclaration {
  /** Its name. */
  name: string;
  /** Its parameter schema. */
  schema: unknown;
}

/** A request reduced to what decides the reply; built by each wire format's parser. */
export interface Prompt {
  /** Characters of prompt text (system, messages, tool definitions and calls). */
  chars: number;
  /** Number of images. */
  images: number;
  /** Tokens the images count for (default: {@linkcode IMAGE_TOKENS} each). */
  imageTokens?: number;
  /** Text of the last user message. */
  lastUserText: string;
  /** Set when the last message is a tool result. */
  toolResult?: { name?: string; text: string };
  /** Declared tools. */
  tools: ToolDeclaration[];
  /** A tool the request forces (named, or the first one for "any"). */
  forcedTool?: string;
  /** `tool_choice: none` or equivalent. */
  toolsDisabled: boolean;
  /** Output token limit, if the request sets one. */
  maxOutputTokens?: number;
  /** The scripted agent's plan: declared tools the first user message names in backticks, in order. */
  script?: string[];
  /** Tools the conversation already called, in order. */
  calledTools?: string[];
  /** Structured output the request asks for: every text reply follows it. */
  outputFormat?: OutputFormat;
  /** The computer-use agent's plan and progress, when it plays (see `computer_use.ts`). */
  computer?: ComputerTurn;
}

/**
 * Structured output a request asks for: JSON (against a schema, or any JSON
 * object without one), or Gemini's `text/x.enum` (one value of the schema's enum).
 */
export type OutputFormat =
  | { kind: "json"; schema?: unknown }
  | { kind: "enum"; schema: unknown };

/**
 * The text of a structured reply: JSON generated from the schema (see
 * {@linkcode valueFromSchema}), `{"reply": <fallback>}` for JSON without a
 * schema, or the first enum value.
 *
 * @example
 * ```ts
 * import { structuredText } from "./reply.ts";
 * structuredText({ kind: "json" }, "Echo: hi"); // '{"reply":"Echo: hi"}'
 * ```
 *
 * @param format The format asked for.
 * @param fallback The text the reply would have had without it.
 * @returns The reply text.
 */
export function structuredText(format: OutputFormat, fallback: string): string {
  if (format.kind === "enum") {
    const value = valueFromSchema(format.schema);
    return typeof value === "string" ? value : JSON.stringify(value);
  }
  return JSON.stringify(
    format.schema === undefined
      ? { reply: fallback }
      : valueFromSchema(format.schema),
  );
}

/**
 * The scripted agent's plan for a conversation: the declared tools its first
 * user message names in backticks, in the order named, each once.
 *
 * @param firstUserText The first user message.
 * @param tools The declared tools.
 * @returns The tool names, possibly none.
 */
export function scriptOf(
  firstUserText: string,
  tools: readonly ToolDeclaration[],
): string[] {
  const declared = new Set(tools.map((tool) => tool.name));
  const named: string[] = [];
  for (const match of firstUserText.matchAll(/`([\w.-]+)`/g)) {
    if (declared.has(match[1]) && !named.includes(match[1])) {
      named.push(match[1]);
    }
  }
  return named;
}

/** Media types whose content is text, billed as text whatever part carries it. */
const TEXT_TYPE =
  /^(text\/|application\/(json|xml|x-yaml|yaml|csv|javascript|x-python|sql)\b|[^;]*\+(json|xml)\b)/;

/** Accumulates the size of a prompt while a parser walks it. */
export class PromptMeter {
  /** Characters seen. */
  chars = 0;
  /** Images seen. */
  images = 0;
  /** Tokens the images seen count for. */
  imageTokens = 0;
  /** Whose image billing applies. */
  readonly billing: ImageBilling;

  /**
   * Creates a meter.
   *
   * @param billing Whose image billing applies (see `image.ts`).
   */
  constructor(billing: ImageBilling) {
    this.billing = billing;
  }

  /**
   * What the meter has counted, as a {@linkcode Prompt} carries it.
   *
   * @returns The characters, the images and the tokens they count for.
   */
  size(): Pick<Prompt, "chars" | "images" | "imageTokens"> {
    return {
      chars: this.chars,
      images: this.images,
      imageTokens: this.imageTokens,
    };
  }

  /**
   * Counts a piece of text.
   *
   * @param text The text; non-strings are ignored.
   */
  text(text: unknown): void {
    if (typeof text === "string") this.chars += text.length;
  }

  /**
   * Counts a JSON value by its serialised length (tool schemas, arguments).
   *
   * @param value The value; `undefined` is ignored.
   */
  json(value: unknown): void {
    if (value === undefined) return;
    this.chars += typeof value === "string"
      ? value.length
      : JSON.stringify(value).length;
  }

  /**
   * Counts inline data by its type: text types (`text/*`, JSON, XML, YAML,
   * CSV) as text of their decoded size, images billed from their size, any
   * other medium as one image of unknown size.
   *
   * @param mimeType The data's media type.
   * @param base64 The data.
   */
  inline(mimeType: unknown, base64: unknown): void {
    const type = typeof mimeType === "string" ? mimeType.toLowerCase() : "";
    if (TEXT_TYPE.test(type)) {
      if (typeof base64 === "string") {
        this.chars += Math.floor((base64.length * 3) / 4);
      }
    } else {
      this.image(
        type.startsWith("image/") ? imageSizeFromBase64(base64) : undefined,
      );
    }
  }

  /**
   * Counts one image, billed from its size.
   *
   * @param size Its pixel size; `undefined` when it cannot be read.
   * @param detail OpenAI's `detail`, if given.
   */
  image(size?: ImageSize, detail?: unknown): void {
    this.images += 1;
    this.imageTokens += imageTokens(
      size,
      this.billing,
      typeof detail === "string" ? detail : undefined,
    );
  }
}

/** The reply's content. */
export type ReplyContent =
  | { kind: "text"; text: string }
  | { kind: "tool"; name: string; arguments: string }
  | ComputerCall;

/** The computer-use agent's next action, for the wire format to shape. */
export interface ComputerCall {
  /** The kind. */
  kind: "computer";
  /** The (first) action, in agent pixels. */
  action: ComputerAction;
  /** Every action of the turn, `action` first: more than one where the wire batches. */
  actions: ComputerAction[];
  /** The screen, for conventions that normalise coordinates. */
  screen: { width: number; height: number };
  /** Whether the action carries a safety check the next request must acknowledge. */
  safetyCheck: boolean;
}

/** The reply with its usage. */
export interface Reply {
  /** Text or tool call. */
  content: ReplyContent;
  /** Why generation stopped, normalised. */
  stop: "end" | "length" | "tool";
  /** All prompt tokens, cached ones included. */
  inputTokens: number;
  /** The cached part of `inputTokens`. */
  cachedTokens: number;
  /** Anthropic cache writes (part of `inputTokens`). */
  cacheCreationTokens: number;
  /** The images' part of `inputTokens` (0 when a behaviour overrides the input count). */
  imageTokens?: number;
  /** Completion tokens. */
  outputTokens: number;
}

const ECHO_LIMIT = 200;
const TOOL_TRIGGER = /call tool ([\w.-]+)/i;

function truncate(text: string, limit: number): string {
  return text.length > limit ? text.slice(0, limit) : text;
}

function scriptedTool(prompt: Prompt): ToolDeclaration | undefined {
  if (prompt.toolsDisabled || !prompt.script?.length) return undefined;
  const called = prompt.calledTools ?? [];
  const next = prompt.script.find((name) => !called.includes(name));
  return prompt.tools.find((tool) => tool.name === next);
}

function chooseTool(prompt: Prompt): ToolDeclaration | undefined {
  if (prompt.toolsDisabled || prompt.tools.length === 0) return undefined;
  const wanted = prompt.forcedTool ??
    TOOL_TRIGGER.exec(prompt.lastUserText)?.[1];
  if (wanted === undefined) return undefined;
  return prompt.tools.find((tool) => tool.name === wanted) ??
    prompt.tools.find((tool) =>
      tool.name.toLowerCase() === wanted.toLowerCase()
    );
}

/**
 * Decides the reply to a prompt under a behaviour.
 *
 * @example
 * ```ts
 * import { decideReply } from "./reply.ts";
 * const reply = decideReply({ chars: 5, images: 0, lastUserText: "hello", tools: [], toolsDisabled: false }, {});
 * reply.content; // { kind: "text", text: "Echo: hello" }
 * ```
 *
 * @param prompt The reduced request.
 * @param behaviour The behaviour in force (`reply`, `usage`).
 * @returns The reply with its usage.
 */
export function decideReply(prompt: Prompt, behaviour: Behaviour): Reply {
  const override = behaviour.usage ?? {};
  const promptImageTokens = prompt.imageTokens ??
    prompt.images * IMAGE_TOKENS;
  const inputTokens = override.inputTokens ??
    tokensForChars(prompt.chars) + promptImageTokens;
  const cachedTokens = Math.min(
    override.cachedTokens ?? defaultCachedTokens(inputTokens),
    inputTokens,
  );
  const cacheCreationTokens = Math.min(
    override.cacheCreationTokens ?? 0,
    inputTokens - cachedTokens,
  );
  const imageTokens = override.inputTokens === undefined
    ? promptImageTokens
    : 0;
  const usage = { inputTokens, cachedTokens, cacheCreationTokens, imageTokens };

  const computer = prompt.toolsDisabled ? undefined : prompt.computer;
  const actions = computer
    ? turnActions(computer.plan, computer.done, computer.batched ?? false)
    : [];
  const [action] = actions;
  if (computer && action) {
    const outputTokens = override.outputTokens ??
      tokensForChars(
        JSON.stringify(actions.length === 1 ? action : actions).length,
      );
    const { plan, done } = computer;
    return {
      content: {
        kind: "computer",
        action,
        actions,
        screen: { width: plan.width, height: plan.height },
        safetyCheck: plan.confirmAt === done,
      },
      stop: "tool",
      outputTokens,
      ...usage,
    };
  }

  const tool = computer ? undefined : scriptedTool(prompt) ??
    (prompt.toolResult ? undefined : chooseTool(prompt));
  if (tool) {
    const args = JSON.stringify(argumentsFromSchema(tool.schema));
    const outputTokens = override.outputTokens ??
      tokensForChars(tool.name.length + args.length);
    return {
      content: { kind: "tool", name: tool.name, arguments: args },
      stop: "tool",
      outputTokens,
      ...usage,
    };
  }

  const natural = computer
    ? doneText(computer.plan.actions)
    : prompt.toolResult
    ? `Tool ${prompt.toolResult.name ?? "call"} returned: ${
      truncate(prompt.toolResult.text, ECHO_LIMIT)
    }`
    : `Echo: ${truncate(prompt.lastUserText, ECHO_LIMIT)}`;
  let text = behaviour.reply ??
    (prompt.outputFormat
      ? structuredText(prompt.outputFormat, natural)
      : natural);
  let stop: Reply["stop"] = "end";
  const limit = prompt.maxOutputTokens;
  if (limit !== undefined && tokensForChars(text.length) > limit) {
    text = text.slice(0, Math.max(0, limit) * 4);
    stop = "length";
  }
  const outputTokens = override.outputTokens ?? tokensForChars(text.length);
  return { content: { kind: "text", text }, stop, outputTokens, ...usage };
}

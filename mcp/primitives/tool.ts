/**
 * Tool definitions, the {@linkcode BaseTool} class, their registration on an
 * SDK server, and the normalisation that turns whatever a tool returns into
 * an MCP `CallToolResult`.
 *
 * @module
 */
import type { z } from "zod";
import type {
  CallToolResult,
  ContentBlock,
  McpServer,
  RegisteredTool,
  ServerContext,
  ServerNotification,
  ToolAnnotations,
} from "../_sdk.ts";

/** A zod raw shape: the `{ field: z.string() }` object tools declare as input. */
export type Shape = z.ZodRawShape;

/** The parsed arguments a tool receives for input shape `S`. */
export type ToolArgs<S extends Shape> = z.output<z.ZodObject<S>>;

/**
 * What a handler receives beside its arguments: the SDK v2 request context
 * (`mcpReq`, `http`, `sessionId`) plus the v1 names handlers written before
 * v2 use (`_meta`, `signal`, `requestId`, `sendNotification`).
 */
export type ToolExtra = ServerContext & {
  /** The request's `_meta` (`mcpReq._meta`): progress token, harness token, any other key. */
  _meta?: ServerContext["mcpReq"]["_meta"];
  /** Aborted when the request is cancelled (`mcpReq.signal`). */
  signal: AbortSignal;
  /** The JSON-RPC id of the request (`mcpReq.id`). */
  requestId: string | number;
  /**
   * Sends a notification related to this request (`mcpReq.notify`).
   *
   * @param notification The notification, e.g. `notifications/progress`.
   */
  sendNotification(notification: ServerNotification): Promise<void>;
  /** Closes this request's SSE stream so the client resumes it (`http.closeSSE`; legacy sessions with `resumable`). */
  closeSSEStream?: () => void;
};

/**
 * The {@linkcode ToolExtra} for one request's SDK context.
 *
 * @param ctx The SDK's request context.
 * @returns The context with the v1 names added.
 */
export function toolExtra(ctx: ServerContext): ToolExtra {
  return {
    ...ctx,
    _meta: ctx.mcpReq._meta,
    signal: ctx.mcpReq.signal,
    requestId: ctx.mcpReq.id,
    sendNotification: (notification) => ctx.mcpReq.notify(notification),
    closeSSEStream: ctx.http?.closeSSE,
  };
}

/** The result of an evaluate tool: a score and whether the episode is over. */
export interface EvaluationResult {
  /** Score of the run, usually between 0 and 1. */
  reward: number;
  /** Whether the episode has ended. */
  done: boolean;
  /** Explanation for the agent or the grader: text or content items. */
  content?: string | ContentBlock[];
  /** Anything else the grader wants to keep. */
  info?: Record<string, unknown>;
}

/**
 * Everything a tool may return: a string, a plain object (structured content),
 * a list of content items, a full `CallToolResult`, an {@linkcode EvaluationResult}
 * or nothing.
 */
export type ToolReturn =
  | string
  | number
  | boolean
  | null
  | undefined
  | void
  | CallToolResult
  | EvaluationResult
  | ContentBlock[]
  | unknown[]
  | Record<string, unknown>;

/** A tool function with input shape `S`. */
export type ToolFunction<S extends Shape = Shape> = (
  args: ToolArgs<S>,
  extra: ToolExtra,
) => ToolReturn | Promise<ToolReturn>;

/** Options of `MCPServer.tool()` and `BaseHub.tool()`. */
export interface ToolOptions<S extends Shape = Shape> {
  /** Tool name; defaults to the function's name. */
  name?: string;
  /** Human-readable title. */
  title?: string;
  /** What the tool does, for the agent. */
  description?: string;
  /** Zod shape of the arguments. */
  input?: S;
  /** Zod shape of the structured result; the SDK validates results against it. */
  output?: Shape;
  /** MCP tool annotations (`readOnlyHint`, `destructiveHint`, …). */
  annotations?: ToolAnnotations;
  /** Extra `_meta` published with the tool. */
  _meta?: Record<string, unknown>;
}

/** A complete tool: its options plus the function that runs it. */
export interface ToolDefinition<S extends Shape = Shape>
  extends ToolOptions<S> {
  /** Tool name, as listed to clients. */
  name: string;
  /** The function that runs the tool. */
  handler: ToolFunction<S>;
}

/**
 * A tool as a class, for tools that carry state or share an environment.
 * Subclasses set `description` and `input` and implement `call`.
 *
 * @example Define and register a class-based tool
 * ```ts
 * import { z } from "zod";
 * import { BaseTool, MCPServer } from "../mod.ts";
 *
 * class EchoTool extends BaseTool<{ text: z.ZodString }> {
 *   override description = "Repeat the text.";
 *   override input = { text: z.string() };
 *   call({ text }: { text: string }): string {
 *     return text;
 *   }
 * }
 * const mcp = new MCPServer({ name: "echo" });
 * mcp.addTool(new EchoTool()); // registered as "echo"
 * ```
 */
export abstract class BaseTool<
  S extends Shape = Shape,
  // deno-lint-ignore no-explicit-any -- the environment is whatever the application makes it
  Env = any,
> {
  /** Tool name; defaults to the class name, lower-case, without a trailing `Tool`. */
  name: string;
  /** What the tool does, for the agent. */
  description = "";
  /** Zod shape of the arguments. */
  input: S = {} as S;
  /** The environment the tool acts on, set by the application. */
  env: Env;

  /**
   * Creates the tool.
   *
   * @param env The environment the tool acts on.
   */
  constructor(env?: Env) {
    this.name = defaultToolName(new.target.name);
    this.env = env as Env;
  }

  /**
   * Runs the tool.
   *
   * @param args Arguments, already validated against `input`.
   * @param extra The SDK's request context.
   * @returns Anything a tool may return.
   */
  abstract call(
    args: ToolArgs<S>,
    extra: ToolExtra,
  ): ToolReturn | Promise<ToolReturn>;

  /**
   * The definition `MCPServer.addTool()` registers.
   *
   * @returns Name, description, input shape and a handler bound to this tool.
   */
  get mcp(): ToolDefinition<S> {
    return {
      name: this.name,
      description: this.description,
      input: this.input,
      handler: (args, extra) => this.call(args, extra),
    };
  }
}

/**
 * Derives a tool name from a class name: `ClickTool` becomes `click`.
 *
 * @param className The class name.
 * @returns The lower-case name without a trailing `Tool`.
 */
export function defaultToolName(className: string): string {
  const trimmed = className.replace(/Tool$/, "");
  return (trimmed || className).toLowerCase();
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isContentItem(value: unknown): value is ContentBlock {
  return isRecord(value) && typeof value.type === "string";
}

function isEvaluationResult(
  value: Record<string, unknown>,
): value is EvaluationResult & Record<string, unknown> {
  return typeof value.reward === "number" && typeof value.done === "boolean";
}

function isCallToolResult(
  value: Record<string, unknown>,
): value is CallToolResult {
  return (Array.isArray(value.content) && value.content.every(isContentItem)) ||
    isRecord(value.structuredContent);
}

function text(value: string): ContentBlock {
  return { type: "text", text: value };
}

function normalizeEvaluation(result: EvaluationResult): CallToolResult {
  const structured: Record<string, unknown> = {
    reward: result.reward,
    done: result.done,
  };
  if (result.info !== undefined) structured.info = result.info;
  const content = typeof result.content === "string"
    ? [text(result.content)]
    : result.content ?? [text(JSON.stringify(structured))];
  return { content, structuredContent: structured };
}

/**
 * Turns a tool's return value into a `CallToolResult`.
 *
 * - `undefined`/`null`: empty content
 * - string (or other primitive): one text item
 * - list of content items: that content; any other list: JSON text plus
 *   `structuredContent: {result}`
 * - full `CallToolResult` (has `content` items or `structuredContent`): as it is
 * - `{reward, done, content?, info?}`: `structuredContent` with reward and done
 * - any other object: `structuredContent` plus a JSON text copy
 *
 * @param value What the tool returned.
 * @returns The result to send to the client.
 * @example
 * ```ts
 * import { normalizeToolResult } from "./tool.ts";
 * normalizeToolResult({ score: 3 });
 * // { content: [{ type: "text", text: '{"score":3}' }], structuredContent: { score: 3 } }
 * ```
 */
export function normalizeToolResult(value: unknown): CallToolResult {
  if (value === undefined || value === null) return { content: [] };
  if (typeof value === "string") return { content: [text(value)] };
  if (Array.isArray(value)) {
    if (value.every(isContentItem)) return { content: value };
    return {
      content: [text(JSON.stringify(value))],
      structuredContent: { result: value },
    };
  }
  if (isRecord(value)) {
    // A multi round-trip request (2026-07-28): the SDK sends it as it is.
    if (value.resultType === "input_required") return value as CallToolResult;
    if (isEvaluationResult(value)) return normalizeEvaluation(value);
    if (isCallToolResult(value)) return value;
    return { content: [text(JSON.stringify(value))], structuredContent: value };
  }
  return { content: [text(String(value))] };
}

/** A TC39 method decorator that registers the method as a tool. */
export type ToolMethodDecorator<S extends Shape> = <
  This,
  F extends (
    this: This,
    args: ToolArgs<S>,
    extra: ToolExtra,
  ) => ToolReturn | Promise<ToolReturn>,
>(value: F, context: ClassMethodDecoratorContext<This, F>) => F;

/**
 * Registers a tool definition on an SDK server; whatever its handler returns
 * is normalised to a `CallToolResult`.
 *
 * @param server The server whose registry gets the tool.
 * @param def The definition; it must have a name.
 * @param refusal Why a call may not run (its text), checked before the
 * handler; `undefined` lets it run.
 * @returns The SDK's handle of the registered tool.
 * @throws {TypeError} When the definition has no name.
 */
export function registerToolDefinition(
  server: McpServer,
  def: ToolDefinition,
  refusal?: (name: string, extra: ToolExtra) => string | undefined,
): RegisteredTool {
  if (!def.name) throw new TypeError("Cannot register a tool without a name");
  const handler = def.handler;
  const register = server.registerTool as (
    name: string,
    config: Record<string, unknown>,
    cb: (args: unknown, ctx: ServerContext) => Promise<unknown>,
  ) => RegisteredTool;
  return register.call(
    server,
    def.name,
    {
      title: def.title,
      description: def.description,
      inputSchema: def.input ?? {},
      outputSchema: def.output,
      annotations: def.annotations,
      _meta: def._meta,
    },
    async (args, ctx) => {
      const extra = toolExtra(ctx);
      const refused = refusal?.(def.name!, extra);
      if (refused !== undefined) {
        return { content: [{ type: "text", text: refused }], isError: true };
      }
      return normalizeToolResult(
        await handler(args as ToolArgs<Shape>, extra),
      );
    },
  );
}

/**
 * `MCPServer.tool()`'s two forms: with a function, registers it (named after
 * it unless the options name the tool) and returns it; without, returns a
 * method decorator ({@linkcode toolDecorator}).
 *
 * @param options The tool's options.
 * @param fn The tool function, or none for the decorator form.
 * @param register Registers the definition.
 * @returns `fn`, unchanged, or the decorator.
 * @throws {TypeError} When `options` is not an object (the SDK's own
 * `registerTool(name, config, fn)` form, say).
 */
export function toolOrDecorator(
  options: ToolOptions,
  fn: ToolFunction | undefined,
  register: (def: ToolDefinition) => unknown,
): ToolFunction | ToolMethodDecorator<Shape> {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(
      "Cannot register a tool: expected tool({ name, description, input }, fn) (the SDK's own form is registerTool(name, config, fn))",
    );
  }
  if (fn === undefined) return toolDecorator(options, register);
  register({ ...options, name: options.name ?? fn.name, handler: fn });
  return fn;
}

/**
 * A method decorator that registers each instance's method as a tool when the
 * instance is built (name: `options.name`, else the method's name).
 *
 * @param options The tool's options.
 * @param register Registers the definition.
 * @returns The decorator.
 */
export function toolDecorator(
  options: ToolOptions,
  register: (def: ToolDefinition) => unknown,
): ToolMethodDecorator<Shape> {
  return (value, context) => {
    context.addInitializer(function () {
      const handler: ToolFunction = (args, extra) =>
        value.call(this, args, extra);
      register({
        ...options,
        name: options.name ?? String(context.name),
        handler,
      });
    });
    return value;
  };
}

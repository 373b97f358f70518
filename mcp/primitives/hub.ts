/**
 * {@linkcode BaseHub}: a named group of internal tools (setup, evaluate, …)
 * that an `MCPServer` exposes behind one dispatcher tool, and
 * {@linkcode registerHub}, which registers that dispatcher and the hub's
 * function list.
 *
 * @module
 */
import { z } from "zod";
import { ProtocolError, ProtocolErrorCode } from "../_sdk.ts";
import type { CallToolResult, McpServer, RegisteredTool } from "../_sdk.ts";
import { harnessRefusal } from "../harness.ts";
import { normalizeResourceResult } from "./resource.ts";
import {
  formatZodError,
  type JsonSchema,
  shapeToJsonSchema,
} from "./_schema.ts";
import {
  normalizeToolResult,
  registerToolDefinition,
  type Shape,
  type ToolExtra,
  type ToolFunction,
  type ToolOptions,
} from "./tool.ts";

/** A tool registered on a hub. */
export interface HubTool {
  /** Name inside the hub. */
  readonly name: string;
  /** What the tool does. */
  readonly description?: string;
  /** Zod shape of the arguments. */
  readonly input: Shape;
  /** The function that runs the tool. */
  readonly handler: ToolFunction;
}

/** One entry of the `{hub}://functions` resource. */
export interface HubFunction {
  /** Tool name inside the hub. */
  name: string;
  /** What the tool does. */
  description?: string;
  /** JSON Schema of the tool's `arguments`. */
  input_schema: JsonSchema;
}

/**
 * A named group of internal tools. Mounted on an `MCPServer`, the hub appears
 * to agents as one dispatcher tool named after it, called with
 * `{name, arguments}`; its own tools stay out of `tools/list`.
 *
 * @example A setup hub
 * ```ts
 * import { z } from "zod";
 * import { BaseHub, MCPServer } from "../mod.ts";
 *
 * const setup = new BaseHub("setup");
 * setup.env = { count: 0 };
 * setup.tool("reset", { input: { to: z.number() } }, ({ to }) => {
 *   setup.env.count = to;
 * });
 * const mcp = new MCPServer({ name: "counter" });
 * mcp.mount(setup); // agents call tool "setup" with {name: "reset", arguments: {to: 3}}
 * ```
 */
// deno-lint-ignore no-explicit-any -- the environment is whatever the application makes it
export class BaseHub<Env = any> {
  /** Hub name: the dispatcher tool's name and the `{name}://functions` scheme. */
  readonly name: string;
  /** Description of the dispatcher tool; a default lists the hub's tools. */
  description?: string;
  /** The environment the hub's tools act on, set by the application. */
  env: Env = undefined as Env;
  readonly #tools = new Map<string, HubTool>();
  readonly #listeners = new Set<() => void>();
  readonly #schemas = new WeakMap<HubTool, z.ZodObject>();

  /**
   * Creates an empty hub.
   *
   * @param name Hub name; a valid URI scheme (letters, digits, `+`, `-`, `.`).
   * @param description Description of the dispatcher tool.
   */
  constructor(name: string, description?: string) {
    if (!/^[a-zA-Z][a-zA-Z0-9+.-]*$/.test(name)) {
      throw new TypeError(
        `Cannot create hub "${name}": the name must be a valid URI scheme`,
      );
    }
    this.name = name;
    this.description = description;
  }

  /** The hub's tools, in registration order. */
  get tools(): readonly HubTool[] {
    return [...this.#tools.values()];
  }

  /**
   * Registers an internal tool.
   *
   * @param name Tool name inside the hub.
   * @param fn The function that runs the tool.
   * @returns `fn`, unchanged.
   */
  tool<F extends ToolFunction<Record<never, never>>>(name: string, fn: F): F;
  /**
   * Registers an internal tool with options.
   *
   * @param name Tool name inside the hub.
   * @param options Description and zod `input` shape.
   * @param fn The function that runs the tool.
   * @returns `fn`, unchanged.
   */
  tool<S extends Shape, F extends ToolFunction<S>>(
    name: string,
    options: ToolOptions<S>,
    fn: F,
  ): F;
  tool(
    name: string,
    optionsOrFn: ToolOptions | ToolFunction,
    maybeFn?: ToolFunction,
  ): ToolFunction {
    const options = typeof optionsOrFn === "function" ? {} : optionsOrFn;
    const fn = typeof optionsOrFn === "function" ? optionsOrFn : maybeFn;
    if (typeof fn !== "function") {
      throw new TypeError(
        `Cannot register hub tool "${name}": no function given`,
      );
    }
    if (this.#tools.has(name)) {
      throw new Error(
        `Tool "${name}" is already registered in hub "${this.name}"`,
      );
    }
    this.#tools.set(name, {
      name,
      description: options.description,
      input: options.input ?? {},
      handler: fn,
    });
    for (const listener of this.#listeners) listener();
    return fn;
  }

  /**
   * Subscribes to changes of the tool list (used by `MCPServer.mount`).
   *
   * @param listener Called after each registration.
   * @returns A function that unsubscribes.
   */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Lists the hub's tools for the `{hub}://functions` resource.
   *
   * @returns Name, description and input JSON Schema of each tool.
   */
  functions(): HubFunction[] {
    return this.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: shapeToJsonSchema(tool.input),
    }));
  }

  /**
   * Runs one of the hub's tools as the dispatcher does: looks the tool up,
   * parses `args` (an object or a JSON string), validates them and normalises
   * the result.
   *
   * @param name Tool name inside the hub.
   * @param args Arguments: an object, a JSON string, or nothing.
   * @param extra The SDK's request context.
   * @returns The tool's result; `isError` for an unknown tool or bad JSON.
   * @throws {ProtocolError} `InvalidParams` when the arguments fail the tool's shape.
   */
  async dispatch(
    name: string,
    args: unknown,
    extra: ToolExtra,
  ): Promise<CallToolResult> {
    const tool = this.#tools.get(name);
    if (!tool) {
      const names = this.tools.map((t) => `"${t.name}"`).join(", ") || "none";
      return errorResult(
        `Unknown tool "${name}" in hub "${this.name}": available tools are ${names}`,
      );
    }
    let parsed: unknown = args ?? {};
    if (typeof args === "string") {
      try {
        parsed = args.trim() === "" ? {} : JSON.parse(args);
      } catch (error) {
        return errorResult(
          `Cannot parse arguments of "${this.name}/${name}" as JSON: ${
            (error as Error).message
          }`,
        );
      }
    }
    const result = await this.#schema(tool).safeParseAsync(parsed);
    if (!result.success) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Input validation error: Invalid arguments for tool ${this.name}/${name}: ${
          formatZodError(result.error)
        }`,
      );
    }
    return normalizeToolResult(await tool.handler(result.data, extra));
  }

  /** The tool's zod object, built once: building it per call was half the dispatch cost. */
  #schema(tool: HubTool): z.ZodObject {
    let schema = this.#schemas.get(tool);
    if (!schema) {
      schema = z.object(tool.input);
      this.#schemas.set(tool, schema);
    }
    return schema;
  }

  /**
   * The dispatcher's input shape: `name` (advertised as an enum of the hub's
   * tools) and `arguments` (an object or a JSON string).
   *
   * `name` validates as any string so that an unknown name reaches
   * {@linkcode BaseHub.dispatch}, whose error names the hub's tools; the enum
   * is published through zod metadata.
   *
   * @returns The zod shape.
   */
  dispatcherInput(): Shape {
    return {
      name: z.string().meta({
        description: `Name of the "${this.name}" tool to call`,
        enum: this.tools.map((tool) => tool.name),
      }),
      arguments: z.union([z.record(z.string(), z.unknown()), z.string()])
        .optional().meta({
          description:
            "Arguments of that tool: an object, or the same object as a JSON string",
        }),
    };
  }

  /**
   * The dispatcher's description: `description` if set, otherwise a list of the tools.
   *
   * @returns The description.
   */
  dispatcherDescription(): string {
    if (this.description) return this.description;
    const lines = this.tools.map((tool) =>
      `- ${tool.name}${tool.description ? `: ${tool.description}` : ""}`
    );
    return [
      `Call a "${this.name}" tool by name with its arguments. Tools:`,
      ...lines,
    ].join("\n");
  }
}

/**
 * Registers a hub on an SDK server: one dispatcher tool named after it (input
 * `{name, arguments}`) and a `{hub}://functions` resource listing its tools.
 * Tools the hub gains later are added to the dispatcher.
 *
 * @param server The server whose registry gets the dispatcher and resource.
 * @param hub The hub.
 * @param harnessAllowed Whether a request may call the hub; a refused one gets
 * the harness refusal. Omit it for a hub anyone may call.
 * @param refusal Why a call of the dispatcher may not run (a run's tool
 * filters), as for {@linkcode registerToolDefinition}.
 */
export function registerHub(
  server: McpServer,
  hub: BaseHub,
  harnessAllowed?: (extra: ToolExtra) => boolean,
  refusal?: (name: string, extra: ToolExtra) => string | undefined,
): void {
  if (hub.tools.length === 0) {
    // Its dispatcher would offer `name: enum []`, which no agent can call.
    console.error(
      `Warning: hub "${hub.name}" is mounted with no tools; add them with ${hub.name}.tool(...) (the dispatcher lists them as they come)`,
    );
  }
  const dispatcher: RegisteredTool = registerToolDefinition(server, {
    name: hub.name,
    description: hub.dispatcherDescription(),
    input: hub.dispatcherInput(),
    handler: (args, extra) =>
      harnessAllowed && !harnessAllowed(extra)
        ? harnessRefusal(hub.name)
        : hub.dispatch(String(args.name), args.arguments, extra),
  }, refusal);
  server.registerResource(`${hub.name} functions`, `${hub.name}://functions`, {
    description:
      `Tools of the "${hub.name}" hub: name, description, input schema`,
    mimeType: "application/json",
  }, (uri) => normalizeResourceResult(uri, hub.functions()));
  hub.onChange(() => {
    dispatcher.update({
      paramsSchema: z.object(hub.dispatcherInput()),
      description: hub.dispatcherDescription(),
    });
  });
}

function errorResult(message: string): CallToolResult {
  return { content: [{ type: "text", text: message }], isError: true };
}

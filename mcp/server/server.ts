/**
 * {@linkcode MCPServer}: the SDK's `McpServer` with initialize and shutdown
 * hooks, function-returning `tool`/`resource`/`prompt`, scenarios, hubs,
 * composition and a container-ready `run()`. The class is the public API and
 * delegates each concern: its options to `options.ts`; registration to
 * `../primitives/` (`tool.ts`, `resource.ts`, `prompt.ts`) and
 * `../scenarios/wire.ts`; hubs to `hubs.ts`, mounted servers to
 * `compose.ts`; what the HUD control channel serves to `hud_registry.ts`;
 * the protocol instances and list changes to `instances.ts`; running to
 * `run.ts`.
 *
 * @module
 */
import {
  type Implementation,
  McpServer,
  type McpServerOptions,
  type ProtocolEra,
  type RegisteredTool,
  type Transport,
} from "../_sdk.ts";
import type { BaseHub } from "../primitives/hub.ts";
import {
  registerResourceFunction,
  resourceArguments,
  type ResourceFunction,
  type ResourceOptions,
} from "../primitives/resource.ts";
import {
  type PromptFunction,
  type PromptOptions,
  registerPromptFunction,
} from "../primitives/prompt.ts";
import {
  BaseTool,
  registerToolDefinition,
  type Shape,
  type ToolDefinition,
  type ToolExtra,
  type ToolFunction,
  type ToolMethodDecorator,
  type ToolOptions,
  toolOrDecorator,
} from "../primitives/tool.ts";
import type {
  ScenarioFunction,
  ScenarioOptions,
} from "../scenarios/scenario.ts";
import { Scenarios } from "../scenarios/wire.ts";
import { RunToolFilters } from "../scenarios/run_tools.ts";
import { runKey } from "../scenarios/runs.ts";
import type { Capability } from "../hud/capability.ts";
import { Compositions } from "./compose.ts";
import { MountedHubs } from "./hubs.ts";
import { HudRegistry } from "./hud_registry.ts";
import { type InitializeHook, InitializeHooks } from "./initialize.ts";
import { type ListName, ProtocolInstances } from "./instances.ts";
import { type MCPServerOptions, serverSettings } from "./options.ts";
import { type RunOptions, ServerRun } from "./run.ts";
import type { ShutdownHook } from "./signals.ts";

/**
 * An MCP server for evaluation environments. It is the SDK's `McpServer`
 * (every SDK method works as documented there) plus:
 *
 * - `initialize(fn)`: setup inside the first `initialize` request
 * - `shutdown(fn)`: cleanup on SIGTERM only
 * - `tool(options, fn)`: registers `fn` and returns it; also `@mcp.tool({...})`
 * - `addTool(x)`, `mount(hub)`, `mount(server, prefix)`
 * - `resource(uri, fn)`: JSON-serialising resources, returns `fn`
 * - `run({transport, port, host})`: stdio, Streamable HTTP, legacy SSE or
 *   HUD v6's control channel (`"hud"`)
 *
 * @example A counter environment
 * ```ts
 * import { z } from "zod";
 * import { BaseHub, MCPServer } from "../mod.ts";
 *
 * const mcp = new MCPServer({ name: "counter-env" });
 * const setup = new BaseHub("setup");
 * mcp.initialize(() => {
 *   setup.env = { count: 0 };
 *   mcp.mount(setup);
 * });
 * setup.tool("reset", { input: { to: z.number() } }, ({ to }) => {
 *   setup.env.count = to;
 * });
 * mcp.tool({ name: "increment", input: { by: z.number().default(1) } }, ({ by }) => String(setup.env.count += by));
 * // await mcp.run({ transport: "stdio" });
 * ```
 */
export class MCPServer extends McpServer {
  /** Name and version sent in the handshake. */
  readonly info: Implementation;
  /** How long a SIGTERM stop may take: draining calls, then shutdown hooks (ms). */
  readonly shutdownTimeoutMs: number;
  readonly #harnessToken: string | undefined;
  readonly #sdkOptions: McpServerOptions;
  readonly #initializeHooks = new InitializeHooks();
  readonly #shutdownHooks: ShutdownHook[] = [];
  readonly #instances = new ProtocolInstances(this.#initializeHooks);
  readonly #hubs: MountedHubs;
  readonly #compositions = new Compositions(this, {
    initialize: this.#initializeHooks,
    shutdown: this.#shutdownHooks,
  });
  readonly #run = new ServerRun();
  #scenarios: Scenarios | undefined;
  /** The tool filters of the live runs (scenario prompts and HUD tasks). */
  readonly #runFilters = new RunToolFilters();
  readonly #hud = new HudRegistry();

  /**
   * Creates the server. Tools, resources, prompts and logging are declared as
   * capabilities up front so every protocol instance gets their handlers and
   * registering after a client connected works.
   *
   * @param options Name, version, instructions, shutdown timeout, and SDK options.
   */
  constructor(options: MCPServerOptions) {
    const settings = serverSettings(options);
    super(settings.info, settings.sdkOptions);
    this.info = settings.info;
    this.shutdownTimeoutMs = settings.shutdownTimeoutMs;
    this.#harnessToken = settings.harnessToken;
    this.#sdkOptions = settings.sdkOptions;
    this.#hubs = new MountedHubs(
      this,
      settings.harnessToken,
      settings.harnessHubs,
      this.#toolRefusal,
    );
    this.#instances.adopt(this.server, "legacy", true);
  }

  /** The mounted hubs. */
  get hubs(): readonly BaseHub[] {
    return this.#hubs.all;
  }

  /**
   * Client sessions open on the running transport: Streamable HTTP and SSE
   * sessions, 1 while a stdio client is connected, 0 when not running. The
   * dev endpoints' in-process client is not counted. Read-only; for
   * monitoring and for tests that prove closed sessions are released.
   */
  get sessionCount(): number {
    return this.#run.sessionCount;
  }

  /**
   * Registers a hook that runs inside the first MCP `initialize` request,
   * before the response; later clients do not run it again.
   *
   * @param fn The hook; it receives `{meta, session, progress, clientInfo, signal}`.
   * @returns `fn`, unchanged.
   */
  initialize<F extends InitializeHook>(fn: F): F {
    this.#initializeHooks.add(fn);
    return fn;
  }

  /**
   * Registers a hook that runs once on SIGTERM, before the server closes and
   * the process exits 0. SIGINT skips it.
   *
   * @param fn The hook.
   * @returns `fn`, unchanged.
   */
  shutdown<F extends ShutdownHook>(fn: F): F {
    this.#shutdownHooks.push(fn);
    return fn;
  }

  /**
   * Returns a TC39 method decorator that registers the method as a tool.
   *
   * @param options Name (default: the method name), description, zod `input`/`output`, annotations.
   * @returns The decorator.
   */
  tool<S extends Shape>(
    options: ToolOptions<S>,
  ): ToolMethodDecorator<S>;
  /**
   * Registers `fn` as a tool; whatever it returns is normalised to a `CallToolResult`.
   *
   * @param options Name (default: `fn.name`), description, zod `input`/`output`, annotations.
   * @param fn The tool function.
   * @returns `fn`, unchanged.
   */
  tool<S extends Shape, F extends ToolFunction<S>>(
    options: ToolOptions<S>,
    fn: F,
  ): F;
  tool(options: ToolOptions, fn?: ToolFunction): unknown {
    return toolOrDecorator(options, fn, (def) => this.#registerTool(def));
  }

  /**
   * Adds a tool: a {@linkcode BaseTool} through its `mcp` definition, any
   * other {@linkcode ToolDefinition} as it is.
   *
   * @param tool The tool.
   * @returns The SDK's handle of the registered tool.
   */
  addTool<S extends Shape>(
    tool: BaseTool<S, unknown> | ToolDefinition<S>,
  ): RegisteredTool {
    if (tool instanceof BaseTool) this.#hud.addTool(tool);
    return this.#registerTool(
      (tool instanceof BaseTool ? tool.mcp : tool) as unknown as ToolDefinition,
    );
  }

  #registerTool(def: ToolDefinition): RegisteredTool {
    return registerToolDefinition(this, def, this.#toolRefusal);
  }

  /** A call of a tool its run's scenario left out is refused here, on every transport. */
  readonly #toolRefusal = (name: string, extra: ToolExtra) =>
    this.#runFilters.refusal(runKey(extra), name);

  /**
   * Mounts a hub: one visible dispatcher tool named after it (input
   * `{name, arguments}`) and a `{hub}://functions` resource listing its tools.
   * Tools the hub gains later are added to the dispatcher.
   *
   * @param hub The hub.
   */
  mount(hub: BaseHub): void;
  /**
   * Composes another server into this one (FastMCP `mount`): its tools and
   * prompts appear as `{prefix}_{name}`, its resources as
   * `scheme://{prefix}/rest`, and they follow later changes to it. Its
   * initialize and shutdown hooks run with this server's.
   *
   * @param server The server to mount.
   * @param prefix Name prefix; without one, names are kept.
   */
  mount(server: MCPServer, prefix?: string): void;
  mount(target: BaseHub | MCPServer, prefix?: string): void {
    if (target instanceof MCPServer) {
      return this.#compositions.mount(target, {
        initialize: target.#initializeHooks,
        shutdown: target.#shutdownHooks,
      }, prefix);
    }
    this.#hubs.mount(target);
  }

  /**
   * Exposes `fn()`'s return as a resource, JSON-serialised unless it is a
   * resource result. A URI with `{variables}` is a template; `fn` receives them.
   *
   * @param uri The URI or URI template, e.g. `status://env` or `file://{path}`.
   * @param fn The function that produces the content.
   * @returns `fn`, unchanged.
   */
  resource<F extends ResourceFunction>(uri: string, fn: F): F;
  /**
   * Like `resource(uri, fn)`, with a name, description and MIME type.
   *
   * @param uri The URI or URI template.
   * @param options Name, title, description, MIME type.
   * @param fn The function that produces the content.
   * @returns `fn`, unchanged.
   */
  resource<F extends ResourceFunction>(
    uri: string,
    options: ResourceOptions,
    fn: F,
  ): F;
  resource(...args: unknown[]): unknown {
    const { uri, options, fn } = resourceArguments(args);
    registerResourceFunction(this, uri, options, fn);
    return fn;
  }

  /**
   * Registers a prompt and returns `fn`. Prompt arguments arrive as strings;
   * the `input` shape validates them (`z.coerce.number()` turns them into
   * numbers). The function may return a string (one user message), a content
   * item, a list of messages or a full `GetPromptResult`.
   *
   * @param options Name (default: `fn.name`), title, description, zod `input`.
   * @param fn The prompt function.
   * @returns `fn`, unchanged.
   */
  prompt<S extends Shape, F extends PromptFunction<S>>(
    options: PromptOptions<S>,
    fn: F,
  ): F {
    registerPromptFunction(this, options, fn);
    return fn;
  }

  /**
   * Registers a scenario (HUD's shape): `fn` is an async
   * generator whose code before the first `yield` is setup, whose first yield
   * is the prompt, which receives the agent's answer, and whose second yield
   * is the reward (a number, or `{reward, done, content?, info?, isError?,
   * subscores?}`; none: reward 1). On MCP (HUD v5's wire): the prompt and
   * the resource `{server name}:{name}`, and the tool `_hud_submit`; on the
   * `hud` transport (HUD v6): the task `{name}`. Runs are kept apart
   * per client (`_meta.run_id`, else the legacy session, else the
   * connection) and dropped after 30 idle minutes.
   *
   * @param options Name, description, zod `input` (prompt strings are coerced), `excludeTools`, `allowedTools`.
   * @param fn The scenario.
   * @returns `fn`, unchanged.
   */
  scenario<S extends Shape, F extends ScenarioFunction<S>>(
    options: ScenarioOptions<S>,
    fn: F,
  ): F {
    this.#scenarios ??= new Scenarios(
      this,
      this.info.name,
      this.#harnessToken,
      this.#runFilters,
    );
    this.#scenarios.add(options, fn);
    this.#hud.addTask(
      options as ScenarioOptions,
      fn as unknown as ScenarioFunction,
    );
    return fn;
  }

  /**
   * Publishes a capability for the HUD v6 control channel (`run({transport:
   * "hud"})`): a daemon the environment runs on loopback, listed in
   * `hello`'s bindings and reached with `tunnel.open`. The server's own tools
   * are the `mcp` capability without this. Call it from an initialize hook,
   * once the daemon listens; a capability of the same name is replaced.
   *
   * @example
   * ```ts
   * import { MCPServer } from "../mod.ts";
   * import { rfbCapability } from "../hud/mod.ts";
   *
   * const mcp = new MCPServer({ name: "desktop" });
   * mcp.initialize(() => {
   *   mcp.addCapability(rfbCapability("rfb://127.0.0.1:5901", { display: 1 }));
   * });
   * ```
   *
   * @param capability `{name, protocol, url, params}`, e.g. from `rfbCapability()`.
   */
  addCapability(capability: Capability): void {
    this.#hud.addCapability(capability);
  }

  /** The capabilities published with {@linkcode MCPServer.addCapability}. */
  get capabilityBindings(): readonly Capability[] {
    return this.#hud.capabilities;
  }

  /**
   * A new protocol instance over this server's registry: what the SDK's
   * serving entries call a factory product. The SDK binds one instance to
   * one connection; the runners build one per stdio connection, per legacy
   * HTTP or SSE session, and per modern HTTP request. Every instance runs
   * this server's initialize hooks before its first request other than
   * `server/discover`, and serves the tools, resources and prompts
   * registered here, later ones included.
   *
   * @param era The era the instance serves (`"legacy"` by default); a
   * modern instance that lives for one request is not sent list-changed
   * notifications (modern clients hear of changes on `subscriptions/listen`).
   * @returns An SDK `McpServer`, ready to `connect()`.
   */
  createInstance(era: ProtocolEra = "legacy"): McpServer {
    return this.#instances.create(this, this.info, this.#sdkOptions, era);
  }

  /** Tells every client that the tool list changed (legacy sessions by notification, modern ones on `subscriptions/listen`). */
  override sendToolListChanged(): void {
    this.#instances.changed("tools", (server) => server.sendToolListChanged());
  }

  /** Tells every client that the resource list changed. */
  override sendResourceListChanged(): void {
    this.#instances.changed(
      "resources",
      (server) => server.sendResourceListChanged(),
    );
  }

  /** Tells every client that the prompt list changed. */
  override sendPromptListChanged(): void {
    this.#instances.changed(
      "prompts",
      (server) => server.sendPromptListChanged(),
    );
  }

  /**
   * Calls `listener` whenever the tool, resource or prompt list changes; the
   * HTTP runner publishes these to modern clients' `subscriptions/listen`.
   *
   * @param listener Receives which list changed.
   * @returns A function that removes the listener.
   */
  onListChanged(listener: (list: ListName) => void): () => void {
    return this.#instances.onListChanged(listener);
  }

  /**
   * Serves the server until it stops: on stdio until stdin closes, on http or
   * sse until {@linkcode MCPServer.stop}, `signal`, or a signal. SIGTERM lets
   * running calls answer, runs the shutdown hooks once (both within
   * `shutdownTimeoutMs`), closes the transports and exits 0; SIGINT closes
   * and exits 130 without them.
   *
   * @param options Transport, port, host and session expiry.
   * @returns Resolves when the server has stopped.
   */
  async run(options: RunOptions = {}): Promise<void> {
    await this.#run.serve(this, options, {
      name: this.info.name,
      shutdownTimeoutMs: this.shutdownTimeoutMs,
      shutdownHooks: this.#shutdownHooks,
      busy: () => this.#instances.busy(),
      hud: () =>
        this.#hud.source(
          (ctx) => this.#initializeHooks.run(ctx),
          this.#harnessToken,
          this.#runFilters,
        ),
      harnessToken: this.#harnessToken,
    });
  }

  /**
   * Stops a running server: closes every session and the listener; `run()` then resolves.
   *
   * @returns Resolves when the transports have closed.
   */
  async stop(): Promise<void> {
    await this.#run.stop();
  }

  /**
   * Connects this server's own protocol instance to a transport (one client,
   * as in the SDK). Use `createInstance()` for further clients.
   *
   * @param transport The transport.
   */
  override async connect(transport: Transport): Promise<void> {
    await super.connect(transport);
  }
}

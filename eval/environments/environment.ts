/**
 * An evaluation environment seen from the runner: an MCP server (a stdio
 * command or an HTTP URL) whose scenarios are driven through their wire
 * names, `{env}:{scenario}` prompt and resource and the `_hud_submit` tool;
 * or a HUD v6 control channel (`tcp://`), whose scenarios a
 * {@linkcode HudSession} (`hud_session.ts`) runs while its tools are called
 * over MCP as any other's. What a connection takes and answers is
 * `contract.ts`; the MCP client is opened by `mcp_client.ts`, the scenarios'
 * wire names read by `scenario_wire.ts`.
 *
 * @module
 */
import {
  type Client,
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
} from "@modelcontextprotocol/client";
import { declaresRunIsolation } from "../../mcp/scenarios/runs.ts";
import {
  type AgentTool,
  capToolContent,
  DEFAULT_DISPLAY,
  DEFAULT_MAX_TOOL_RESULT_BYTES,
  DEFAULT_MAX_TOOL_RESULT_IMAGES,
  type DisplaySize,
  type ToolHost,
  type ToolResult,
} from "../tool_host.ts";
import {
  type ContainerNetwork,
  type ContainerRuntime,
  EnvironmentError,
  type EnvironmentTarget,
  OutputTail,
} from "./target.ts";
import {
  type ConnectOptions,
  DEFAULT_TOOL_TIMEOUT_MS,
  type EvaluationResult,
  type ScenarioInfo,
  type ScenarioSetup,
  TOOL_TIMEOUT_GRACE_MS,
} from "./contract.ts";
import type { HudSession } from "./hud_session.ts";
import { connectClient, displayMeta } from "./mcp_client.ts";
import {
  evaluationOfText,
  promptArguments,
  scenariosOfPrompts,
  setupOfPrompt,
} from "./scenario_wire.ts";

/**
 * One connection to an environment.
 *
 * @example
 * ```ts
 * import { Environment } from "./environment.ts";
 *
 * async function playOnce(): Promise<number> {
 *   const env = await Environment.connect({
 *     command: "deno",
 *     args: ["run", "-A", "examples/text_game/main.ts", "stdio"],
 *   });
 *   try {
 *     const runId = crypto.randomUUID();
 *     await env.setup("guess", { target: 7, max: 10 }, runId);
 *     await env.submit("guess", "7", runId);
 *     return (await env.evaluate("guess", runId)).reward;
 *   } finally {
 *     await env.close();
 *   }
 * }
 * ```
 */
export class Environment {
  /** The SDK v2 client connected to the environment. */
  readonly client: Client;
  /** The environment's name (its server name): the `{env}` of the wire names. */
  readonly name: string;
  /** The screen size the environment was told. */
  readonly display: DisplaySize;
  /**
   * Whether the environment says concurrent runs against it are isolated
   * (the `mcpkit/runs` experimental capability); `undefined` when it says
   * nothing.
   */
  readonly isolatesRuns: boolean | undefined;
  /** The end of a stdio environment's stderr (empty over HTTP). */
  readonly stderr: OutputTail;
  readonly #harnessToken?: string;
  readonly #toolTimeoutMs: number;
  readonly #limits: { maxBytes: number; maxImages: number };
  /** Removes what a container runtime started for this connection. */
  #release?: () => Promise<void>;
  /** Whether the container runtime's host stopped answering. */
  #hostFailed?: () => Promise<boolean>;
  /** The container runtime that started this connection, and its network. */
  #container?: { runtime: ContainerRuntime; network: ContainerNetwork };
  /** The HUD session that runs the scenarios, for a `tcp://` environment. */
  readonly #hud?: HudSession;

  /**
   * For subclasses (`HudEnvironment`) and {@linkcode Environment.connect}.
   *
   * @param client The connected MCP client the tools are called through.
   * @param name The environment's name.
   * @param options Display size, time-out and limits.
   * @param stderr The end of a stdio environment's stderr.
   * @param hud The HUD session that runs the scenarios instead of MCP.
   */
  protected constructor(
    client: Client,
    name: string,
    options: ConnectOptions,
    stderr: OutputTail,
    hud?: HudSession,
  ) {
    this.client = client;
    this.#hud = hud;
    this.name = name;
    this.stderr = stderr;
    this.isolatesRuns = declaresRunIsolation(
      client.getServerCapabilities() as
        | { experimental?: Record<string, unknown> }
        | undefined,
    );
    this.display = options.display ?? DEFAULT_DISPLAY;
    this.#harnessToken = options.harnessToken;
    this.#toolTimeoutMs = options.toolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
    this.#limits = {
      maxBytes: options.maxToolResultBytes ?? DEFAULT_MAX_TOOL_RESULT_BYTES,
      maxImages: options.maxToolResultImages ??
        DEFAULT_MAX_TOOL_RESULT_IMAGES,
    };
  }

  /**
   * Connects. Over HTTP the client probes for the 2026-07-28 revision and
   * falls back to the handshake; over stdio it opens with the handshake (the
   * SDK's stdio probe would spawn a second process per connection).
   *
   * The display size goes in the `_meta` of the initialize request (and of
   * every later request, for the stateless era, whose first request runs
   * the environment's initialize hooks). A stdio child gets the harness
   * token as `MCP_HARNESS_TOKEN` and `options.env`, beside the variables the
   * SDK passes (PATH, HOME, …). Its stderr is kept (the last
   * {@linkcode STDERR_TAIL_BYTES}) and shown when it fails to start.
   *
   * @param target Where the environment is.
   * @param options Harness token, child variables, display size, limits.
   * @returns The connected environment.
   * @throws {EnvironmentError} When it cannot be reached or started: the
   * message says why, with the end of a stdio environment's stderr.
   */
  static async connect(
    target: EnvironmentTarget,
    options: ConnectOptions = {},
  ): Promise<Environment> {
    if ("tcp" in target) {
      // Loaded only here: an MCP environment never needs the control
      // channel, RFB or the computer tool.
      const { HudSession } = await import("./hud_session.ts");
      const opened = await HudSession.open(target.tcp, options);
      return new Environment(
        opened.client,
        opened.name,
        options,
        new OutputTail(),
        opened.session,
      );
    }
    if ("runtime" in target) {
      return await Environment.#launch(target.runtime, options);
    }
    const { client, name, stderr } = await connectClient(target, options);
    return new Environment(client, name, options, stderr);
  }

  /** The `_meta` every request carries: the display size. */
  get #displayMeta(): Record<string, unknown> {
    return displayMeta(this.display);
  }

  /** The `_meta` of a harness request for a run. */
  #meta(runId: string): Record<string, unknown> {
    return {
      ...this.#displayMeta,
      run_id: runId,
      ...(this.#harnessToken && { harness_token: this.#harnessToken }),
    };
  }

  /**
   * The scenarios: prompts named `{env}:{scenario}`.
   *
   * @returns Their names, descriptions and arguments.
   */
  async scenarios(): Promise<ScenarioInfo[]> {
    if (this.#hud) return await this.#hud.scenarios();
    const { prompts } = await this.client.listPrompts({
      _meta: this.#displayMeta,
    });
    return scenariosOfPrompts(prompts, this.name);
  }

  /**
   * Runs a scenario's setup: gets its prompt with the arguments (sent as
   * strings, as prompt arguments are).
   *
   * @returns The messages, the tool filters of `_meta`, and the computer environment it asks for.
   */
  async setup(
    scenario: string,
    args: Record<string, unknown>,
    runId: string,
  ): Promise<ScenarioSetup> {
    if (this.#hud) return await this.#hud.setup(scenario, args, runId);
    const prompt = await this.client.getPrompt({
      name: `${this.name}:${scenario}`,
      arguments: promptArguments(args),
      _meta: this.#meta(runId),
    });
    return setupOfPrompt(prompt);
  }

  /**
   * The network a scenario's run needs that this connection's container
   * lacks: the runner then runs it again in a container that has it. Only a
   * container runtime's connection has a network to change; any other is
   * what its operator started, and its scenarios get what it has.
   *
   * @param wanted The network the scenario's setup asked for, if any.
   * @returns The network to start a container with, or `undefined` when
   * this one will do.
   * @throws {Error} When the operator did not allow that network: one line.
   */
  otherNetwork(wanted: string | undefined): ContainerNetwork | undefined {
    const container = this.#container;
    if (!container || (wanted ?? "none") === container.network) {
      return undefined;
    }
    const refusal = container.runtime.networkRefusal(wanted ?? "none");
    if (refusal) throw new Error(refusal);
    return wanted as ContainerNetwork;
  }

  /** Every tool the environment lists. */
  async tools(): Promise<AgentTool[]> {
    const { tools } = await this.client.listTools({
      _meta: this.#displayMeta,
    });
    const listed = tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema as Record<string, unknown>,
    }));
    return this.#hud ? await this.#hud.withScreen(listed) : listed;
  }

  /**
   * Calls a tool for the agent: its result capped (text bytes, images), an
   * error the model can act on (bad arguments) as an error result. With a
   * run id, the call carries it in `_meta.run_id`, so the environment finds
   * the run's own state (a HUD environment's: its session's id; the
   * runner's own `computer` tool on a HUD screen runs in the session).
   *
   * @returns The result's text and images, and whether it is an error.
   * @throws {EnvironmentError} When the tool does not answer in time or the
   * environment fails.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
    runId?: string,
  ): Promise<ToolResult> {
    if (this.#hud?.playsTool(name)) {
      return await this.#hud.callScreen(args, signal);
    }
    if (this.#hud) runId = this.#hud.mcpRunId(runId);
    let result;
    try {
      result = await this.client.callTool(
        {
          name,
          arguments: args,
          _meta: runId === undefined
            ? this.#displayMeta
            : { ...this.#displayMeta, run_id: runId },
        },
        { signal, timeout: this.#toolTimeoutMs + TOOL_TIMEOUT_GRACE_MS },
      );
    } catch (error) {
      if (signal?.aborted) throw error;
      if (
        error instanceof ProtocolError &&
        error.code === ProtocolErrorCode.InvalidParams
      ) {
        return { text: `Error: ${error.message}`, images: [], isError: true };
      }
      if (
        error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout
      ) {
        throw new EnvironmentError(
          `The tool "${name}" did not answer within ${
            (this.#toolTimeoutMs + TOOL_TIMEOUT_GRACE_MS) / 1000
          } s`,
          { cause: error },
        );
      }
      throw new EnvironmentError(
        `The tool "${name}" failed in the environment: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
    const content =
      (Array.isArray(result.content) ? result.content : []) as Record<
        string,
        unknown
      >[];
    return {
      ...capToolContent(content, this.#limits),
      isError: result.isError === true,
    };
  }

  /** Hands the agent's answer to the run. */
  async submit(scenario: string, answer: string, runId: string): Promise<void> {
    if (this.#hud) return await this.#hud.submit(scenario, answer, runId);
    const result = await this.client.callTool({
      name: "_hud_submit",
      arguments: { scenario, answer },
      _meta: this.#meta(runId),
    });
    if (result.isError) {
      const text = (result.content as { text?: string }[])[0]?.text;
      throw new Error(`Submit failed: ${text}`);
    }
  }

  /**
   * Runs the evaluation and returns the result.
   *
   * @throws {EnvironmentError} When the result is not a JSON object or its
   * reward is not a finite number (JSON carries NaN and Infinity as `null`).
   */
  async evaluate(scenario: string, runId: string): Promise<EvaluationResult> {
    if (this.#hud) return await this.#hud.evaluate(scenario, runId);
    const read = await this.client.readResource({
      uri: `${this.name}:${scenario}`,
      _meta: this.#meta(runId),
    });
    const first = read.contents[0] as { text?: string } | undefined;
    return evaluationOfText(first?.text, scenario);
  }

  /**
   * The tool host of one run: every call carries the run's id.
   *
   * @param runId The run (as sent with its prompt).
   * @returns The host the agent loop calls tools through.
   */
  forRun(runId: string): ToolHost {
    return {
      callTool: (name, args, signal) =>
        this.callTool(name, args, signal, runId),
    };
  }

  /**
   * Whether the connection was lost because what runs its container stopped
   * answering (a Docker daemon that failed): no agent in the container
   * reaches it, so a run it ends is the infrastructure's to try again.
   *
   * @returns `true` only for a container runtime's failed host.
   */
  async hostFailed(): Promise<boolean> {
    return await this.#hostFailed?.() ?? false;
  }

  /** Closes the connection (and the process, for stdio; the container, for a runtime). */
  async close(): Promise<void> {
    if (this.#hud) return await this.#hud.close(() => this.#closeClient());
    await this.#closeClient();
  }

  async #closeClient(): Promise<void> {
    try {
      await this.client.close();
    } finally {
      await this.#release?.();
    }
  }

  /**
   * Connects over stdio to an environment a container runtime starts; the
   * container is removed when the connection closes or fails to open.
   */
  static async #launch(
    runtime: ContainerRuntime,
    options: ConnectOptions,
  ): Promise<Environment> {
    const variables = [
      ...Object.keys(options.env ?? {}),
      ...(options.harnessToken ? ["MCP_HARNESS_TOKEN"] : []),
    ];
    let launched;
    try {
      launched = await runtime.launch(variables, options.network);
    } catch (error) {
      throw new EnvironmentError(
        `Cannot start ${runtime.name}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    try {
      const env = await Environment.connect(
        { command: launched.command, args: launched.args },
        options,
      );
      env.#release = launched.release;
      env.#hostFailed = launched.hostFailed;
      env.#container = { runtime, network: options.network ?? "none" };
      return env;
    } catch (error) {
      await launched.release();
      throw new EnvironmentError(
        `${runtime.name} on ${launched.where}: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }
}

/**
 * The runner's session with a HUD v6 environment (hud-python 0.6): the
 * control channel at `tcp://host:port` for the task (`hello`, `tasks.list`,
 * `tasks.start`, `tasks.grade`, `bye`; its client is `hud_control.ts`), and
 * the `mcp` capability, reached through `tunnel.open`, for the agent's tools.
 * An `Environment` (`environment.ts`) opened on a `tcp://` target holds one:
 * tools are listed and called over MCP exactly as for an MCP environment;
 * only the scenario methods speak the control channel. An environment that
 * publishes an `rfb` screen but no `computer` tool gets one played by the
 * runner itself (`hud_screen.ts`), so the native computer-use agents drive
 * the screen.
 * This module answers in the shapes of `contract.ts` and never imports the
 * `Environment` that holds it.
 *
 * @module
 */
import {
  Client,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import type { Capability } from "../../mcp/hud/capability.ts";
import {
  CapabilityForwarder,
  type ControlAddress,
  parseControlAddress,
} from "../../mcp/hud/tunnel.ts";
import { boundedFetch } from "../_bounded_http.ts";
import {
  type AgentTool,
  DEFAULT_DISPLAY,
  type PromptMessage,
  type ToolResult,
} from "../tool_host.ts";
import type {
  ConnectOptions,
  EvaluationResult,
  ScenarioInfo,
  ScenarioSetup,
} from "./contract.ts";
import { EnvironmentError } from "./target.ts";
import {
  ControlClient,
  gradeResult,
  HelloSchema,
  StartSchema,
  TaskListSchema,
} from "./hud_control.ts";
import { HudScreen } from "./hud_screen.ts";

/** A HUD session just opened, and the MCP client of its `mcp` capability. */
export interface OpenedHudSession {
  /** The session. */
  session: HudSession;
  /** The SDK v2 client connected to the `mcp` capability. */
  client: Client;
  /** The environment's name (`hello`'s `env.name`). */
  name: string;
}

/**
 * A HUD v6 session, driven by the runner: tasks on the control channel,
 * tools over the `mcp` capability (whose client the `Environment` holding
 * this session calls), plus the `computer` tool the runner plays on an
 * `rfb` screen.
 *
 * @example
 * ```ts
 * import { HudSession } from "./hud_session.ts";
 *
 * async function taskNames(address: string): Promise<string[]> {
 *   const { session, client } = await HudSession.open(address);
 *   try {
 *     return (await session.scenarios()).map((task) => task.name);
 *   } finally {
 *     await session.close(() => client.close());
 *   }
 * }
 * ```
 */
export class HudSession {
  /** The control session's id (`hello`). */
  readonly sessionId: string;
  /** The capability bindings `hello` published. */
  readonly bindings: readonly Capability[];
  readonly #control: ControlClient;
  readonly #address: ControlAddress;
  readonly #forwarder: CapabilityForwarder;
  readonly #answers = new Map<string, string>();
  /** The `computer` tool the runner plays on an `rfb` screen. */
  readonly #screen: HudScreen;

  private constructor(
    options: ConnectOptions,
    parts: {
      sessionId: string;
      bindings: Capability[];
      control: ControlClient;
      address: ControlAddress;
      forwarder: CapabilityForwarder;
    },
  ) {
    this.sessionId = parts.sessionId;
    this.bindings = parts.bindings;
    this.#control = parts.control;
    this.#address = parts.address;
    this.#forwarder = parts.forwarder;
    this.#screen = new HudScreen(parts.address, options);
  }

  /**
   * Connects: `hello` on the control channel, then an MCP client (SDK v2,
   * both eras) on the `mcp` capability through a loopback forwarder whose
   * every connection is a `tunnel.open` to it.
   *
   * @param address `tcp://host:port` or `host:port`.
   * @param options Harness token (sent in `hello`), display size, limits.
   * @returns The session, the client of its `mcp` capability, and the
   * environment's name.
   * @throws {EnvironmentError} When the environment cannot be reached, its
   * `hello` is malformed, or it offers no `mcp` capability.
   */
  static async open(
    address: string,
    options: ConnectOptions = {},
  ): Promise<OpenedHudSession> {
    let parsed: ControlAddress;
    try {
      parsed = parseControlAddress(address);
    } catch (error) {
      throw new EnvironmentError((error as Error).message);
    }
    const control = await ControlClient.connect(parsed);
    let forwarder: CapabilityForwarder | undefined;
    let client: Client | undefined;
    try {
      // The agent's screen size goes with hello, as it goes with initialize
      // over MCP: the environment's tools take it before any task starts.
      const display = options.display ?? DEFAULT_DISPLAY;
      const hello = HelloSchema.safeParse(
        await control.call("hello", {
          display_width: display.width,
          display_height: display.height,
          ...(options.harnessToken && { harness_token: options.harnessToken }),
        }),
      );
      if (!hello.success) {
        throw new EnvironmentError(
          `The environment's hello is malformed: ${
            hello.error.issues[0]?.message
          }`,
        );
      }
      const { session_id: sessionId, env, bindings } = hello.data;
      const mcp = bindings.find((b) => b.protocol.startsWith("mcp/"));
      if (!mcp) {
        throw new EnvironmentError(
          `The environment ${env.name} offers no mcp capability (bindings: ${
            bindings.map((b) => `${b.name} ${b.protocol}`).join(", ") || "none"
          })`,
        );
      }
      forwarder = CapabilityForwarder.start(
        parsed,
        mcp.name,
        options.harnessToken,
      );
      const path = URL.parse(mcp.url)?.pathname || "/mcp";
      client = new Client({ name: "mcpkit-eval", version: "0.1.0" }, {
        versionNegotiation: { mode: "auto" },
      });
      await client.connect(
        new StreamableHTTPClientTransport(
          new URL(`http://127.0.0.1:${forwarder.port}${path}`),
          { fetch: boundedFetch() },
        ),
      );
      const session = new HudSession(options, {
        sessionId,
        bindings,
        control,
        address: parsed,
        forwarder,
      });
      return { session, client, name: env.name };
    } catch (error) {
      await client?.close().catch(() => {});
      await forwarder?.close();
      control.close();
      throw error instanceof EnvironmentError ? error : new EnvironmentError(
        `Cannot connect to the environment at ${address}: ${
          (error as Error).message
        }`,
        { cause: error },
      );
    }
  }

  /**
   * The tasks (`tasks.list`), their arguments read from each task's JSON
   * Schema.
   *
   * @returns Names, descriptions and arguments.
   */
  async scenarios(): Promise<ScenarioInfo[]> {
    const listed = TaskListSchema.safeParse(
      await this.#control.call("tasks.list"),
    );
    if (!listed.success) {
      throw new EnvironmentError("The environment's tasks.list is malformed");
    }
    return listed.data.tasks.map((task) => {
      const schema = task.args ?? {};
      const properties = (schema.properties ?? {}) as Record<
        string,
        { description?: unknown }
      >;
      const required = new Set(
        Array.isArray(schema.required) ? schema.required.map(String) : [],
      );
      return {
        name: task.id,
        description: task.description ?? undefined,
        arguments: Object.entries(properties).map(([name, property]) => ({
          name,
          ...(typeof property?.description === "string" &&
            { description: property.description }),
          required: required.has(name),
        })),
      };
    });
  }

  /**
   * Starts the task (`tasks.start`): setup runs, the prompt comes back. The
   * arguments go as JSON values, as the control channel takes them.
   *
   * @returns The prompt as messages, and the tool filters of its `_meta`.
   */
  async setup(
    scenario: string,
    args: Record<string, unknown>,
    runId: string,
  ): Promise<ScenarioSetup> {
    const started = StartSchema.safeParse(
      await this.#control.call("tasks.start", { id: scenario, args }),
    );
    if (!started.success) {
      throw new EnvironmentError(
        `The prompt of "${scenario}" is malformed: ${
          started.error.issues[0]?.message
        }`,
      );
    }
    this.#answers.set(runId, "");
    const { prompt, _meta: meta } = started.data;
    const messages: PromptMessage[] = typeof prompt === "string"
      ? [{ role: "user", content: { type: "text", text: prompt } }]
      : prompt.map((message) => ({
        role: message.role,
        content: typeof message.content === "string"
          ? { type: "text", text: message.content }
          : message.content,
      }));
    return {
      messages,
      exclude: meta?.exclude_tools ?? [],
      allowed: meta?.allowed_tools,
    };
  }

  /**
   * The `mcp` capability's tools; and, when the environment publishes an
   * `rfb` screen but no `computer` tool, a `computer` tool the runner plays
   * on that screen itself ({@linkcode HudScreen}).
   *
   * @param tools The tools the `mcp` capability lists.
   * @returns Them, with the runner's `computer` tool when it plays one.
   */
  async withScreen(tools: AgentTool[]): Promise<AgentTool[]> {
    return await this.#screen.offer(tools, this.bindings);
  }

  /**
   * Whether a tool is the runner's own `computer` tool on the `rfb` screen
   * ({@linkcode callScreen} runs it), not one of the `mcp` capability's.
   *
   * @param name The tool's name.
   * @returns `true` once the runner offered its `computer` tool.
   */
  playsTool(name: string): boolean {
    return this.#screen.plays(name);
  }

  /**
   * The `_meta.run_id` a run's calls over the `mcp` capability carry: this
   * session's id, the key the environment gave the task's state.
   *
   * @param runId The runner's run id, if the call is a run's.
   * @returns The session's id for a run's call, else `undefined`.
   */
  mcpRunId(runId: string | undefined): string | undefined {
    return runId === undefined ? undefined : this.sessionId;
  }

  /**
   * Calls the runner's own `computer` tool on the `rfb` screen.
   *
   * @param args The tool's arguments.
   * @param signal Ends the call early.
   * @returns The result's text and images, and whether it is an error.
   * @throws {EnvironmentError} When the screen does not answer in time or
   * fails.
   */
  async callScreen(
    args: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<ToolResult> {
    return await this.#screen.call(args, signal);
  }

  /** Keeps the answer for `tasks.grade`. */
  submit(
    _scenario: string,
    answer: string,
    runId: string,
  ): Promise<void> {
    this.#answers.set(runId, answer);
    return Promise.resolve();
  }

  /**
   * Grades the task (`tasks.grade` with the answer): the score is the reward.
   *
   * @throws {EnvironmentError} When the grade frame is malformed or its
   * score is not a finite number.
   */
  async evaluate(
    scenario: string,
    runId: string,
  ): Promise<EvaluationResult> {
    const answer = this.#answers.get(runId) ?? "";
    this.#answers.delete(runId);
    return gradeResult(
      await this.#control.call("tasks.grade", { answer }),
      scenario,
    );
  }

  /**
   * Ends the session (`bye`), closes the channel and the screen, then the
   * tools' client, then the forwarder its connections ride on.
   *
   * @param closeTools Closes the `mcp` capability's client (its errors are
   * ignored: the session is over either way).
   */
  async close(closeTools: () => Promise<void>): Promise<void> {
    await this.#control.call("bye", {}, 5_000).catch(() => {});
    this.#control.close();
    await this.#screen.close();
    await closeTools().catch(() => {});
    await this.#forwarder.close();
  }
}

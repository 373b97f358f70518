/**
 * An evaluation environment seen from the runner: an MCP server (a stdio
 * command or an HTTP URL) whose scenarios are driven through their wire
 * names, `{env}:{scenario}` prompt and resource and the `_hud_submit` tool.
 *
 * @module
 */
import {
  Client,
  type JSONRPCMessage,
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  StreamableHTTPClientTransport,
  type Transport,
} from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { globMatch } from "../mcp/scenario.ts";
import { declaresRunIsolation } from "../mcp/runs.ts";
import {
  DEFAULT_DISPLAY,
  type DisplaySize,
  type ToolHost,
  type ToolImage,
  type ToolResult,
} from "./agents/loop.ts";

/** Text of one tool result the model sees at most, bytes (UTF-8), by default. */
export const DEFAULT_MAX_TOOL_RESULT_BYTES = 100_000;
/** Images of one tool result the model sees at most, by default. */
export const DEFAULT_MAX_TOOL_RESULT_IMAGES = 4;
/** One image's size at most, bytes (what Anthropic accepts per image). */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
/** How long a tool call may take, ms, by default. */
export const DEFAULT_TOOL_TIMEOUT_MS = 120_000;

/**
 * The environment failed (a time-out, a closed connection, a protocol
 * error): the run is an error, not a low reward.
 */
export class EnvironmentError extends Error {
  /**
   * Creates the error.
   *
   * @param message What failed, in one line.
   * @param options The cause.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "EnvironmentError";
  }
}

/** The end of a stdio environment's stderr kept for error messages, bytes. */
export const STDERR_TAIL_BYTES = 4096;

/**
 * The last bytes written to a stream, for an error message: a bounded ring,
 * so a chatty environment costs no more than `limit` bytes.
 */
export class OutputTail {
  readonly #limit: number;
  #bytes = new Uint8Array(0);

  /**
   * Creates an empty tail.
   *
   * @param limit Bytes kept at most (default {@linkcode STDERR_TAIL_BYTES}).
   */
  constructor(limit: number = STDERR_TAIL_BYTES) {
    this.#limit = limit;
  }

  /**
   * Keeps a chunk, dropping the oldest bytes past the limit.
   *
   * @param chunk Bytes (or text) written.
   */
  push(chunk: Uint8Array | string): void {
    const bytes = typeof chunk === "string"
      ? new TextEncoder().encode(chunk)
      : chunk;
    const kept = Math.min(
      this.#bytes.length,
      this.#limit - Math.min(bytes.length, this.#limit),
    );
    const next = new Uint8Array(kept + Math.min(bytes.length, this.#limit));
    next.set(this.#bytes.subarray(this.#bytes.length - kept));
    next.set(bytes.subarray(Math.max(0, bytes.length - this.#limit)), kept);
    this.#bytes = next;
  }

  /**
   * The kept text: its last `lines` lines, trimmed of trailing space.
   *
   * @param lines Lines at most (default 20).
   * @returns The text, or `""` when nothing was written.
   */
  text(lines = 20): string {
    return new TextDecoder().decode(this.#bytes).replace(/^\uFFFD+/, "")
      .trimEnd().split("\n").slice(-lines).join("\n");
  }
}

/** Options of {@linkcode Environment.connect}. */
export interface ConnectOptions {
  /** Sent as `_meta.harness_token`, and to a stdio child as `MCP_HARNESS_TOKEN`. */
  harnessToken?: string;
  /** More variables for a stdio child (beside PATH, HOME and the rest the SDK passes). */
  env?: Record<string, string>;
  /** The screen size the agent sees: `_meta.display_width/height` of initialize and of every request (default 1280×800). */
  display?: DisplaySize;
  /** How long a tool call may take, ms (default 120 000). */
  toolTimeoutMs?: number;
  /** Text of one tool result at most, UTF-8 bytes (default 100 000). */
  maxToolResultBytes?: number;
  /** Images of one tool result at most (default 4). */
  maxToolResultImages?: number;
}

/**
 * Where the environment is: an `http(s)://…/mcp` URL, a command to spawn,
 * or a HUD v6 control channel (`host:port`).
 */
export type EnvironmentTarget =
  | { url: string }
  | { command: string; args: string[]; cwd?: string }
  | { tcp: string };

/** A scenario the environment offers. */
export interface ScenarioInfo {
  /** Its name (without the `{env}:` prefix). */
  name: string;
  /** What it is. */
  description?: string;
  /** Its arguments, as the prompt lists them. */
  arguments: { name: string; description?: string; required?: boolean }[];
}

/** A tool the agent may be given. */
export interface AgentTool {
  /** Tool name. */
  name: string;
  /** What it does. */
  description?: string;
  /** JSON Schema of its arguments. */
  inputSchema: Record<string, unknown>;
}

/** A prompt message, as MCP sends it. */
export interface PromptMessage {
  /** `user` or `assistant`. */
  role: string;
  /** One content item. */
  content: Record<string, unknown>;
}

/** The result of evaluating a run. */
export interface EvaluationResult {
  /** The score. */
  reward: number;
  /** Whether the task is over. */
  done: boolean;
  /** An explanation. */
  content?: string;
  /** Anything else the grader keeps. */
  info?: Record<string, unknown>;
  /** Whether evaluation failed. */
  isError?: boolean;
  /** Weighted parts of the reward. */
  subscores?: { name: string; weight: number; value: number }[];
}

/**
 * Reads a target from the command line: a URL, a HUD v6 control channel
 * (`tcp://host:port`), a script (run with `deno run -A <file> stdio`), or any
 * other command.
 *
 * @param spec What the user typed.
 * @param extraArgs Arguments after it.
 * @returns The target.
 */
export function parseTarget(
  spec: string,
  extraArgs: string[] = [],
): EnvironmentTarget {
  if (/^https?:\/\//.test(spec)) return { url: spec };
  if (spec.startsWith("tcp://")) return { tcp: spec };
  if (/\.(ts|tsx|js|mjs|jsx)$/.test(spec)) {
    return {
      command: Deno.execPath(),
      args: ["run", "-A", spec, ...(extraArgs.length ? extraArgs : ["stdio"])],
    };
  }
  return { command: spec, args: extraArgs };
}

/**
 * The tools an agent gets: none whose name starts with `_` (harness tools),
 * none matching `exclude`, and only those matching `allowed` when given.
 *
 * @param tools The environment's tools.
 * @param exclude Glob patterns to leave out.
 * @param allowed Glob patterns to keep, if any.
 * @returns The agent's tools.
 */
export function agentTools(
  tools: AgentTool[],
  exclude: string[] = [],
  allowed?: string[],
): AgentTool[] {
  return tools.filter((tool) =>
    !tool.name.startsWith("_") &&
    !exclude.some((pattern) => globMatch(tool.name, pattern)) &&
    (!allowed || allowed.some((pattern) => globMatch(tool.name, pattern)))
  );
}

/**
 * Adds `_meta` to the `initialize` request a transport sends: the SDK's
 * client builds that request itself and takes no `_meta` for it.
 */
function withInitializeMeta<T extends Transport>(
  transport: T,
  meta: Record<string, unknown>,
): T {
  const send = transport.send.bind(transport);
  transport.send = (message: JSONRPCMessage, options) => {
    if ("method" in message && message.method === "initialize") {
      const params = (message.params ?? {}) as Record<string, unknown>;
      const own = (params._meta ?? {}) as Record<string, unknown>;
      message = {
        ...message,
        params: { ...params, _meta: { ...own, ...meta } },
      };
    }
    return send(message, options);
  };
  return transport;
}

/**
 * A tool's MCP content as the model gets it: text joined and capped, images
 * apart and capped, each cut marked in the text.
 *
 * @param content The result's content items.
 * @param limits Text bytes and images at most.
 * @returns The text and images.
 */
export function capToolContent(
  content: Record<string, unknown>[],
  limits: { maxBytes: number; maxImages: number },
): { text: string; images: ToolImage[] } {
  const texts: string[] = [];
  const images: ToolImage[] = [];
  const notes: string[] = [];
  let dropped = 0;
  for (const item of content) {
    if (item.type === "text") texts.push(String(item.text ?? ""));
    else if (
      item.type === "image" && typeof item.data === "string" &&
      typeof item.mimeType === "string"
    ) {
      const bytes = Math.floor(item.data.length * 3 / 4);
      if (bytes > MAX_IMAGE_BYTES) {
        notes.push(
          `[an image of ${bytes} bytes left out: over the ${MAX_IMAGE_BYTES}-byte limit]`,
        );
      } else if (images.length >= limits.maxImages) dropped++;
      else images.push({ mimeType: item.mimeType, data: item.data });
    } else if (item.type === "resource") {
      const resource = (item.resource ?? {}) as Record<string, unknown>;
      texts.push(
        typeof resource.text === "string"
          ? resource.text
          : `[resource ${String(resource.uri ?? "")} (${
            String(resource.mimeType ?? "binary")
          })]`,
      );
    } else if (item.type === "audio") {
      texts.push(`[audio (${String(item.mimeType ?? "")})]`);
    } else texts.push(JSON.stringify(item));
  }
  if (dropped > 0) {
    notes.push(
      `[${dropped} image(s) left out: at most ${limits.maxImages} per result]`,
    );
  }
  let text = texts.join("\n");
  const encoded = new TextEncoder().encode(text);
  if (encoded.length > limits.maxBytes) {
    text = new TextDecoder().decode(encoded.subarray(0, limits.maxBytes))
      .replace(/\uFFFD$/, "");
    notes.unshift(
      `[truncated: the result has ${encoded.length} bytes of text; the first ${limits.maxBytes} are shown]`,
    );
  }
  return { text: [text, ...notes].filter(Boolean).join("\n"), images };
}

/** One connection to an environment. */
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

  /** For subclasses that reach the tools another way (`HudEnvironment`). */
  protected constructor(
    client: Client,
    name: string,
    options: ConnectOptions,
    stderr: OutputTail,
  ) {
    this.client = client;
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
      const { HudEnvironment } = await import("./hud_environment.ts");
      return await HudEnvironment.open(target.tcp, options);
    }
    const info = { name: "mcpkit-eval", version: "0.1.0" };
    const display = displayMeta(options.display ?? DEFAULT_DISPLAY);
    const stderr = new OutputTail();
    let client: Client;
    let transport: Transport;
    if ("url" in target) {
      client = new Client(info, { versionNegotiation: { mode: "auto" } });
      transport = new StreamableHTTPClientTransport(new URL(target.url));
    } else {
      client = new Client(info);
      const stdio = new StdioClientTransport({
        command: target.command,
        args: target.args,
        cwd: target.cwd,
        env: {
          ...options.env,
          ...(options.harnessToken &&
            { MCP_HARNESS_TOKEN: options.harnessToken }),
        },
        stderr: "pipe",
      });
      stdio.stderr?.on("data", (chunk: Uint8Array) => stderr.push(chunk));
      transport = stdio;
    }
    try {
      await client.connect(withInitializeMeta(transport, display));
    } catch (error) {
      await client.close().catch(() => {});
      throw new EnvironmentError(
        startFailure(target, error, await settledTail(stderr)),
        { cause: error },
      );
    }
    const name = client.getServerVersion()?.name;
    if (!name) {
      await client.close();
      throw new EnvironmentError("The environment did not say its name");
    }
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
    const prefix = `${this.name}:`;
    const { prompts } = await this.client.listPrompts({
      _meta: this.#displayMeta,
    });
    return prompts.filter((prompt) => prompt.name.startsWith(prefix)).map((
      prompt,
    ) => ({
      name: prompt.name.slice(prefix.length),
      description: prompt.description,
      arguments: prompt.arguments ?? [],
    }));
  }

  /**
   * Runs a scenario's setup: gets its prompt with the arguments (sent as
   * strings, as prompt arguments are).
   *
   * @returns The messages and the tool filters of `_meta`.
   */
  async setup(
    scenario: string,
    args: Record<string, unknown>,
    runId: string,
  ): Promise<
    { messages: PromptMessage[]; exclude: string[]; allowed?: string[] }
  > {
    const strings = Object.fromEntries(
      Object.entries(args).map((
        [key, value],
      ) => [key, typeof value === "string" ? value : JSON.stringify(value)]),
    );
    const prompt = await this.client.getPrompt({
      name: `${this.name}:${scenario}`,
      arguments: strings,
      _meta: this.#meta(runId),
    });
    const meta = (prompt._meta ?? {}) as Record<string, unknown>;
    return {
      messages: prompt.messages as unknown as PromptMessage[],
      exclude: Array.isArray(meta.exclude_tools)
        ? meta.exclude_tools.map(String)
        : [],
      allowed: Array.isArray(meta.allowed_tools)
        ? meta.allowed_tools.map(String)
        : undefined,
    };
  }

  /** Every tool the environment lists. */
  async tools(): Promise<AgentTool[]> {
    const { tools } = await this.client.listTools({
      _meta: this.#displayMeta,
    });
    return tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema as Record<string, unknown>,
    }));
  }

  /**
   * Calls a tool for the agent: its result capped (text bytes, images), an
   * error the model can act on (bad arguments) as an error result. With a
   * run id, the call carries it in `_meta.run_id`, so the environment finds
   * the run's own state.
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
        { signal, timeout: this.#toolTimeoutMs },
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
            this.#toolTimeoutMs / 1000
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
    const read = await this.client.readResource({
      uri: `${this.name}:${scenario}`,
      _meta: this.#meta(runId),
    });
    const first = read.contents[0] as { text?: string } | undefined;
    let value: unknown;
    try {
      value = JSON.parse(first?.text ?? "");
    } catch {
      throw new EnvironmentError(
        `The evaluation of "${scenario}" is not JSON: ${
          String(first?.text ?? "").slice(0, 80)
        }`,
      );
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new EnvironmentError(
        `The evaluation of "${scenario}" is not a JSON object`,
      );
    }
    const evaluation = value as EvaluationResult;
    if (evaluation.isError) return evaluation;
    if (
      typeof evaluation.reward !== "number" ||
      !Number.isFinite(evaluation.reward)
    ) {
      throw new EnvironmentError(
        `The reward of "${scenario}" is not a finite number: ${
          JSON.stringify(evaluation.reward) ?? "none"
        }`,
      );
    }
    return evaluation;
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

  /** Closes the connection (and the process, for stdio). */
  async close(): Promise<void> {
    await this.client.close();
  }
}

/**
 * Why an environment did not start, in a line, then the end of its stderr.
 */
function startFailure(
  target: Exclude<EnvironmentTarget, { tcp: string }>,
  error: unknown,
  tail: string,
): string {
  const reason = error instanceof Error ? error.message : String(error);
  if ("url" in target) {
    const refused =
      /ECONNREFUSED|Connection refused|fetch failed|error sending request/i
        .test(reason + String((error as Error)?.cause ?? ""));
    return refused
      ? `Cannot reach the environment at ${target.url}: nothing answers there`
      : `Cannot connect to the environment at ${target.url}: ${reason}`;
  }
  const command = [target.command, ...target.args].join(" ");
  return tail
    ? `The environment \`${command}\` did not start (${reason}); the end of its stderr:\n${
      tail.replace(/^/gm, "  | ")
    }`
    : `The environment \`${command}\` did not start (${reason}) and wrote nothing to stderr`;
}

/** The tail once a dying child's last output has had a moment to arrive. */
async function settledTail(tail: OutputTail): Promise<string> {
  await new Promise((resolve) => setTimeout(resolve, 50));
  return tail.text();
}

function displayMeta(display: DisplaySize): Record<string, unknown> {
  return { display_width: display.width, display_height: display.height };
}

/**
 * An evaluation environment seen from the runner: an MCP server (a stdio
 * command or an HTTP URL) whose scenarios are driven through their wire
 * names, `{env}:{scenario}` prompt and resource and the `_hud_submit` tool.
 *
 * @module
 */
import {
  Client,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { globMatch } from "../mcp/scenario.ts";

/** Where the environment is: an `http(s)://…/mcp` URL, or a command to spawn. */
export type EnvironmentTarget =
  | { url: string }
  | { command: string; args: string[]; cwd?: string };

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
 * Reads a target from the command line: a URL, a script (run with
 * `deno run -A <file> stdio`), or any other command.
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

/** One connection to an environment. */
export class Environment {
  /** The SDK v2 client connected to the environment. */
  readonly client: Client;
  /** The environment's name (its server name): the `{env}` of the wire names. */
  readonly name: string;
  readonly #harnessToken?: string;

  private constructor(client: Client, name: string, harnessToken?: string) {
    this.client = client;
    this.name = name;
    this.#harnessToken = harnessToken;
  }

  /**
   * Connects. Over HTTP the client probes for the 2026-07-28 revision and
   * falls back to the handshake; over stdio it opens with the handshake (the
   * SDK's stdio probe would spawn a second process per connection).
   *
   * @param target Where the environment is.
   * @param options The harness token, when the environment requires one.
   * @returns The connected environment.
   */
  static async connect(
    target: EnvironmentTarget,
    options: { harnessToken?: string } = {},
  ): Promise<Environment> {
    const info = { name: "mcpkit-eval", version: "0.1.0" };
    let client: Client;
    if ("url" in target) {
      client = new Client(info, { versionNegotiation: { mode: "auto" } });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(target.url)),
      );
    } else {
      client = new Client(info);
      await client.connect(
        new StdioClientTransport({
          command: target.command,
          args: target.args,
          cwd: target.cwd,
          stderr: "ignore",
        }),
      );
    }
    const name = client.getServerVersion()?.name;
    if (!name) {
      await client.close();
      throw new Error("The environment did not say its name");
    }
    return new Environment(client, name, options.harnessToken);
  }

  /** The `_meta` of a harness request for a run. */
  #meta(runId: string): Record<string, unknown> {
    return {
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
    const { prompts } = await this.client.listPrompts();
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
    const { tools } = await this.client.listTools();
    return tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema as Record<string, unknown>,
    }));
  }

  /**
   * Calls a tool for the agent.
   *
   * @returns The result's text, and whether it is an error.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<{ text: string; isError: boolean }> {
    const result = await this.client.callTool({ name, arguments: args }, {
      signal,
    });
    const content = (result.content ?? []) as Record<string, unknown>[];
    const text = content.map((item) =>
      item.type === "text" ? String(item.text) : JSON.stringify(item)
    ).join("\n");
    return { text, isError: result.isError === true };
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

  /** Runs the evaluation and returns the result. */
  async evaluate(scenario: string, runId: string): Promise<EvaluationResult> {
    const read = await this.client.readResource({
      uri: `${this.name}:${scenario}`,
      _meta: this.#meta(runId),
    });
    const first = read.contents[0] as { text?: string };
    return JSON.parse(first.text ?? "{}") as EvaluationResult;
  }

  /** Closes the connection (and the process, for stdio). */
  async close(): Promise<void> {
    await this.client.close();
  }
}

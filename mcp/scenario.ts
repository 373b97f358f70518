/**
 * Scenarios: one async generator per task that sets up state, yields the
 * prompt, receives the agent's answer and yields the reward, served over
 * plain MCP under HUD's v5 names (hud-python up to 0.5.x; HUD v6's control
 * channel is served by `mcp/hud/`):
 *
 * - prompt `{env}:{scenario}`: runs setup with the prompt's arguments and
 *   returns the prompt messages (`_meta` carries `exclude_tools` and
 *   `allowed_tools` when set);
 * - tool `_hud_submit` `{scenario, answer}`: stores the agent's answer;
 * - resource `{env}:{scenario}`: runs evaluation and returns the result JSON.
 *
 * This module holds what does not depend on the server: argument coercion,
 * result shapes, the table of runs in progress, the state environments keep
 * per run ({@linkcode RunState}) and the capability that says their runs are
 * isolated ({@linkcode runIsolation}).
 *
 * @module
 */
import { z } from "zod";
import { formatZodError } from "./_schema.ts";
import type { ContentBlock } from "./_sdk.ts";
import type { PromptMessage } from "./prompt.ts";
import type { Shape, ToolArgs, ToolExtra } from "./tool.ts";

/** Options of `MCPServer.scenario()`. */
export interface ScenarioOptions<S extends Shape = Shape> {
  /** Scenario name; the wire name is `{server name}:{name}`. */
  name: string;
  /** What the task is, for people listing scenarios. */
  description?: string;
  /** Zod shape of the arguments; prompt arguments arrive as strings and are coerced. */
  input?: S;
  /** Glob patterns of tools the agent must not be given (`debug_*`). */
  excludeTools?: string[];
  /** Glob patterns of the only tools the agent may be given. */
  allowedTools?: string[];
}

/** What the agent hands back: text, or content with citations. */
export type ScenarioAnswer = string | {
  content: string | ContentBlock[];
  citations?: unknown[];
};

/** One weighted part of a reward. */
export interface Subscore {
  /** What it measures. */
  name: string;
  /** Its weight in the reward. */
  weight: number;
  /** Its value, usually 0 to 1. */
  value: number;
}

/** The result of evaluating a run. */
export interface ScenarioResult {
  /** The score, usually 0 to 1. */
  reward: number;
  /** Whether the task is over. */
  done: boolean;
  /** An explanation. */
  content?: string;
  /** Anything else the grader keeps. */
  info?: Record<string, unknown>;
  /** Whether evaluation failed. */
  isError?: boolean;
  /** The parts of the reward. */
  subscores?: Subscore[];
}

/** What the first yield may be: the prompt. */
export type ScenarioPrompt = string | ContentBlock | PromptMessage[];

/** What the second yield may be: a reward, or a full result. */
export type ScenarioEvaluation = number | ScenarioResult;

/** What a scenario function receives beside its arguments. */
export interface ScenarioContext {
  /** The request context of the `prompts/get` that started the run. */
  extra: ToolExtra;
  /**
   * The run's key (see {@linkcode runKey}): the same for the prompt, every
   * tool call of the run, the submit and the evaluation. Key per-run state
   * with it ({@linkcode RunState}).
   */
  run: string;
}

/**
 * A scenario: code before the first `yield` is setup, the first yield is
 * the prompt, the value sent back is the answer, the second yield is the
 * result.
 */
export type ScenarioFunction<S extends Shape = Shape> = (
  args: ToolArgs<S>,
  ctx: ScenarioContext,
) => AsyncGenerator<
  ScenarioPrompt | ScenarioEvaluation,
  void | ScenarioEvaluation,
  ScenarioAnswer
>;

/**
 * Coerces prompt arguments (always strings on the wire) to the shape: a
 * string the field rejects is parsed as JSON and tried again, so `"7"`
 * becomes 7, `"true"` true and `'{"a":1}'` an object.
 *
 * @param shape The scenario's input shape.
 * @param args The prompt arguments.
 * @returns The parsed arguments, or an error naming the field.
 */
export function coerceArguments(
  shape: Shape,
  args: Record<string, unknown> | undefined,
): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  const input: Record<string, unknown> = { ...args };
  for (const [key, value] of Object.entries(input)) {
    const field = shape[key];
    if (!field || typeof value !== "string") continue;
    if (z.safeParse(field, value).success) continue;
    try {
      input[key] = JSON.parse(value);
    } catch {
      // leave it: the error below names the field
    }
  }
  const parsed = z.object(shape).safeParse(input);
  return parsed.success
    ? { ok: true, value: parsed.data }
    : { ok: false, error: formatZodError(parsed.error) };
}

/** The prompt messages for the first yield. */
export function promptMessages(value: unknown): PromptMessage[] {
  if (typeof value === "string") {
    return [{ role: "user", content: { type: "text", text: value } }];
  }
  if (Array.isArray(value)) return value as PromptMessage[];
  if (value && typeof value === "object" && "type" in value) {
    return [{ role: "user", content: value as ContentBlock }];
  }
  throw new TypeError(
    "A scenario's first yield must be the prompt: a string, a content item or a list of messages",
  );
}

/**
 * The result of the second yield: a number is a reward with `done: true`;
 * no second yield scores 1.
 */
export function scenarioResult(value: unknown): ScenarioResult {
  if (value === undefined) return { reward: 1, done: true };
  if (typeof value === "number") return { reward: value, done: true };
  if (
    value && typeof value === "object" &&
    typeof (value as ScenarioResult).reward === "number"
  ) {
    const result = value as ScenarioResult;
    return { ...result, done: result.done ?? true };
  }
  throw new TypeError(
    "A scenario's second yield must be a number or { reward, done, ... }",
  );
}

/** The answer as the scenario receives it: text stays text. */
export function normalizeAnswer(value: unknown): ScenarioAnswer {
  if (typeof value === "string") return value;
  if (
    value && typeof value === "object" && "content" in value
  ) return value as ScenarioAnswer;
  return JSON.stringify(value ?? "");
}

/**
 * Which run a request belongs to: `_meta.run_id` when the client sends one
 * (any era; a stateless client sends the same id on the prompt, the submit
 * and the read), else the legacy session, else the connection itself (stdio,
 * one client per process).
 *
 * @param extra The request context.
 * @returns The key.
 */
export function runKey(extra: ToolExtra): string {
  const id = extra._meta?.run_id;
  if (typeof id === "string" && id !== "") return `run:${id.slice(0, 200)}`;
  return extra.sessionId ? `session:${extra.sessionId}` : "connection";
}

/** A run between its prompt and its evaluation. */
export interface Run {
  /** The generator, suspended at the prompt. */
  generator: AsyncGenerator<unknown, unknown, ScenarioAnswer>;
  /** The submitted answer, once there is one. */
  answer?: ScenarioAnswer;
  /** When the run was last touched (ms). */
  touched: number;
}

/**
 * The runs in progress, by run key and scenario. A run not touched for
 * `ttlMs` is dropped (its generator returned, so `finally` blocks run), and
 * past `maxRuns` the one touched longest ago goes first.
 */
export class RunTable {
  readonly #runs = new Map<string, Run>();
  readonly #ttlMs: number;
  readonly #maxRuns: number;

  /**
   * Creates the table.
   *
   * @param ttlMs How long an untouched run is kept (default 30 minutes).
   * @param maxRuns The most runs kept (default 1,024).
   */
  constructor(ttlMs = 30 * 60_000, maxRuns = 1024) {
    this.#ttlMs = ttlMs;
    this.#maxRuns = maxRuns;
  }

  /** Runs kept now. */
  get size(): number {
    return this.#runs.size;
  }

  /** Starts a run, replacing (and closing) one the same client had open. */
  start(key: string, run: Run): void {
    this.#expire();
    this.end(key);
    this.#runs.set(key, run);
    while (this.#runs.size > this.#maxRuns) {
      this.end(this.#runs.keys().next().value!);
    }
  }

  /** The run, if it is still kept; touching it keeps it longer. */
  get(key: string): Run | undefined {
    this.#expire();
    const run = this.#runs.get(key);
    if (run) {
      run.touched = Date.now();
      this.#runs.delete(key); // re-insert: the map stays in touch order
      this.#runs.set(key, run);
    }
    return run;
  }

  /** Removes a run and hands it over, its generator still open. */
  take(key: string): Run | undefined {
    const run = this.get(key);
    this.#runs.delete(key);
    return run;
  }

  /** Removes a run and closes its generator. */
  end(key: string): void {
    const run = this.#runs.get(key);
    if (!run) return;
    this.#runs.delete(key);
    run.generator.return(undefined).catch(() => {});
  }

  #expire(): void {
    const oldest = Date.now() - this.#ttlMs;
    for (const [key, run] of this.#runs) {
      if (run.touched >= oldest) break;
      this.end(key);
    }
  }
}

/**
 * State kept per run, for environments whose concurrent runs must not see
 * each other's state: the scenario puts the run's state in with its
 * context, tools read it back with their request context, both keyed by
 * {@linkcode runKey}. Like the runs themselves, state not touched for
 * `ttlMs` is dropped, and past `maxRuns` the state touched longest ago
 * goes first.
 *
 * @example One game per run
 * ```ts
 * import { MCPServer } from "./mod.ts";
 * import { RunState, runIsolation } from "./scenario.ts";
 *
 * const mcp = new MCPServer({ name: "counter", capabilities: runIsolation(true) });
 * const counts = new RunState<{ count: number }>();
 * mcp.tool({ name: "increment" }, (_args, extra) => {
 *   const state = counts.require(extra);
 *   return String(++state.count);
 * });
 * mcp.scenario({ name: "count" }, async function* (_args, ctx) {
 *   const state = counts.set(ctx, { count: 0 });
 *   try {
 *     yield "Call `increment` three times.";
 *     yield state.count === 3 ? 1 : 0;
 *   } finally {
 *     counts.delete(ctx);
 *   }
 * });
 * ```
 */
export class RunState<T> {
  readonly #entries = new Map<string, { value: T; touched: number }>();
  readonly #ttlMs: number;
  readonly #maxRuns: number;

  /**
   * Creates an empty store.
   *
   * @param options How long untouched state is kept (default 30 minutes, as
   * runs are) and for how many runs at most (default 1,024).
   */
  constructor(options: { ttlMs?: number; maxRuns?: number } = {}) {
    this.#ttlMs = options.ttlMs ?? 30 * 60_000;
    this.#maxRuns = options.maxRuns ?? 1024;
  }

  /** Runs with state now. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Sets the state of a run, replacing what it had.
   *
   * @param run The scenario's context, a tool's request context, or a run key.
   * @param value The state.
   * @returns The state.
   */
  set(run: RunRef, value: T): T {
    this.#expire();
    const key = keyOf(run);
    this.#entries.delete(key);
    this.#entries.set(key, { value, touched: Date.now() });
    while (this.#entries.size > this.#maxRuns) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
    return value;
  }

  /**
   * The state of a run, if it has any; reading it keeps it longer.
   *
   * @param run The scenario's context, a tool's request context, or a run key.
   * @returns The state, or `undefined`.
   */
  get(run: RunRef): T | undefined {
    this.#expire();
    const key = keyOf(run);
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    entry.touched = Date.now();
    this.#entries.delete(key); // re-insert: the map stays in touch order
    this.#entries.set(key, entry);
    return entry.value;
  }

  /**
   * The state of a run.
   *
   * @param run The scenario's context, a tool's request context, or a run key.
   * @param missing The message when the run has none (what the agent reads).
   * @returns The state.
   * @throws {Error} When the run has no state.
   */
  require(
    run: RunRef,
    missing =
      "No run in progress: the harness starts one with the scenario's prompt",
  ): T {
    const value = this.get(run);
    if (value === undefined) throw new Error(missing);
    return value;
  }

  /**
   * Drops a run's state (call it from the scenario's `finally`).
   *
   * @param run The scenario's context, a tool's request context, or a run key.
   */
  delete(run: RunRef): void {
    this.#entries.delete(keyOf(run));
  }

  #expire(): void {
    const oldest = Date.now() - this.#ttlMs;
    for (const [key, entry] of this.#entries) {
      if (entry.touched >= oldest) break;
      this.#entries.delete(key);
    }
  }
}

/** What names a run: a scenario's context, a tool's request context, or its key. */
export type RunRef = ScenarioContext | ToolExtra | string;

function keyOf(run: RunRef): string {
  if (typeof run === "string") return run;
  if ("run" in run && typeof run.run === "string") return run.run;
  return runKey(run as ToolExtra);
}

/**
 * The experimental capability under which an environment says whether
 * concurrent runs against one process are isolated from each other
 * (`{ isolated: boolean }`). The eval runner refuses to run more than one
 * task at a time against an HTTP environment that does not say `true`.
 */
export const RUN_ISOLATION_CAPABILITY = "mcpkit/runs";

/**
 * The server capabilities that declare run isolation, for the
 * `capabilities` option of `MCPServer`.
 *
 * @example
 * ```ts
 * import { MCPServer } from "./mod.ts";
 * import { runIsolation } from "./scenario.ts";
 *
 * // Every run's state is kept in a RunState: runs may share the process.
 * const mcp = new MCPServer({ name: "game", capabilities: runIsolation(true) });
 * ```
 *
 * @param isolated Whether concurrent runs against one process never see
 * each other's state (`false`: one run at a time, e.g. one desktop per process).
 * @returns `{ experimental: { "mcpkit/runs": { isolated } } }`.
 */
export function runIsolation(
  isolated: boolean,
): { experimental: Record<string, { isolated: boolean }> } {
  return { experimental: { [RUN_ISOLATION_CAPABILITY]: { isolated } } };
}

/**
 * Whether a server's capabilities declare isolated runs: `undefined` when
 * they say nothing.
 *
 * @param capabilities The server's capabilities, as a client received them.
 * @returns `true`, `false`, or `undefined`.
 */
export function declaresRunIsolation(
  capabilities: { experimental?: Record<string, unknown> } | undefined,
): boolean | undefined {
  const entry = capabilities?.experimental?.[RUN_ISOLATION_CAPABILITY];
  if (typeof entry !== "object" || entry === null) return undefined;
  const isolated = (entry as { isolated?: unknown }).isolated;
  return typeof isolated === "boolean" ? isolated : undefined;
}

/**
 * Whether a tool name matches a glob pattern (`*` any run of characters,
 * `?` one character).
 *
 * @param name The tool name.
 * @param pattern The pattern.
 * @returns Whether it matches.
 */
export function globMatch(name: string, pattern: string): boolean {
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp(`^${source}$`).test(name);
}

/** A scheme-like server name: what `{env}:{scenario}` needs to be a URI. */
export const URI_SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*$/;

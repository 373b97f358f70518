/**
 * Runs of a scenario: which run a request belongs to ({@linkcode runKey}),
 * the runs in progress between prompt and evaluation ({@linkcode RunTable}),
 * the state environments keep per run ({@linkcode RunState}), and the
 * capability that says an environment's runs are isolated
 * ({@linkcode runIsolation}).
 *
 * @module
 */
import type { ScenarioAnswer, ScenarioContext } from "./scenario.ts";
import type { ToolExtra } from "../primitives/tool.ts";

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
  readonly #onEnd: ((key: string) => void) | undefined;

  /**
   * Creates the table.
   *
   * @param ttlMs How long an untouched run is kept (default 30 minutes).
   * @param maxRuns The most runs kept (default 1,024).
   * @param onEnd Called with a run's key when it leaves the table (ended,
   * expired, displaced or taken).
   */
  constructor(
    ttlMs = 30 * 60_000,
    maxRuns = 1024,
    onEnd?: (key: string) => void,
  ) {
    this.#ttlMs = ttlMs;
    this.#maxRuns = maxRuns;
    this.#onEnd = onEnd;
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
    if (run) {
      this.#runs.delete(key);
      this.#onEnd?.(key);
    }
    return run;
  }

  /** Removes a run and closes its generator. */
  end(key: string): void {
    const run = this.#runs.get(key);
    if (!run) return;
    this.#runs.delete(key);
    this.#onEnd?.(key);
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
 * import { MCPServer } from "../mod.ts";
 * import { RunState, runIsolation } from "./runs.ts";
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
 *
 * @example
 * ```ts
 * import { RUN_ISOLATION_CAPABILITY, runIsolation } from "./runs.ts";
 *
 * runIsolation(true).experimental[RUN_ISOLATION_CAPABILITY]; // { isolated: true }
 * ```
 */
export const RUN_ISOLATION_CAPABILITY = "mcpkit/runs";

/**
 * The server capabilities that declare run isolation, for the
 * `capabilities` option of `MCPServer`.
 *
 * @example
 * ```ts
 * import { MCPServer } from "../mod.ts";
 * import { runIsolation } from "./runs.ts";
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
 * @example
 * ```ts
 * import { declaresRunIsolation, runIsolation } from "./runs.ts";
 *
 * declaresRunIsolation(runIsolation(false)); // false
 * declaresRunIsolation({}); // undefined: the server says nothing
 * ```
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

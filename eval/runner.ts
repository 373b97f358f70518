/**
 * The eval runner: tasks (`{ scenario, args }`), each run `repeat` times,
 * spread over workers, each with its own connection to the environment (its
 * own process over stdio: one environment per process), an agent loop per
 * run, the answer submitted, the reward read, one JSONL result per run as
 * it finishes. A run that fails is an error with no reward, retried when
 * its environment or the gateway failed; the summary gives the mean with
 * its spread and pass@k.
 *
 * @module
 */
import {
  type AgentOutcome,
  type Convention,
  emptyOutcome,
  type ModelEndpoint,
  runAgent,
  type SafetyCheck,
} from "./agent.ts";
import { agentTools, type DisplaySize } from "./tool_host.ts";
import type { Trajectory } from "./agents/trajectory.ts";
import { modelConvention } from "./convention.ts";
import { SdkError } from "@modelcontextprotocol/client";
import { RUN_ISOLATION_CAPABILITY } from "../mcp/runs.ts";
import {
  type ConnectOptions,
  Environment,
  type EvaluationResult,
} from "./environment.ts";
import { EnvironmentError, type EnvironmentTarget } from "./target.ts";

/** One task: a scenario and its arguments. */
export interface EvalTask {
  /** The scenario's name. */
  scenario: string;
  /** Its arguments (sent as prompt arguments, so as strings). */
  args?: Record<string, unknown>;
}

/**
 * Why a run ended in an error: the environment or the gateway failed
 * (`environment`, `gateway`: infrastructure, retried with `retries`), the
 * task ran out of time (`timeout`), the eval was stopped (`stopped`), or
 * the scenario or the agent failed (`task`: a failure of what is measured,
 * never retried).
 */
export type EvalErrorKind =
  | "environment"
  | "gateway"
  | "timeout"
  | "stopped"
  | "task";

/** One task's result, a line of the results file. */
export interface EvalResult {
  /** The task's position in the task list. */
  task: number;
  /** Which repetition of the task this is, from 0 (see `repeat`). */
  repeat: number;
  /** The scenario. */
  scenario: string;
  /** Its arguments. */
  args: Record<string, unknown>;
  /** The reward; `null` when the run ended in an error (not a score). */
  reward: number | null;
  /** Whether the environment called the task done. */
  done: boolean;
  /** The reward's parts, when the scenario gives them. */
  subscores?: EvaluationResult["subscores"];
  /** The environment's explanation. */
  content?: string;
  /** Set when setup, the agent or evaluation failed. */
  error?: string;
  /** What kind of failure `error` is. */
  error_kind?: EvalErrorKind;
  /** Tries the task took (more than 1 after infrastructure failures). */
  attempts: number;
  /**
   * The tries before the last, when there were any: why each failed and
   * what its model calls cost (their cost and tokens are in `cost_usd` and
   * `tokens` too).
   */
  earlier_attempts?: EarlierAttempt[];
  /** Model calls. */
  steps: number;
  /** Tokens over all model calls, of every try. */
  tokens: { input: number; output: number };
  /** What the gateway charged for the run's calls, USD, over every try. */
  cost_usd: number;
  /** The `trace-id` every model call of the run carried. */
  trace_id: string;
  /** The wire convention the model was spoken to in. */
  convention: Convention;
  /** The model id (absent in results of runners before it was kept). */
  model?: string;
  /** Calls of tools the agent was not given, refused with an error result. */
  refused_tool_calls: number;
  /** Safety checks the model raised and the runner acknowledged. */
  safety_checks: SafetyCheck[];
  /** Wall time of the run, ms. */
  duration_ms: number;
  /** What the agent did, step by step (see `eval/agents/trajectory.ts`; the report shows it). */
  trajectory?: Trajectory;
}

/** A try of a run that failed and was tried again (see `retries`). */
export interface EarlierAttempt {
  /** Why it failed. */
  error: string;
  /** What kind of failure it was. */
  error_kind?: EvalErrorKind;
  /** Model calls it made. */
  steps: number;
  /** Tokens of its model calls. */
  tokens: { input: number; output: number };
  /** What its model calls cost, USD. */
  cost_usd: number;
}

/** Options of {@linkcode runEval}. */
export interface EvalOptions {
  /** The environment. */
  target: EnvironmentTarget;
  /** The tasks, in order. */
  tasks: EvalTask[];
  /** Runs of every task (default 1); results say which with `repeat`. */
  repeat?: number;
  /**
   * Results of an earlier run of the same tasks (`--resume`): the tasks
   * they finished without an error are not run again, and are part of
   * the summary; one that ended in an error is run again, and its new
   * result lists it in `earlier_attempts` (its cost counted).
   */
  completed?: EvalResult[];
  /** The model behind the gateway. */
  endpoint: ModelEndpoint;
  /**
   * Runs at once (default 1); each has its own connection. More than one
   * against an HTTP environment needs one that declares isolated runs.
   */
  concurrency?: number;
  /** Model calls per run at most (default 10). */
  maxSteps?: number;
  /**
   * More tries for a run that failed for its environment or the gateway
   * (default 0), on a new connection, after 1 s, 2 s, 4 s… (at most 30 s).
   */
  retries?: number;
  /** How long one run may take, ms (default: no limit); longer is an error. */
  timeoutMs?: number;
  /** Sent as `_meta.harness_token`, and to a stdio environment as `MCP_HARNESS_TOKEN`. */
  harnessToken?: string;
  /** The wire convention (default: from the gateway's `/models` routes for the model). */
  convention?: Convention;
  /** More variables for a stdio environment's process. */
  env?: Record<string, string>;
  /** The screen size the environment is told (default 1280×800). */
  display?: DisplaySize;
  /** How long one tool call may take, ms (default 120 000); longer is an error. */
  toolTimeoutMs?: number;
  /** Text of one tool result the model sees at most, UTF-8 bytes (default 100 000). */
  maxToolResultBytes?: number;
  /** Images of one tool result the model sees at most (default 4). */
  maxToolResultImages?: number;
  /** Stops the run: no new task starts, running ones are cut off and reported. */
  signal?: AbortSignal;
  /** Called with each result as it finishes (write it out here). */
  onResult?: (result: EvalResult) => void | Promise<void>;
}

/** What a finished (or stopped) eval produced. */
export interface EvalSummary {
  /** Every result (the completed ones given, then this run's), in task order. */
  results: EvalResult[];
  /** Whether it was stopped before every task ran. */
  stopped: boolean;
}

/** One run to make: a task, its position and its repetition. */
interface PlannedRun {
  task: EvalTask;
  index: number;
  repeat: number;
}

/**
 * The identity of a run across files: task position, scenario, arguments
 * and repetition. A result of an earlier eval with the same key is the
 * same run.
 *
 * @param run A result, or a task with its position and repetition.
 * @returns The key.
 */
export function runIdentity(
  run: {
    task: number;
    repeat?: number;
    scenario: string;
    args?: Record<string, unknown>;
  },
): string {
  return JSON.stringify([
    run.task,
    run.repeat ?? 0,
    run.scenario,
    canonical(run.args ?? {}),
  ]);
}

/** A value with its object keys sorted, so equal arguments key equally. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value).sort().map((
        key,
      ) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}

/**
 * Why more than one run at a time against this environment would mix the
 * runs' state, if it would: an environment every worker shares (HTTP, a HUD
 * control channel) must declare isolated runs; a stdio one is a process per
 * worker.
 *
 * @param env A connection to the environment.
 * @param target Where it is.
 * @param concurrency Runs at once.
 * @returns The reason, in one line, or `undefined` when it is safe.
 */
export function concurrencyRefusal(
  env: Environment,
  target: EnvironmentTarget,
  concurrency: number,
): string | undefined {
  if (concurrency <= 1 || "command" in target || env.isolatesRuns === true) {
    return undefined;
  }
  const says = env.isolatesRuns === false
    ? "says its runs share state"
    : `does not say it isolates runs (experimental capability "${RUN_ISOLATION_CAPABILITY}")`;
  return `Cannot run ${concurrency} tasks at once against ${env.name} at ${
    "url" in target ? target.url : target.tcp
  }: it ${says}; use --concurrency 1, or run it over stdio (a process per worker)`;
}

/**
 * Runs the tasks.
 *
 * @param options The environment, tasks, model and limits.
 * @returns The results.
 * @throws {Error} When `concurrency` is above 1 against an HTTP environment
 * that does not isolate runs ({@linkcode concurrencyRefusal}).
 */
export async function runEval(options: EvalOptions): Promise<EvalSummary> {
  const results: EvalResult[] = [];
  const convention = options.convention ??
    await modelConvention(
      options.endpoint.gatewayUrl,
      options.endpoint.model,
      options.signal,
    );
  const connect: ConnectOptions = {
    harnessToken: options.harnessToken,
    env: options.env,
    display: options.display,
    toolTimeoutMs: options.toolTimeoutMs,
    maxToolResultBytes: options.maxToolResultBytes,
    maxToolResultImages: options.maxToolResultImages,
  };
  const planned = planRuns(options.tasks, options.repeat ?? 1);
  const kept = keptResults(planned, options.completed ?? []);
  const done = new Set(kept.map(runIdentity));
  const queue = planned.filter((run) => !done.has(plannedIdentity(run)));
  // What the runs to do again already cost, in earlier evals.
  const triedBefore = new Map<string, EarlierAttempt[]>();
  for (const result of options.completed ?? []) {
    const key = runIdentity(result);
    if (!result.error || done.has(key)) continue;
    triedBefore.set(key, [
      ...triedBefore.get(key) ?? [],
      ...result.earlier_attempts ?? [],
      earlierAttempt(result),
    ]);
  }
  const workers = Math.max(
    1,
    Math.min(options.concurrency ?? 1, queue.length),
  );
  // The first connection is made here, so a refusal comes before any run.
  let first: Environment | undefined;
  if (workers > 1 && !("command" in options.target)) {
    first = await Environment.connect(options.target, connect);
    const refusal = concurrencyRefusal(first, options.target, workers);
    if (refusal) {
      await first.close().catch(() => {});
      throw new Error(refusal);
    }
  }
  const retries = options.retries ?? 0;
  const worker = async () => {
    let env = first;
    first = undefined;
    try {
      while (queue.length > 0 && !options.signal?.aborted) {
        const run = queue.shift()!;
        let result: EvalResult;
        const earlier = [...triedBefore.get(plannedIdentity(run)) ?? []];
        for (let attempt = 1;; attempt++) {
          try {
            env ??= await Environment.connect(options.target, connect);
            result = await runTask(env, run, options, convention);
          } catch (error) {
            result = failedRun(
              run,
              convention,
              options.endpoint.model,
              error,
              options.signal,
            );
          }
          result.attempts = attempt;
          // A run that failed may have left its connection unusable.
          if (result.error) {
            await env?.close().catch(() => {});
            env = undefined;
          }
          if (
            attempt > retries || options.signal?.aborted ||
            (result.error_kind !== "environment" &&
              result.error_kind !== "gateway")
          ) break;
          earlier.push(earlierAttempt(result));
          await backOff(attempt, options.signal);
        }
        // A try that failed may still have been charged: the run says so.
        if (earlier.length > 0) result = withEarlierAttempts(result, earlier);
        results.push(result);
        await options.onResult?.(result);
      }
    } finally {
      await env?.close().catch(() => {});
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  await first?.close().catch(() => {});
  const all = [...kept, ...results].sort((a, b) =>
    a.task - b.task || a.repeat - b.repeat
  );
  return {
    results: all,
    stopped: all.length < planned.length || options.signal?.aborted === true,
  };
}

/** A failed try as the next try's result keeps it. */
function earlierAttempt(result: EvalResult): EarlierAttempt {
  return {
    error: result.error ?? "",
    ...(result.error_kind && { error_kind: result.error_kind }),
    steps: num(result.steps),
    tokens: {
      input: num(result.tokens?.input),
      output: num(result.tokens?.output),
    },
    cost_usd: num(result.cost_usd),
  };
}

function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

/** The last try's result with the earlier tries' cost and tokens added. */
function withEarlierAttempts(
  result: EvalResult,
  earlier: EarlierAttempt[],
): EvalResult {
  const tries = [...earlier, result];
  const micros = tries.reduce(
    (sum, t) => sum + Math.round(t.cost_usd * 1_000_000),
    0,
  );
  return {
    ...result,
    attempts: earlier.length + 1,
    earlier_attempts: earlier,
    tokens: {
      input: tries.reduce((sum, t) => sum + t.tokens.input, 0),
      output: tries.reduce((sum, t) => sum + t.tokens.output, 0),
    },
    cost_usd: micros / 1_000_000,
  };
}

/** How long to wait before trying a run again, ms: 1 s, doubling, at most 30 s. */
function retryDelayMs(attempt: number): number {
  return Math.min(30_000, 1000 * 2 ** (attempt - 1));
}

/** Waits before another try, or less when the eval is stopped meanwhile. */
async function backOff(attempt: number, signal?: AbortSignal): Promise<void> {
  const { promise, resolve } = Promise.withResolvers<void>();
  const timer = setTimeout(resolve, retryDelayMs(attempt));
  const stop = () => resolve();
  signal?.addEventListener("abort", stop, { once: true });
  await promise;
  clearTimeout(timer);
  signal?.removeEventListener("abort", stop);
}

/** The identity of a planned run (see {@linkcode runIdentity}). */
function plannedIdentity(run: PlannedRun): string {
  return runIdentity({
    task: run.index,
    repeat: run.repeat,
    scenario: run.task.scenario,
    args: run.task.args,
  });
}

/** Every run of every task: task by task, each `repeat` times. */
function planRuns(tasks: EvalTask[], repeat: number): PlannedRun[] {
  return tasks.flatMap((task, index) =>
    Array.from({ length: repeat }, (_, r) => ({ task, index, repeat: r }))
  );
}

/** The earlier results that finished a planned run, one per run. */
function keptResults(
  planned: PlannedRun[],
  completed: EvalResult[],
): EvalResult[] {
  const wanted = new Set(planned.map(plannedIdentity));
  const kept = new Map<string, EvalResult>();
  for (const result of completed) {
    const key = runIdentity(result);
    if (result.error || !wanted.has(key) || kept.has(key)) continue;
    kept.set(key, { ...result, repeat: result.repeat ?? 0 });
  }
  return [...kept.values()];
}

/**
 * What kind of failure an error is: the environment's (the connection or a
 * tool failed), the gateway's (unreachable, rate-limited or failing, not a
 * refusal of the request), or the task's own.
 */
function errorKind(error: unknown): EvalErrorKind {
  if (error instanceof EnvironmentError || error instanceof SdkError) {
    return "environment";
  }
  if (
    error instanceof TypeError && /fetch|connect|network/i.test(error.message)
  ) {
    return "gateway";
  }
  const failed = /^The model call failed \((\d{3})\)/.exec(
    error instanceof Error ? error.message : "",
  );
  if (failed && (failed[1] === "429" || failed[1] >= "500")) return "gateway";
  return "task";
}

/** The result of a run that never got to run its task. */
function failedRun(
  run: PlannedRun,
  convention: Convention,
  model: string,
  error: unknown,
  signal?: AbortSignal,
): EvalResult {
  const stopped = signal?.aborted === true;
  return {
    task: run.index,
    repeat: run.repeat,
    scenario: run.task.scenario,
    args: run.task.args ?? {},
    reward: null,
    done: false,
    error: stopped ? "Stopped before the run finished" : messageOf(error),
    error_kind: stopped ? "stopped" : errorKind(error),
    attempts: 1,
    steps: 0,
    tokens: { input: 0, output: 0 },
    cost_usd: 0,
    trace_id: "",
    convention,
    model,
    refused_tool_calls: 0,
    safety_checks: [],
    duration_ms: 0,
  };
}

async function runTask(
  env: Environment,
  run: PlannedRun,
  options: EvalOptions,
  convention: Convention,
): Promise<EvalResult> {
  const started = performance.now();
  const runId = crypto.randomUUID();
  const { task } = run;
  const args = task.args ?? {};
  const agent: AgentOutcome = emptyOutcome();
  const timeout = options.timeoutMs === undefined
    ? undefined
    : AbortSignal.timeout(options.timeoutMs);
  const signals = [options.signal, timeout].filter((s) => s !== undefined);
  const signal = signals.length > 0 ? AbortSignal.any(signals) : undefined;
  const base = {
    task: run.index,
    repeat: run.repeat,
    scenario: task.scenario,
    args,
    trace_id: runId,
    convention,
    model: options.endpoint.model,
  };
  const finish = (
    evaluation: Partial<EvaluationResult>,
    error?: { message: string; kind: EvalErrorKind },
  ): EvalResult => ({
    ...base,
    reward: error ? null : evaluation.reward ?? 0,
    done: evaluation.done ?? true,
    ...(evaluation.subscores && { subscores: evaluation.subscores }),
    ...(evaluation.content && { content: String(evaluation.content) }),
    ...(error && { error: error.message, error_kind: error.kind }),
    attempts: 1,
    steps: agent.steps,
    tokens: agent.tokens,
    cost_usd: agent.costMicros / 1_000_000,
    refused_tool_calls: agent.refusedToolCalls,
    safety_checks: agent.safetyChecks,
    duration_ms: Math.round(performance.now() - started),
    trajectory: agent.trajectory,
  });
  const work = async () => {
    const setup = await env.setup(task.scenario, args, runId);
    const tools = agentTools(await env.tools(), setup.exclude, setup.allowed);
    await runAgent(env.forRun(runId), options.endpoint, setup.messages, tools, {
      outcome: agent,
      maxSteps: options.maxSteps ?? 10,
      traceId: runId,
      run: { task: run.index, repeat: run.repeat },
      convention,
      display: env.display,
      signal,
    });
    signal?.throwIfAborted();
    await env.submit(task.scenario, agent.answer, runId);
    return await env.evaluate(task.scenario, runId);
  };
  try {
    const evaluation = await untilAborted(work(), signal);
    return evaluation.isError
      ? finish(evaluation, {
        message: `Evaluation failed: ${evaluation.content}`,
        kind: "task",
      })
      : finish(evaluation);
  } catch (error) {
    if (options.signal?.aborted) {
      return finish({ done: false }, {
        message: "Stopped before the run finished",
        kind: "stopped",
      });
    }
    if (timeout?.aborted) {
      return finish({ done: false }, {
        message: `Timed out after ${options.timeoutMs! / 1000} s`,
        kind: "timeout",
      });
    }
    const kind = errorKind(error);
    // A process that died usually said why on its way out.
    const said = kind === "environment" ? env.stderr.text(1) : "";
    return finish({ done: false }, {
      message: said
        ? `${messageOf(error)}; its stderr ends: ${said.slice(0, 500)}`
        : messageOf(error),
      kind,
    });
  }
}

/**
 * The promise's value, or a rejection as soon as the signal aborts (the
 * work itself is cut off when its connection is closed).
 */
function untilAborted<T>(work: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return work;
  work.catch(() => {}); // settled later or never: nobody waits for it then
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    if (signal.aborted) return abort();
    signal.addEventListener("abort", abort, { once: true });
    work.then(resolve, reject).finally(() =>
      signal.removeEventListener("abort", abort)
    );
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Reads a task file: one JSON object `{ "scenario": …, "args": {…} }` per
 * line; blank lines and lines starting with `#` are skipped.
 *
 * @param text The file's text.
 * @returns The tasks.
 * @throws {Error} Naming the line that is not a task.
 */
export function parseTasks(text: string): EvalTask[] {
  const tasks: EvalTask[] = [];
  text.split("\n").forEach((line, i) => {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) return;
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch {
      throw new Error(
        `Task line ${i + 1} is not JSON: ${trimmed.slice(0, 80)}`,
      );
    }
    const task = value as EvalTask;
    if (
      typeof task !== "object" || task === null ||
      typeof task.scenario !== "string" ||
      (task.args !== undefined &&
        (typeof task.args !== "object" || Array.isArray(task.args)))
    ) {
      throw new Error(
        `Task line ${i + 1} needs {"scenario": "<name>", "args": {...}}`,
      );
    }
    tasks.push({ scenario: task.scenario, args: task.args ?? {} });
  });
  return tasks;
}

/**
 * The unbiased estimator of pass@k (Chen et al. 2021, "Evaluating Large
 * Language Models Trained on Code"): the chance that at least one of `k`
 * runs drawn from `n`, of which `c` passed, passes: 1 − C(n−c, k) / C(n, k).
 *
 * @example
 * ```ts
 * import { passAtK } from "./runner.ts";
 *
 * passAtK(4, 1, 1); // 0.25
 * passAtK(4, 1, 4); // 1
 * ```
 *
 * @param n Runs of the task.
 * @param c Runs that passed.
 * @param k Runs drawn.
 * @returns The estimate, 0 to 1.
 * @throws {RangeError} When not 0 ≤ c ≤ n and 1 ≤ k ≤ n.
 */
export function passAtK(n: number, c: number, k: number): number {
  if (!(c >= 0 && c <= n && k >= 1 && k <= n)) {
    throw new RangeError(
      `Cannot estimate pass@${k} from ${c} of ${n} runs: need 0 <= c <= n and 1 <= k <= n`,
    );
  }
  if (n - c < k) return 1;
  // C(n−c, k) / C(n, k) as a product, which stays within floating point.
  let fail = 1;
  for (let i = n - c + 1; i <= n; i++) fail *= 1 - k / i;
  return 1 - fail;
}

/** The rewards of a group of runs, summed up. */
export interface RewardStats {
  /** Runs. */
  runs: number;
  /** Runs that ended in an error (no reward). */
  errors: number;
  /** Mean reward over the runs that have one; `NaN` when none has. */
  mean: number;
  /** Sample standard deviation of the rewards (0 for fewer than two). */
  stdDev: number;
  /** Half-width of the normal-approximation 95% interval of the mean. */
  ci95: number;
  /** pass@1 and pass@k per k, averaged over tasks with at least k rewarded runs. */
  passAt: Map<number, number>;
}

/**
 * Sums up rewards: the mean over runs that have one (errors are counted
 * apart), its spread, and pass@k for `k` from 1 to the repetitions, where a
 * run passes with a reward of at least `threshold`.
 *
 * @param results The results.
 * @param threshold The reward a run needs to pass (default 1).
 * @returns The statistics.
 */
export function rewardStats(results: EvalResult[], threshold = 1): RewardStats {
  const rewards = results.flatMap((r) => r.reward === null ? [] : [r.reward]);
  const n = rewards.length;
  const mean = n === 0 ? NaN : rewards.reduce((a, b) => a + b, 0) / n;
  const stdDev = n < 2
    ? 0
    : Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / (n - 1));
  const byTask = new Map<number, number[]>();
  for (const result of results) {
    if (result.reward === null) continue;
    byTask.set(result.task, [...byTask.get(result.task) ?? [], result.reward]);
  }
  const passAt = new Map<number, number>();
  const most = Math.max(0, ...[...byTask.values()].map((list) => list.length));
  for (const k of new Set([1, most])) {
    const estimates = [...byTask.values()].filter((list) => list.length >= k)
      .map((list) =>
        passAtK(list.length, list.filter((r) => r >= threshold).length, k)
      );
    if (estimates.length > 0) {
      passAt.set(k, estimates.reduce((a, b) => a + b, 0) / estimates.length);
    }
  }
  return {
    runs: results.length,
    errors: results.length - n,
    mean,
    stdDev,
    ci95: n < 2 ? 0 : 1.96 * stdDev / Math.sqrt(n),
    passAt,
  };
}

/**
 * The summary table: per scenario, runs, the mean reward with its 95%
 * interval and standard deviation, pass@1 and pass@k (with repetitions),
 * errors (runs without a reward, not counted in the mean), mean steps,
 * tokens and cost, then the totals.
 *
 * @param results The results.
 * @param threshold The reward a run needs to pass (default 1).
 * @returns The table, as lines of text.
 */
export function summaryTable(results: EvalResult[], threshold = 1): string {
  const groups = new Map<string, EvalResult[]>();
  for (const result of results) {
    groups.set(result.scenario, [
      ...(groups.get(result.scenario) ?? []),
      result,
    ]);
  }
  const repeats = Math.max(1, ...results.map((r) => (r.repeat ?? 0) + 1));
  const fixed = (value: number | undefined, digits = 3) =>
    value === undefined || Number.isNaN(value) ? "-" : value.toFixed(digits);
  const row = (name: string, list: EvalResult[]) => {
    const stats = rewardStats(list, threshold);
    return [
      name,
      String(list.length),
      fixed(stats.mean),
      `±${fixed(stats.ci95)}`,
      fixed(stats.stdDev),
      fixed(stats.passAt.get(1)),
      ...(repeats > 1 ? [fixed(stats.passAt.get(repeats))] : []),
      String(stats.errors),
      fixed(
        list.reduce((sum, r) => sum + r.steps, 0) / Math.max(1, list.length),
        1,
      ),
      String(
        list.reduce((sum, r) => sum + r.tokens.input + r.tokens.output, 0),
      ),
      `$${list.reduce((sum, r) => sum + r.cost_usd, 0).toFixed(6)}`,
    ];
  };
  const rows = [
    [
      "scenario",
      "runs",
      "mean reward",
      "95% ci",
      "std dev",
      "pass@1",
      ...(repeats > 1 ? [`pass@${repeats}`] : []),
      "errors",
      "steps",
      "tokens",
      "cost",
    ],
    ...[...groups].map(([name, list]) => row(name, list)),
    row("total", results),
  ];
  const widths = rows[0].map((_, i) =>
    Math.max(...rows.map((r) => r[i].length))
  );
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i])).join("  "))
    .join("\n");
}

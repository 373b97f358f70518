/**
 * The eval runner: tasks (`{ scenario, args }`), each run `repeat` times,
 * spread over workers, each with its own connection to the environment (its
 * own process over stdio: one environment per process), an agent loop per
 * run, the answer submitted, the reward read, one JSONL result per run as
 * it finishes. A run that fails is an error with no reward, retried when
 * its environment or the gateway failed (`attempts.ts`). One run is
 * `run_task.ts`; tasks and their identity are `tasks.ts`, a result's shape
 * `result.ts`, the summary (mean with its spread, pass@k) `stats.ts`.
 *
 * @module
 */
import type { Convention, ModelEndpoint } from "../agents/agent.ts";
import type { DisplaySize } from "../tool_host.ts";
import { fetchModelFacts } from "../agents/convention.ts";
import type { ModelFacts } from "../agents/model.ts";
import { RUN_ISOLATION_CAPABILITY } from "../../mcp/scenarios/runs.ts";
import type { ConnectOptions } from "../environments/contract.ts";
import { Environment } from "../environments/environment.ts";
import type {
  ContainerNetwork,
  EnvironmentTarget,
} from "../environments/target.ts";
import type { EarlierAttempt, EvalResult } from "./result.ts";
import { type EvalTask, runIdentity } from "./tasks.ts";
import { scoredReward } from "./stats.ts";
import { backOff, earlierAttempt, withEarlierAttempts } from "./attempts.ts";
import {
  failedRun,
  OtherNetwork,
  type PlannedRun,
  runTask,
} from "./run_task.ts";

/** Options of {@linkcode runEval}. */
export interface EvalOptions {
  /** The environment. */
  target: EnvironmentTarget;
  /** The tasks, in order. */
  tasks: EvalTask[];
  /** Runs of every task (default 1); results say which with `repeat`. */
  repeat?: number;
  /**
   * Results of an earlier run of the same tasks (`--resume`): the runs
   * they scored (an error after the agent acted scores 0) are not run
   * again, and are part of the summary; one not scored is run again, and
   * its new result lists it in `earlier_attempts` (its cost counted).
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
  /**
   * What the gateway's `/v1/models` says about the model: convention,
   * computer use, features (default: asked for, unless `convention` is given).
   */
  facts?: ModelFacts;
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

/**
 * Why more than one run at a time against this environment would mix the
 * runs' state, if it would: an environment every worker shares (HTTP, a HUD
 * control channel) must declare isolated runs; a stdio one is a process per
 * worker.
 *
 * @example
 * ```ts
 * import { concurrencyRefusal } from "./runner.ts";
 * import { Environment } from "../environments/environment.ts";
 *
 * const target = { url: "http://127.0.0.1:8765/mcp" };
 * const env = await Environment.connect(target);
 * const refusal = concurrencyRefusal(env, target, 4);
 * if (refusal) console.error(refusal); // one line: run one at a time, or over stdio
 * await env.close();
 * ```
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
  if (
    concurrency <= 1 || "command" in target || "runtime" in target ||
    env.isolatesRuns === true
  ) {
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
 * @example
 * ```ts
 * import { runEval } from "./runner.ts";
 *
 * const { results } = await runEval({
 *   target: { command: "deno", args: ["run", "-A", "examples/text_game/main.ts", "stdio"] },
 *   tasks: [{ scenario: "guess", args: { target: 7, max: 10 } }],
 *   endpoint: { gatewayUrl: "http://localhost:8080", key: "gk_…", model: "gpt-4o-mini" },
 * });
 * results[0].reward ?? results[0].error;
 * ```
 *
 * @param options The environment, tasks, model and limits.
 * @returns The results.
 * @throws {Error} When `concurrency` is above 1 against an HTTP environment
 * that does not isolate runs ({@linkcode concurrencyRefusal}).
 */
export async function runEval(options: EvalOptions): Promise<EvalSummary> {
  const results: EvalResult[] = [];
  const facts = options.facts ??
    (options.convention
      ? { convention: options.convention }
      : await fetchModelFacts(
        options.endpoint.gatewayUrl,
        options.endpoint.model,
        options.signal,
      ));
  const convention = options.convention ?? facts.convention;
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
    if (done.has(key) || !result.error) continue;
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
  // A process (or container) per worker isolates runs already.
  const ownProcess = "command" in options.target ||
    "runtime" in options.target;
  if (workers > 1 && !ownProcess) {
    first = await Environment.connect(options.target, connect);
    const refusal = concurrencyRefusal(first, options.target, workers);
    if (refusal) {
      await first.close().catch(() => {});
      throw new Error(refusal);
    }
  }
  const retries = options.retries ?? 0;
  // The network each scenario asked its container for (see OtherNetwork).
  const networks = new Map<string, ContainerNetwork>();
  const worker = async () => {
    let env = first;
    first = undefined;
    try {
      while (queue.length > 0 && !options.signal?.aborted) {
        const run = queue.shift()!;
        let result: EvalResult;
        const earlier = [...triedBefore.get(plannedIdentity(run)) ?? []];
        let relaunched = false;
        for (let attempt = 1;; attempt++) {
          try {
            env ??= await Environment.connect(options.target, {
              ...connect,
              network: networks.get(run.task.scenario),
            });
            result = await runTask(env, run, options, { ...facts, convention });
          } catch (error) {
            // Once per run, not counted as a try: the agent has not acted.
            if (error instanceof OtherNetwork && !relaunched) {
              relaunched = true;
              networks.set(run.task.scenario, error.network);
              await env?.close().catch(() => {});
              env = undefined;
              attempt--;
              continue;
            }
            result = failedRun(
              run,
              convention,
              options.endpoint.model,
              error,
              options.signal,
            );
          }
          result.attempts = attempt;
          // A container whose Docker daemon stopped answering was lost to
          // the infrastructure, which no agent in it reaches: tried again
          // elsewhere even after the agent acted.
          if (
            result.error_kind === "environment" && result.agent_acted &&
            await env?.hostFailed().catch(() => false)
          ) result.agent_acted = false;
          // A run that failed may have left its connection unusable; a
          // container runtime gives every run a container of its own.
          if (result.error || "runtime" in options.target) {
            await env?.close().catch(() => {});
            env = undefined;
          }
          // Only a failure the agent had no part in is tried again: one
          // after it acted is its score (a 0), or failing would buy retries.
          if (
            attempt > retries || options.signal?.aborted ||
            result.agent_acted ||
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

/**
 * The earlier results that scored a planned run, one per run: an error
 * after the agent acted is its score, never run again.
 */
function keptResults(
  planned: PlannedRun[],
  completed: EvalResult[],
): EvalResult[] {
  const wanted = new Set(planned.map(plannedIdentity));
  const kept = new Map<string, EvalResult>();
  for (const result of completed) {
    const key = runIdentity(result);
    if (scoredReward(result) === null || !wanted.has(key) || kept.has(key)) {
      continue;
    }
    kept.set(key, { ...result, repeat: result.repeat ?? 0 });
  }
  return [...kept.values()];
}

/**
 * The statistics of an eval's results: the mean reward with its spread and
 * 95% confidence interval, the pass rate, the unbiased pass@k, and the
 * summary table the command line prints.
 *
 * @module
 */
import type { EvalResult } from "./result.ts";

/**
 * The unbiased estimator of pass@k (Chen et al. 2021, "Evaluating Large
 * Language Models Trained on Code"): the chance that at least one of `k`
 * runs drawn from `n`, of which `c` passed, passes: 1 − C(n−c, k) / C(n, k).
 *
 * @example
 * ```ts
 * import { passAtK } from "./stats.ts";
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

/**
 * The reward a run counts for in the statistics: its reward; 0 for a run
 * that ended in an error after the agent acted (whatever failed: a model
 * must not leave a task it would fail by crashing its environment or
 * running out the clock); `null` for a run the agent never got to (an
 * infrastructure failure before the model answered, or a stop), which is
 * not scored and is run again by `--resume`.
 *
 * @example
 * ```ts
 * import { scoredReward } from "./stats.ts";
 * import type { EvalResult } from "./result.ts";
 *
 * const crashed = {
 *   reward: null,
 *   error: "The environment closed the connection",
 *   error_kind: "environment",
 *   agent_acted: true,
 * } as EvalResult;
 * scoredReward(crashed); // 0
 * scoredReward({ ...crashed, agent_acted: false }); // null
 * ```
 *
 * @param result A run's result.
 * @returns Its reward for the statistics, or `null` when it is not scored.
 */
export function scoredReward(result: EvalResult): number | null {
  if (!result.error && typeof result.reward === "number") return result.reward;
  return countsAsFailure(result) ? 0 : null;
}

/**
 * Whether a run that ended in an error counts as a failure (reward 0): it
 * did when the agent acted before the error (results written before
 * `agent_acted` was kept: when a model call was made), unless the eval was
 * stopped (Ctrl-C), which is the operator's doing.
 *
 * @example
 * ```ts
 * import { countsAsFailure } from "./stats.ts";
 * import type { EvalResult } from "./result.ts";
 *
 * countsAsFailure({ error: "Timed out after 60 s", error_kind: "timeout", steps: 3 } as EvalResult); // true
 * countsAsFailure({ error: "Stopped", error_kind: "stopped", steps: 3 } as EvalResult); // false
 * ```
 *
 * @param result A run's result.
 * @returns Whether it is an error scored as 0.
 */
export function countsAsFailure(result: EvalResult): boolean {
  if (!result.error || result.error_kind === "stopped") return false;
  return result.agent_acted ?? (Number(result.steps) > 0);
}

/** The rewards of a group of runs, summed up. */
export interface RewardStats {
  /** Runs. */
  runs: number;
  /** Runs that ended in an error, scored or not. */
  errors: number;
  /** Errors after the agent acted, scored as 0 in every rate. */
  countedAsFailures: number;
  /** Errors before the agent acted (infrastructure, a stop): not scored. */
  notScored: number;
  /** Tasks every rate is over: those with all their runs scored. */
  tasks: number;
  /** Tasks left out of every rate: a run of theirs is not scored, or missing. */
  tasksLeftOut: number;
  /** Mean reward over the runs of the rated tasks; `NaN` when there are none. */
  mean: number;
  /** Sample standard deviation of those rewards (0 for fewer than two). */
  stdDev: number;
  /** Half-width of the normal-approximation 95% interval of the mean. */
  ci95: number;
  /** pass@1 and pass@k (k the runs per task), over the rated tasks. */
  passAt: Map<number, number>;
}

/**
 * Sums up rewards. Every rate is over the same tasks: those whose runs all
 * have a score ({@linkcode scoredReward}: an error after the agent acted is
 * a 0) and that ran as often as the most-run task; a task with a run not
 * scored or missing is left out of the mean, pass@1 and pass@k alike, and
 * counted. A run passes with a score of at least `threshold`.
 *
 * @example
 * ```ts
 * import { rewardStats } from "./stats.ts";
 * import type { EvalResult } from "./result.ts";
 *
 * const results = [1, 0, 1, null].map((reward, repeat) =>
 *   ({ task: 0, repeat, scenario: "guess", reward, steps: 2,
 *      ...(reward === null && { error: "crashed", agent_acted: true }) }) as EvalResult
 * );
 * const stats = rewardStats(results);
 * stats.countedAsFailures; // 1
 * stats.mean; // 0.5, the error counted as 0
 * ```
 *
 * @param results The results.
 * @param threshold The reward a run needs to pass (default 1).
 * @returns The statistics.
 */
export function rewardStats(results: EvalResult[], threshold = 1): RewardStats {
  const byTask = new Map<number, (number | null)[]>();
  for (const result of results) {
    byTask.set(result.task, [
      ...byTask.get(result.task) ?? [],
      scoredReward(result),
    ]);
  }
  const most = Math.max(0, ...[...byTask.values()].map((list) => list.length));
  const rated = [...byTask.values()].filter((list) =>
    list.length === most && list.every((r) => r !== null)
  ) as number[][];
  const rewards = rated.flat();
  const n = rewards.length;
  const mean = n === 0 ? NaN : rewards.reduce((a, b) => a + b, 0) / n;
  const stdDev = n < 2
    ? 0
    : Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / (n - 1));
  const passAt = new Map<number, number>();
  if (rated.length > 0) {
    for (const k of new Set([1, most])) {
      const estimates = rated.map((list) =>
        passAtK(list.length, list.filter((r) => r >= threshold).length, k)
      );
      passAt.set(k, estimates.reduce((a, b) => a + b, 0) / estimates.length);
    }
  }
  const errors = results.filter((r) => r.error).length;
  const countedAsFailures = results.filter(countsAsFailure).length;
  return {
    runs: results.length,
    errors,
    countedAsFailures,
    notScored: results.filter((r) => scoredReward(r) === null).length,
    tasks: rated.length,
    tasksLeftOut: byTask.size - rated.length,
    mean,
    stdDev,
    ci95: n < 2 ? 0 : 1.96 * stdDev / Math.sqrt(n),
    passAt,
  };
}

/**
 * The summary table: per scenario, runs, the mean reward with its 95%
 * interval and standard deviation, pass@1 and pass@k (with repetitions),
 * errors after the agent acted (scored as 0), runs not scored (an error
 * before the agent acted), mean steps, tokens and cost, then the totals.
 *
 * @example
 * ```ts
 * import { summaryTable } from "./stats.ts";
 * import type { EvalResult } from "./result.ts";
 *
 * const results = [1, 0.5].map((reward, task) =>
 *   ({
 *     task,
 *     repeat: 0,
 *     scenario: "guess",
 *     reward,
 *     steps: 3,
 *     tokens: { input: 1200, output: 80 },
 *     cost_usd: 0.0004,
 *   }) as EvalResult
 * );
 * console.log(summaryTable(results)); // a row per scenario and a total
 * ```
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
      String(stats.countedAsFailures),
      String(stats.notScored),
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
      "errors as 0",
      "not scored",
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

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
 * @example
 * ```ts
 * import { rewardStats } from "./stats.ts";
 * import type { EvalResult } from "./result.ts";
 *
 * const results = [1, 0, 1, null].map((reward, repeat) =>
 *   ({ task: 0, repeat, scenario: "guess", reward }) as EvalResult
 * );
 * const stats = rewardStats(results);
 * stats.errors; // 1
 * stats.mean; // 0.666…, over the three runs with a reward
 * ```
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

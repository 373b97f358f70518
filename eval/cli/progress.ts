/**
 * The one-line progress display `deno task eval` keeps on stderr while it
 * runs: a bar, runs done of the total, the mean reward so far, errors and
 * cost, and the last run's error (rewritten in place on a terminal, a line
 * per run otherwise).
 *
 * @module
 */
import type { EvalResult } from "../run/result.ts";
import { scoredReward } from "../run/stats.ts";

/**
 * A progress display for a number of runs.
 *
 * @example
 * ```ts
 * import { progress } from "./progress.ts";
 *
 * const show = progress(10);
 * // show(result) after each run: "[##----…] 1/10 runs  mean reward 1.000  $0.000120"
 * ```
 *
 * @param total The runs to make.
 * @returns What to call with each run's result as it finishes.
 */
export function progress(total: number): (result: EvalResult) => void {
  const tty = Deno.stderr.isTerminal();
  const encoder = new TextEncoder();
  let done = 0;
  let rewarded = 0;
  let rewards = 0;
  let errors = 0;
  let cost = 0;
  return (result: EvalResult) => {
    done++;
    if (result.error) errors++;
    const score = scoredReward(result);
    if (score !== null) {
      rewarded++;
      rewards += score;
    }
    cost += result.cost_usd;
    const width = 24;
    const filled = Math.round((done / total) * width);
    const bar = `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
    const line = `${bar} ${done}/${total} runs  mean reward ${
      rewarded > 0 ? (rewards / rewarded).toFixed(3) : "-"
    }${errors > 0 ? `  ${errors} error(s)` : ""}  $${cost.toFixed(6)}${
      result.error ? `  (task ${result.task}: ${result.error})` : ""
    }`;
    Deno.stderr.writeSync(
      encoder.encode(
        tty ? `\r\x1b[2K${line}${done === total ? "\n" : ""}` : `${line}\n`,
      ),
    );
  };
}

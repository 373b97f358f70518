/**
 * What `deno task eval` says after the summary table: where the results are
 * and what the model calls cost (beside what the gateway's ledger charged),
 * the runs that ended in an error by kind, refused tool calls, acknowledged
 * safety checks, and where a recording went or a replay came from.
 *
 * @module
 */
import type { EvalResult } from "../run/result.ts";
import { runIdentity } from "../run/tasks.ts";
import { countsAsFailure } from "../run/stats.ts";

/** What {@linkcode endOfRunLines} reports on besides the results. */
export interface EndOfRun {
  /** Results kept from the eval being resumed, by run identity. */
  kept: ReadonlyMap<string, EvalResult>;
  /** Every result of the eval being resumed, errors included. */
  earlier: readonly EvalResult[];
  /** The results file. */
  out: string;
  /** The key's balance before the runs, µUSD, when the gateway said. */
  before?: number;
  /** The key's balance after the runs, µUSD, when the gateway said. */
  after?: number;
  /** The folder a recording went to, if recorded. */
  recordedIn?: string;
  /** The folder a replay came from, if replayed. */
  replayedFrom?: string;
}

/**
 * The lines printed after the summary table, one `console.log` each.
 *
 * @param results Every result of this eval, kept ones included.
 * @param run What else the lines report on.
 * @returns The lines.
 */
export function endOfRunLines(
  results: readonly EvalResult[],
  run: EndOfRun,
): string[] {
  const { kept, earlier, out, before, after, recordedIn, replayedFrom } = run;
  const lines: string[] = [];
  const fresh = results.filter((r) => !kept.has(runIdentity(r)));
  // A run done again carries what it cost in the earlier eval: not spent now.
  const spentBefore = new Map<string, number>();
  for (const r of earlier.filter((r) => r.error)) {
    const id = runIdentity(r);
    spentBefore.set(
      id,
      (spentBefore.get(id) ?? 0) + (Number(r.cost_usd) || 0),
    );
  }
  const spent = fresh.reduce(
    (sum, r) => sum + r.cost_usd - (spentBefore.get(runIdentity(r)) ?? 0),
    0,
  );
  const ledger = before !== undefined && after !== undefined
    ? `; the gateway's ledger charged $${
      ((before - after) / 1_000_000).toFixed(6)
    }`
    : "";
  lines.push(
    `\n${results.length} result(s) in ${out}; model calls cost $${
      spent.toFixed(6)
    }${ledger}`,
  );
  const failed = results.filter((r) => r.error);
  if (failed.length > 0) {
    const kinds = new Map<string, number>();
    for (const r of failed) {
      const kind = r.error_kind ?? "task";
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    }
    lines.push(
      `${failed.length} run(s) ended in an error (${
        [...kinds].map(([kind, n]) => `${kind} ${n}`).join(", ")
      })`,
    );
    const asFailures = failed.filter(countsAsFailure).length;
    if (asFailures > 0) {
      lines.push(
        `  ${asFailures} after the agent acted: counted as failures (reward 0) in the mean and pass@k`,
      );
    }
    const notScored = failed.length - asFailures;
    if (notScored > 0) {
      lines.push(
        `  ${notScored} before the agent acted (infrastructure, or stopped): not scored, their task(s) left out of every rate; --resume ${out} runs them again`,
      );
    }
  }
  const refused = results.reduce((sum, r) => sum + r.refused_tool_calls, 0);
  if (refused > 0) {
    lines.push(
      `${refused} call(s) of tools the agent was not given were refused`,
    );
  }
  const excess = results.reduce(
    (sum, r) => sum + (r.excess_tool_calls ?? 0),
    0,
  );
  if (excess > 0) {
    lines.push(
      `${excess} tool call(s) past the cap of a turn were answered with an error, not run`,
    );
  }
  const checks = results.reduce((sum, r) => sum + r.safety_checks.length, 0);
  if (checks > 0) {
    lines.push(`${checks} safety check(s) acknowledged`);
  }
  if (recordedIn) lines.push(`Model exchanges recorded in ${recordedIn}`);
  if (replayedFrom) {
    lines.push(
      `Replayed from ${replayedFrom}: no model was called, the cost is $0`,
    );
  }
  return lines;
}

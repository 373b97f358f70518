import assert from "node:assert/strict";
import { passAtK, rewardStats, summaryTable } from "./stats.ts";
import type { EvalResult } from "./result.ts";

/** A result with only what the statistics read set. */
function result(
  task: number,
  repeat: number,
  reward: number | null,
): EvalResult {
  return {
    task,
    repeat,
    scenario: "s",
    args: {},
    reward,
    done: reward !== null,
    ...(reward === null && { error: "failed", error_kind: "environment" }),
    attempts: 1,
    steps: 1,
    tokens: { input: 10, output: 2 },
    cost_usd: 0.001,
    trace_id: "t",
    convention: "chat",
    refused_tool_calls: 0,
    safety_checks: [],
    duration_ms: 5,
  } as EvalResult;
}

/** C(n, k) by the definition, for checking the product form. */
function choose(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let value = 1;
  for (let i = 1; i <= k; i++) value = value * (n - k + i) / i;
  return value;
}

Deno.test("passAtK is 1 − C(n−c, k) / C(n, k) for every small n, c and k", () => {
  for (let n = 1; n <= 12; n++) {
    for (let c = 0; c <= n; c++) {
      for (let k = 1; k <= n; k++) {
        const expected = 1 - choose(n - c, k) / choose(n, k);
        assert.ok(
          Math.abs(passAtK(n, c, k) - expected) < 1e-12,
          `n=${n} c=${c} k=${k}`,
        );
      }
    }
  }
  assert.equal(passAtK(4, 1, 1), 0.25);
  assert.equal(passAtK(4, 0, 4), 0);
  assert.equal(passAtK(200, 1, 100), 0.5);
  assert.throws(() => passAtK(3, 4, 1), RangeError);
  assert.throws(
    () => passAtK(3, 1, 4),
    /Cannot estimate pass@4 from 1 of 3 runs/,
  );
});

Deno.test("rewardStats leaves errors out of the mean and averages pass@k over tasks", () => {
  const stats = rewardStats([
    result(0, 0, 1),
    result(0, 1, 0),
    result(0, 2, null),
    result(1, 0, 0),
    result(1, 1, 0),
    result(1, 2, 0),
  ]);
  assert.equal(stats.runs, 6);
  assert.equal(stats.errors, 1);
  assert.equal(stats.mean, 0.2);
  assert.ok(Math.abs(stats.stdDev - Math.sqrt(0.2)) < 1e-12);
  assert.ok(
    Math.abs(stats.ci95 - 1.96 * Math.sqrt(0.2) / Math.sqrt(5)) < 1e-12,
  );
  // Task 0: 1 of 2 rewarded runs passed (its error is no sample); task 1: 0 of 3.
  assert.equal(stats.passAt.get(1), (0.5 + 0) / 2);
  // pass@3 only over tasks with 3 rewarded runs: task 1.
  assert.equal(stats.passAt.get(3), 0);
  const none = rewardStats([result(0, 0, null)]);
  assert.ok(Number.isNaN(none.mean));
  assert.equal(none.passAt.size, 0);
  assert.equal(rewardStats([result(0, 0, 0.5)], 0.5).passAt.get(1), 1);
});

Deno.test("summaryTable shows the mean, its spread and errors per scenario, and pass@K with repeats", () => {
  const table = summaryTable([
    result(0, 0, 1),
    result(0, 1, null),
    { ...result(1, 0, 0.5), scenario: "other" },
  ]);
  const lines = table.split("\n");
  assert.match(
    lines[0],
    /^scenario +runs +mean reward +95% ci +std dev +pass@1 +pass@2 +errors +steps +tokens +cost/,
  );
  assert.match(
    lines[1],
    /^s +2 +1\.000 +±0\.000 +0\.000 +1\.000 +- +1 +1\.0 +24 +\$0\.002000/,
  );
  assert.match(lines[2], /^other +1 +0\.500 .* 0 +1\.0/);
  assert.match(lines[3], /^total +3 +0\.750 +±0\.490 +0\.354 +0\.500 +- +1 /);
  assert.doesNotMatch(summaryTable([result(0, 0, 1)]), /pass@2/);
});

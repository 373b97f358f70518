import assert from "node:assert/strict";
import {
  countsAsFailure,
  passAtK,
  rewardStats,
  scoredReward,
  summaryTable,
} from "./stats.ts";
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

/** A run that ended in an error before its agent acted (not scored). */
function infraError(task: number, repeat: number): EvalResult {
  return { ...result(task, repeat, null), steps: 0, agent_acted: false };
}

Deno.test("rewardStats scores an error after the agent acted as 0, and every rate over the same tasks", () => {
  const stats = rewardStats([
    result(0, 0, 1),
    result(0, 1, 0),
    result(0, 2, null),
    result(1, 0, 0),
    result(1, 1, 0),
    result(1, 2, 0),
    result(2, 0, 1),
    infraError(2, 1),
    result(2, 2, 1),
  ]);
  assert.equal(stats.runs, 9);
  assert.equal(stats.errors, 2);
  assert.equal(stats.countedAsFailures, 1);
  assert.equal(stats.notScored, 1);
  // Task 2 has a run not scored: it leaves the mean and every pass@k.
  assert.equal(stats.tasks, 2);
  assert.equal(stats.tasksLeftOut, 1);
  assert.ok(Math.abs(stats.mean - 1 / 6) < 1e-12);
  // Task 0: 1 of 3 passed (the error is a 0); task 1: 0 of 3.
  assert.ok(Math.abs(stats.passAt.get(1)! - (1 / 3 + 0) / 2) < 1e-12);
  assert.equal(stats.passAt.get(3), (1 + 0) / 2);
  const none = rewardStats([infraError(0, 0)]);
  assert.ok(Number.isNaN(none.mean));
  assert.equal(none.passAt.size, 0);
  assert.equal(rewardStats([result(0, 0, 0.5)], 0.5).passAt.get(1), 1);
});

Deno.test("scoredReward: an error after the agent acted is 0, before it or on a stop it is not scored", () => {
  assert.equal(scoredReward(result(0, 0, 0.25)), 0.25);
  assert.equal(scoredReward({ ...result(0, 0, null), agent_acted: true }), 0);
  assert.equal(scoredReward(infraError(0, 0)), null);
  // Results written before `agent_acted` was kept: a model call means it acted.
  assert.equal(scoredReward(result(0, 0, null)), 0);
  assert.equal(
    scoredReward({
      ...result(0, 0, null),
      error_kind: "stopped",
      agent_acted: true,
    }),
    null,
  );
  assert.equal(countsAsFailure(result(0, 0, 1)), false);
});

Deno.test("summaryTable shows the mean, its spread, errors scored as 0 and runs not scored per scenario, and pass@K with repeats", () => {
  const table = summaryTable([
    result(0, 0, 1),
    result(0, 1, null),
    { ...result(1, 0, 0.5), scenario: "other" },
    { ...infraError(2, 0), scenario: "third" },
  ]);
  const lines = table.split("\n");
  assert.match(
    lines[0],
    /^scenario +runs +mean reward +95% ci +std dev +pass@1 +pass@2 +errors as 0 +not scored +steps +tokens +cost/,
  );
  assert.match(
    lines[1],
    /^s +2 +0\.500 +±0\.980 +0\.707 +0\.500 +1\.000 +1 +0 +1\.0 +24 +\$0\.002000/,
  );
  // A task with one run beside tasks with two ran less: it leaves every rate.
  assert.match(lines[2], /^other +1 +0\.500 .* 0 +0 +1\.0/);
  assert.match(lines[3], /^third +1 +- .* 0 +1 +0\.0/);
  assert.match(
    lines[4],
    /^total +4 +0\.500 +±0\.980 +0\.707 +0\.500 +1\.000 +1 +1 /,
  );
  assert.doesNotMatch(summaryTable([result(0, 0, 1)]), /pass@2/);
});

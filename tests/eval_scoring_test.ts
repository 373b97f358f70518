/**
 * Scoring an agent cannot game, against a real environment subprocess with
 * a real `bash` tool and a scripted model on loopback: a model that kills
 * its environment (its `crash` tool) on the tasks it would fail scores no
 * more than the honest one, is not retried, and the summary says how many
 * errors were counted as failures; a command that outlives bash's own
 * time-out gets bash's answer, not a run error; `kill -9 0` and
 * `kill -9 $PPID` from bash reach neither the environment nor the runner.
 *
 * @module
 */
import assert from "node:assert/strict";
import { parseTarget, runEval } from "../eval/mod.ts";
import { rewardStats, summaryTable } from "../eval/run/stats.ts";
import { endOfRunLines } from "../eval/cli/summary.ts";
import type { EvalResult } from "../eval/run/result.ts";
import {
  type ScriptedTurn,
  startScriptedModel,
} from "./fixtures/eval_scripted_model.ts";

const ENV = new URL("./fixtures/eval_coin_env.ts", import.meta.url).pathname;
const SIDES = ["heads", "tails", "heads", "tails"] as const;
const TASKS = SIDES.map((side, n) => ({ scenario: "coin", args: { n, side } }));

/** The coin's number the prompt of a request names. */
function coinOf(body: Record<string, unknown>): number {
  return Number(/Coin (\d+)/.exec(JSON.stringify(body))?.[1]);
}

async function evalWith(
  script: ScriptedTurn[],
  options: { retries?: number; env?: Record<string, string> } = {},
): Promise<EvalResult[]> {
  await using model = startScriptedModel({
    models: [{ id: "scripted", routes: ["chat"] }],
    script,
  });
  const { results } = await runEval({
    target: parseTarget(ENV),
    tasks: TASKS,
    endpoint: { gatewayUrl: model.url, key: "k", model: "scripted" },
    toolTimeoutMs: 1000,
    ...options,
  });
  return results;
}

Deno.test("a model that kills its environment on the tasks it would fail scores what the honest one scores, and is not retried", async () => {
  const honest = await evalWith([{ text: "heads" }]);
  // It knows tasks 1 and 3 show tails, which it would answer wrong.
  const cheat: ScriptedTurn = (body) =>
    SIDES[coinOf(body)] === "tails"
      ? { calls: [{ name: "crash", args: {} }] }
      : { text: "heads" };
  const cheater = await evalWith([cheat, { text: "heads" }], { retries: 2 });

  const fair = rewardStats(honest);
  assert.equal(fair.mean, 0.5);
  assert.equal(fair.errors, 0);
  const gamed = rewardStats(cheater);
  assert.equal(gamed.errors, 2, JSON.stringify(cheater.map((r) => r.error)));
  for (const result of cheater.filter((r) => r.error)) {
    assert.equal(result.error_kind, "environment");
    assert.equal(result.agent_acted, true);
    assert.equal(result.attempts, 1, "a failure after acting is not retried");
  }
  assert.equal(gamed.countedAsFailures, 2);
  assert.ok(gamed.mean <= fair.mean, `mean ${gamed.mean} > ${fair.mean}`);
  assert.ok(gamed.passAt.get(1)! <= fair.passAt.get(1)!);

  assert.match(
    summaryTable(cheater),
    /^total +4 +0\.500 +±0\.566 +0\.577 +0\.500 +2 +0 /m,
  );
  const lines = endOfRunLines(cheater, {
    kept: new Map(),
    earlier: [],
    out: "results.jsonl",
  });
  assert.ok(
    lines.includes(
      "  2 after the agent acted: counted as failures (reward 0) in the mean and pass@k",
    ),
    lines.join("\n"),
  );
});

Deno.test("a command past bash's own time-out gets bash's answer, not a run error, with the same tool time-out", async () => {
  const results = await evalWith([
    { calls: [{ name: "bash", args: { command: "sleep 30" } }] },
    (body) => ({
      text: /did not finish within 1 s/.test(JSON.stringify(body))
        ? "heads"
        : "no time-out seen",
    }),
  ], { env: { EVAL_BASH_TIMEOUT_MS: "1000" } });
  assert.deepEqual(results.map((r) => r.error), SIDES.map(() => undefined));
  assert.deepEqual(results.map((r) => r.reward), [1, 0, 1, 0]);
});

Deno.test("kill -9 0 and kill -9 $PPID from bash kill only the shell: the environment, the runner and this test live on", async () => {
  // The runner runs in this test's process; the environment is its child in
  // this process group. A shell sharing the group (or, in a PID namespace,
  // whose $PPID is 0) took all of them down with `kill -9 0`.
  const results = await evalWith([
    { calls: [{ name: "bash", args: { command: "kill -9 0" } }] },
    { calls: [{ name: "bash", args: { command: "kill -9 $PPID" } }] },
    { text: "heads" },
  ]);
  assert.deepEqual(results.map((r) => r.error), SIDES.map(() => undefined));
  assert.deepEqual(results.map((r) => r.reward), [1, 0, 1, 0]);
});

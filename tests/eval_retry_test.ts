/**
 * `retries` through the API, against a gateway in front of the simulator:
 * a model call the gateway could not serve (a 5xx) before the model
 * answered is an infrastructure failure, tried again; a request the
 * provider refused (a 4xx), or any failure after the model answered, is the
 * run's own, never tried again, and scores 0.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startSimulator } from "../gateway/simulator/mod.ts";
import { type EvalResult, parseTarget, runEval } from "../eval/mod.ts";
import { rewardStats, scoredReward } from "../eval/run/stats.ts";
import { gatewayWithCaller } from "./_eval_gateway.ts";

const GAME = new URL("../examples/text_game/main.ts", import.meta.url)
  .pathname;

Deno.test("a model call the gateway could not serve is a gateway error, tried again with retries; a refused request is not", async () => {
  await using sim = await startSimulator();
  const { gateway, caller } = await gatewayWithCaller(sim);
  const run = (retries: number) =>
    runEval({
      target: parseTarget(GAME),
      tasks: [{ scenario: "guess", args: { target: 7, max: 10 } }],
      endpoint: { gatewayUrl: gateway.url, key: caller.key, model: "gpt-4o" },
      retries,
    });
  try {
    sim.enqueue({ behaviour: { status: 503, message: "overloaded" } });
    const [failed] = (await run(0)).results;
    assert.equal(failed.reward, null);
    assert.equal(failed.error_kind, "gateway");
    assert.match(failed.error ?? "", /^The model call failed \(502\)/);

    sim.enqueue({ behaviour: { status: 503, message: "overloaded" } });
    const [retried] = (await run(2)).results;
    assert.equal(retried.error, undefined);
    assert.equal(retried.reward, 1);
    assert.equal(retried.attempts, 2);

    sim.enqueue({
      behaviour: { status: 400, message: "The prompt is not allowed" },
    });
    const [refused] = (await run(2)).results;
    assert.equal(refused.error_kind, "task");
    assert.equal(refused.attempts, 1, "a refusal is not tried again");
    assert.equal(refused.reward, null);
  } finally {
    await gateway.shutdown();
  }
});

Deno.test("a run that failed after the model answered is not tried again: the failure is its score (0), its charge kept", async () => {
  await using sim = await startSimulator();
  const { gateway, caller } = await gatewayWithCaller(sim);
  const run = (retries: number) =>
    runEval({
      target: parseTarget(GAME),
      tasks: [{ scenario: "guess", args: { target: 7, max: 10 } }],
      endpoint: { gatewayUrl: gateway.url, key: caller.key, model: "gpt-4o" },
      retries,
    });
  try {
    const [clean] = (await run(0)).results;
    assert.equal(clean.error, undefined);
    assert.ok(clean.steps >= 2, "the game takes more than one model call");
    const firstStep = clean.trajectory!.steps[0].cost_usd;
    assert.ok(firstStep > 0);

    // The first call is answered (and charged), the second fails.
    sim.enqueue({ behaviour: {} });
    sim.enqueue({ behaviour: { status: 503, message: "overloaded" } });
    const [failed] = (await run(1)).results;
    assert.equal(failed.error_kind, "gateway");
    assert.match(failed.error ?? "", /^The model call failed \(502\)/);
    assert.equal(failed.agent_acted, true);
    assert.equal(failed.attempts, 1, "no second try after the agent acted");
    assert.equal(scoredReward(failed), 0);
    assert.equal(failed.cost_usd, firstStep, "the answered call's charge");
  } finally {
    await gateway.shutdown();
  }
});

Deno.test("a resumed eval keeps a run that failed after its agent acted as its score, and runs it never again", async () => {
  await using sim = await startSimulator();
  const { gateway, caller } = await gatewayWithCaller(sim);
  const tasks = [
    { scenario: "guess", args: { target: 7, max: 10 } },
    { scenario: "guess", args: { target: 3, max: 10 } },
  ];
  const run = (completed: EvalResult[] = []) =>
    runEval({
      target: parseTarget(GAME),
      tasks,
      endpoint: { gatewayUrl: gateway.url, key: caller.key, model: "gpt-4o" },
      completed,
    });
  try {
    // The first eval: task 1's second model call fails, after its first was charged.
    sim.enqueue({ behaviour: {}, times: 3 });
    sim.enqueue({ behaviour: {} });
    sim.enqueue({ behaviour: { status: 503, message: "overloaded" } });
    const first = (await run()).results;
    assert.equal(first[0].error, undefined);
    assert.equal(first[1].error_kind, "gateway");
    assert.equal(first[1].agent_acted, true);
    assert.ok(first[1].cost_usd > 0, "the failed run was charged");

    const resumed = await run(first);
    assert.equal(resumed.stopped, false);
    assert.deepEqual(resumed.results, first, "both kept as they were");
    assert.equal(rewardStats(resumed.results).mean, 0.5);
  } finally {
    await gateway.shutdown();
  }
});

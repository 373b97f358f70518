/**
 * `retries` through the API, against a gateway in front of the simulator:
 * a model call the gateway could not serve (a 5xx) is an infrastructure
 * failure, tried again; a request the provider refused (a 4xx) is the run's
 * own failure, never tried again.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createCaller } from "../gateway/state/callers.ts";
import { parseConfig } from "../gateway/config.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { startGateway } from "../gateway/http/server.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import { type EvalResult, parseTarget, runEval } from "../eval/mod.ts";

const GAME = new URL("../examples/text_game/main.ts", import.meta.url)
  .pathname;

async function gatewayWithCaller(sim: { env(): Record<string, string> }) {
  const gateway = await startGateway(
    parseConfig({
      env: {
        GATEWAY_KV_PATH: ":memory:",
        PORT: "0",
        ...sim.env(),
        OPENAI_API_KEYS: "sk-test-1",
      },
    }),
    { log: () => {} },
  );
  const caller = await createCaller(gateway.kv, {
    name: "eval",
    creditsMicros: usdToMicros(1),
  });
  return { gateway, caller };
}

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

Deno.test("a run tried again counts what its failed try was charged: cost and tokens over every try, and each earlier try with its error", async () => {
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
    const [retried] = (await run(1)).results;
    assert.equal(retried.error, undefined);
    assert.equal(retried.attempts, 2);
    assert.equal(retried.earlier_attempts?.length, 1);
    const [earlier] = retried.earlier_attempts!;
    assert.equal(earlier.error_kind, "gateway");
    assert.match(earlier.error, /^The model call failed \(502\)/);
    assert.equal(earlier.cost_usd, firstStep);
    assert.equal(
      Math.round(retried.cost_usd * 1e6),
      Math.round((clean.cost_usd + firstStep) * 1e6),
      "the failed try's charge is in the run's cost",
    );
    assert.equal(
      retried.tokens.input,
      clean.tokens.input + earlier.tokens.input,
    );
  } finally {
    await gateway.shutdown();
  }
});

Deno.test("a resumed eval runs an errored run again and keeps what that run cost before in its new result", async () => {
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
    assert.ok(first[1].cost_usd > 0, "the failed run was charged");

    const resumed = (await run(first)).results;
    assert.equal(resumed.length, 2);
    assert.deepEqual(
      resumed[0],
      first[0],
      "the finished run is kept as it was",
    );
    const again = resumed[1];
    assert.equal(again.error, undefined);
    assert.equal(again.attempts, 2);
    assert.deepEqual(again.earlier_attempts?.map((a) => a.cost_usd), [
      first[1].cost_usd,
    ]);
    assert.ok(again.cost_usd > first[1].cost_usd);
    const thisTry = again.trajectory!.steps.reduce((s, t) => s + t.cost_usd, 0);
    assert.equal(
      Math.round(again.cost_usd * 1e6),
      Math.round((first[1].cost_usd + thisTry) * 1e6),
      "the run's cost is the earlier try's and this one's",
    );
  } finally {
    await gateway.shutdown();
  }
});

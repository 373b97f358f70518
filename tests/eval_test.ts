/**
 * The eval runner end to end: offline through the CLI (`deno task eval`, the
 * demo gateway and simulator in its process), and through the API against a
 * gateway in front of the simulator, where every run's cost must equal what
 * the gateway's ledger charged and every model call carries the run's trace id.
 *
 * @module
 */
import assert from "node:assert/strict";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import { type EvalResult, parseTarget, runEval } from "../eval/mod.ts";
import { gatewayWithCaller } from "./_eval_gateway.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const GAME = `${ROOT}examples/text_game/main.ts`;
const TASKS = `${ROOT}examples/text_game/tasks.jsonl`;

Deno.test("deno task eval on a fresh machine: the demo runs the text game's tasks and prints rewards and a cost the ledger agrees with", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-" });
  try {
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `${ROOT}eval/main.ts`,
        GAME,
        "--tasks",
        TASKS,
        "--concurrency",
        "2",
        "--out",
        `${dir}/results.jsonl`,
      ],
      cwd: dir,
      env: { NO_COLOR: "1" },
      stdin: "null",
    }).output();
    const stdout = new TextDecoder().decode(output.stdout);
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    const results = (await Deno.readTextFile(`${dir}/results.jsonl`)).trim()
      .split("\n").map((line) => JSON.parse(line) as EvalResult)
      .sort((a, b) => a.task - b.task);
    // The simulated model calls `look`, then `guess` with 7, then answers.
    assert.deepEqual(results.map((r) => r.reward), [1, 0, 0]);
    for (const result of results) {
      assert.equal(result.steps, 3);
      assert.ok(result.cost_usd > 0);
      assert.equal(result.subscores?.length, 3);
    }
    assert.match(stdout, /^guess +3 +0\.333/m);
    const cost =
      /model calls cost \$([\d.]+); the gateway's ledger charged \$([\d.]+)/
        .exec(stdout);
    assert.ok(cost, stdout);
    assert.equal(cost[1], cost[2]);
    assert.match(stderr, /3\/3 runs/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runEval against a gateway in front of the simulator: costs equal the ledger's charges and traces carry the run's id", async () => {
  await using sim = await startSimulator();
  const { gateway, caller } = await gatewayWithCaller(sim);
  try {
    const balance = async () => {
      const response = await fetch(`${gateway.url}/v1/credits`, {
        headers: { authorization: `Bearer ${caller.key}` },
      });
      return usdToMicros(Number((await response.json()).balance));
    };
    const before = await balance();
    const { results, stopped } = await runEval({
      target: parseTarget(GAME),
      tasks: [
        { scenario: "guess", args: { target: 7, max: 10 } },
        { scenario: "guess", args: { target: 9, max: 10 } },
        { scenario: "guess", args: { seed: 1 } },
      ],
      endpoint: { gatewayUrl: gateway.url, key: caller.key, model: "gpt-4o" },
      concurrency: 2,
    });
    assert.equal(stopped, false);
    assert.deepEqual(results.map((r) => r.reward), [1, 0, 0]);
    const spent = results.reduce(
      (sum, r) => sum + Math.round(r.cost_usd * 1_000_000),
      0,
    );
    assert.ok(spent > 0);
    assert.equal(before - await balance(), spent);
    for (const result of results) {
      const response = await fetch(
        `${gateway.url}/v1/traces?trace_id=${result.trace_id}`,
        { headers: { authorization: `Bearer ${caller.key}` } },
      );
      const traces = (await response.json()).data as {
        costMicros: number;
        status: number;
      }[];
      assert.equal(traces.length, result.steps);
      assert.equal(
        traces.reduce((sum, t) => sum + t.costMicros, 0),
        Math.round(result.cost_usd * 1_000_000),
      );
    }
  } finally {
    await gateway.shutdown();
  }
});

Deno.test("an eval stopped by its signal keeps the results so far and says it stopped", async () => {
  await using sim = await startSimulator({ behaviour: { latencyMs: 150 } });
  const { gateway, caller } = await gatewayWithCaller(sim);
  try {
    const controller = new AbortController();
    const seen: EvalResult[] = [];
    const { results, stopped } = await runEval({
      target: parseTarget(GAME),
      tasks: Array.from({ length: 6 }, () => ({
        scenario: "guess",
        args: { target: 7, max: 10 },
      })),
      endpoint: { gatewayUrl: gateway.url, key: caller.key, model: "gpt-4o" },
      signal: controller.signal,
      onResult: (result) => {
        seen.push(result);
        if (seen.length === 1) controller.abort();
      },
    });
    assert.equal(stopped, true);
    assert.ok(results.length >= 1 && results.length < 6);
    assert.equal(results[0].reward, 1);
  } finally {
    await gateway.shutdown();
  }
});

Deno.test("Ctrl-C stops deno task eval cleanly: results so far stay in the file, a summary is printed, exit 130", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-" });
  const tasks = `${dir}/tasks.jsonl`;
  await Deno.writeTextFile(
    tasks,
    Array.from(
      { length: 40 },
      () => JSON.stringify({ scenario: "guess", args: { target: 7, max: 10 } }),
    ).join(
      "\n",
    ),
  );
  try {
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `${ROOT}eval/main.ts`,
        GAME,
        "--tasks",
        tasks,
        "--out",
        `${dir}/results.jsonl`,
      ],
      cwd: dir,
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const stdout = new Response(child.stdout).text();
    const reader = child.stderr.pipeThrough(new TextDecoderStream())
      .getReader();
    let stderr = "";
    // Interrupt once two runs have finished.
    while (!/ 2\/40 runs/.test(stderr)) {
      const { value, done } = await reader.read();
      if (done) break;
      stderr += value;
    }
    child.kill("SIGINT");
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      stderr += r.value;
    }
    const status = await child.status;
    assert.equal(status.code, 130, stderr);
    assert.match(stderr, /Stopping: no new runs; results so far are kept/);
    const lines = (await Deno.readTextFile(`${dir}/results.jsonl`)).trim()
      .split("\n");
    assert.ok(
      lines.length >= 2 && lines.length < 40,
      `${lines.length} results`,
    );
    for (const line of lines) JSON.parse(line);
    assert.match(await stdout, new RegExp(`${lines.length} result\\(s\\) in`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

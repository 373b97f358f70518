/**
 * Results nothing can lose, with `deno task eval` as a real subprocess: two
 * evals started together each keep a file of their own; `--out` never
 * truncates a file; a resume appends, and one killed (SIGKILL) at any point
 * loses no line and no cost; a file of another environment is refused; and
 * a model call cut off by `--timeout` is charged as the gateway's traces say.
 *
 * @module
 */
import assert from "node:assert/strict";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import { parseTarget, runEval } from "../eval/mod.ts";
import { readResults } from "../eval/run/results_file.ts";
import { ROOT } from "./_eval_cli.ts";
import { gatewayWithCaller } from "./_eval_gateway.ts";

const RUNS_ENV = `${ROOT}tests/fixtures/eval_runs_env.ts`;

function evalCommand(args: string[], dir: string, piped = false) {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}eval/main.ts`, RUNS_ENV, ...args],
    cwd: dir,
    env: { NO_COLOR: "1", GATEWAY_URL: "", GATEWAY_KEY: "" },
    stdin: "null",
    stdout: piped ? "piped" : "null",
    stderr: "piped",
  });
}

async function evalCli(args: string[], dir: string) {
  const output = await evalCommand(args, dir).output();
  return { code: output.code, stderr: new TextDecoder().decode(output.stderr) };
}

async function writeTasks(dir: string, count: number): Promise<string> {
  const file = `${dir}/tasks.jsonl`;
  await Deno.writeTextFile(
    file,
    Array.from(
      { length: count },
      (_, n) => JSON.stringify({ scenario: "slow", args: { n } }),
    ).join("\n"),
  );
  return file;
}

async function lines(file: string): Promise<string[]> {
  return (await Deno.readTextFile(file)).split("\n").filter(Boolean);
}

Deno.test("evals started together each keep their own results file, and --out never truncates one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-results-" });
  try {
    const tasks = await writeTasks(dir, 3);
    const runs = await Promise.all(
      [0, 1, 2].map(() => evalCli(["--tasks", tasks], dir)),
    );
    for (const run of runs) assert.equal(run.code, 0, run.stderr);
    const again = await evalCli(["--tasks", tasks], dir);
    assert.equal(again.code, 0, again.stderr);
    const files = [...Deno.readDirSync(`${dir}/eval-results`)]
      .filter((entry) => entry.name.endsWith(".jsonl"));
    assert.equal(files.length, 4, "a file per eval");
    for (const file of files) {
      assert.equal((await lines(`${dir}/eval-results/${file.name}`)).length, 3);
    }

    const out = `${dir}/mine.jsonl`;
    assert.equal(
      (await evalCli(["--tasks", tasks, "--out", out], dir)).code,
      0,
    );
    const before = await Deno.readTextFile(out);
    const refused = await evalCli(["--tasks", tasks, "--out", out], dir);
    assert.equal(refused.code, 2);
    assert.equal(
      refused.stderr.trim(),
      `${out} exists: --resume ${out} adds to it; --out takes a new file`,
    );
    assert.equal(await Deno.readTextFile(out), before);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** The cost the file records: its line that counts per run, summed, µUSD. */
async function recordedMicros(file: string): Promise<number> {
  return readResults(await Deno.readTextFile(file)).results.reduce(
    (sum, r) => sum + Math.round(r.cost_usd * 1e6),
    0,
  );
}

Deno.test("a resume killed at any point loses no line and no cost, and the next one finishes the eval", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-results-" });
  try {
    const tasks = await writeTasks(dir, 6);
    const out = `${dir}/results.jsonl`;
    const common = ["--tasks", tasks, "--env", "EVAL_FIXTURE_DELAY_MS=400"];
    // A first eval stopped after two runs: the rest are to do.
    const first = evalCommand([...common, "--out", out], dir).spawn();
    for (let i = 0; i < 200; i++) {
      const done = await lines(out).catch(() => []);
      if (done.length >= 2) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    first.kill("SIGINT");
    assert.equal((await first.output()).code, 130);
    for (const delay of [0, 300, 900, 1600, 2400, 3200]) {
      const text = await Deno.readTextFile(out);
      const micros = await recordedMicros(out);
      const resume = evalCommand([...common, "--resume", out], dir).spawn();
      await new Promise((resolve) => setTimeout(resolve, delay));
      try {
        resume.kill("SIGKILL");
      } catch (error) {
        // It finished the eval before the kill (a fast machine): nothing to kill.
        if (!(error instanceof TypeError)) throw error;
      }
      await resume.output();
      assert.ok(
        (await Deno.readTextFile(out)).startsWith(text),
        `killed after ${delay} ms: a line written before is gone`,
      );
      assert.ok(
        await recordedMicros(out) >= micros,
        `killed after ${delay} ms: recorded cost went down`,
      );
    }
    const last = await evalCli([...common, "--resume", out], dir);
    assert.equal(last.code, 0, last.stderr);
    const { results } = readResults(await Deno.readTextFile(out));
    assert.deepEqual(results.map((r) => r.task), [0, 1, 2, 3, 4, 5]);
    assert.ok(results.every((r) => !r.error && r.reward === r.task / 10));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--resume refuses a results file of another environment in one line; results name their environment", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-results-" });
  try {
    const tasks = await writeTasks(dir, 2);
    const out = `${dir}/results.jsonl`;
    assert.equal(
      (await evalCli(["--tasks", tasks, "--out", out], dir)).code,
      0,
    );
    const [one, two] = await lines(out);
    assert.equal(JSON.parse(one).environment, "runs-env");
    // Another server's result of a task alike, then this one's to finish.
    await Deno.writeTextFile(
      out,
      `${JSON.stringify({ ...JSON.parse(two), environment: "other-game" })}\n${
        JSON.stringify({
          ...JSON.parse(one),
          reward: null,
          error: "Stopped",
          error_kind: "stopped",
        })
      }\n`,
    );
    const refused = await evalCli(["--tasks", tasks, "--resume", out], dir);
    assert.equal(refused.code, 2);
    assert.equal(
      refused.stderr.trim(),
      `${out} holds results of the environment "other-game", not runs-env: resume against the environment it ran`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a model call cut off by --timeout is recorded at what the gateway charged, read from its traces", async () => {
  await using sim = await startSimulator();
  const { gateway, caller } = await gatewayWithCaller(sim);
  const balance = async () =>
    usdToMicros(
      Number(
        (await (await fetch(`${gateway.url}/v1/credits`, {
          headers: { authorization: `Bearer ${caller.key}` },
        })).json()).balance,
      ),
    );
  try {
    const before = await balance();
    // The first call answers at once; the second, after the run's time-out.
    sim.enqueue({ behaviour: {} });
    sim.enqueue({ behaviour: { latencyMs: 2500 } });
    const { results: [result] } = await runEval({
      target: parseTarget(`${ROOT}examples/text_game/main.ts`),
      tasks: [{ scenario: "guess", args: { target: 7, max: 10 } }],
      endpoint: { gatewayUrl: gateway.url, key: caller.key, model: "gpt-4o" },
      timeoutMs: 1500,
    });
    assert.equal(result.error_kind, "timeout");
    assert.equal(result.steps, 2);
    const answered = result.trajectory!.steps[0].cost_usd;
    assert.ok(answered > 0);
    // Wait for the cut-off call to be settled, then compare with the ledger.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const charged = before - await balance();
    assert.equal(result.cost_source, "gateway_traces");
    assert.ok(Math.round(result.cost_usd * 1e6) > Math.round(answered * 1e6));
    assert.equal(Math.round(result.cost_usd * 1e6), charged);
  } finally {
    await gateway.shutdown();
  }
});

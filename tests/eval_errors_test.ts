/**
 * Errors a person can act on: every way `deno task eval` cannot start (an
 * environment that dies at start-up, an unknown flag, an unreachable
 * environment or gateway, a refused key, an unknown model, no credits) is
 * one line and a non-zero exit before any task runs; a run that fails is an
 * error with no reward, kept out of the mean and counted in the summary.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createCaller } from "../gateway/state/callers.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import type { EvalResult } from "../eval/mod.ts";
import { freePort } from "./_ports.ts";
import { simulatedGateway } from "./_eval_gateway.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const RUNS_ENV = `${ROOT}tests/fixtures/eval_runs_env.ts`;

async function evalCli(args: string[], dir: string) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}eval/main.ts`, ...args],
    cwd: dir,
    env: { NO_COLOR: "1", GATEWAY_URL: "", GATEWAY_KEY: "" },
    stdin: "null",
  }).output();
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr),
  };
}

/** Asserts a run refused with exit 2 and exactly one line matching `message`. */
function assertOneLine(
  run: { code: number; stderr: string },
  message: RegExp,
) {
  assert.equal(run.code, 2, run.stderr);
  assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
  assert.match(run.stderr.trim(), message);
}

Deno.test("an environment that fails at start-up shows the end of its stderr, exit 2", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-errors-" });
  try {
    const run = await evalCli(
      [RUNS_ENV, "--env", "EVAL_FIXTURE_FAIL_START=1"],
      dir,
    );
    assert.equal(run.code, 2, run.stderr);
    const [first, ...tail] = run.stderr.trim().split("\n");
    assert.match(
      first,
      /^The environment `.+eval_runs_env\.ts stdio` did not start \(.+\); the end of its stderr:$/,
    );
    assert.deepEqual(tail, [
      "  | runs-env: loading the task database",
      "  | runs-env: cannot open /srv/tasks.db: permission denied (run as the owner)",
    ]);
    assert.doesNotMatch(run.stderr, /^\s+at /m, "no stack trace");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an unknown flag, a flag without its value and an unreachable environment or gateway are one line, exit 2", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-errors-" });
  try {
    assertOneLine(
      await evalCli([RUNS_ENV, "--task", "tasks.jsonl"], dir),
      /^Unknown option "--task" \(did you mean --tasks\?\): deno task eval --help lists the options$/,
    );
    assertOneLine(
      await evalCli([RUNS_ENV, "--concurency", "2"], dir),
      /^Unknown option "--concurency" \(did you mean --concurrency\?\)/,
    );
    assertOneLine(
      await evalCli([RUNS_ENV, "--tasks"], dir),
      /^Option '--tasks <value>' argument missing: deno task eval --help/,
    );
    assertOneLine(
      await evalCli([RUNS_ENV, "--timeout", "soon"], dir),
      /^--timeout must be a positive number of seconds, got "soon"$/,
    );
    assertOneLine(
      await evalCli([RUNS_ENV, "--retries", "-1"], dir),
      /^Option '--retries' argument is ambiguous \(a value starting with "-" goes as --name=value\)/,
    );
    assertOneLine(
      await evalCli([RUNS_ENV, "--retries=-1"], dir),
      /^--retries must be an integer from 0 to 100, got "-1"$/,
    );
    const port = freePort();
    assertOneLine(
      await evalCli([`http://127.0.0.1:${port}/mcp`], dir),
      new RegExp(
        `^Cannot reach the environment at http://127\\.0\\.0\\.1:${port}/mcp: nothing answers there$`,
      ),
    );
    const gateway = freePort();
    assertOneLine(
      await evalCli([
        RUNS_ENV,
        "--gateway",
        `http://127.0.0.1:${gateway}`,
        "--key",
        "gk_whatever",
      ], dir),
      new RegExp(
        `^Cannot reach the gateway at http://127\\.0\\.0\\.1:${gateway}: nothing answers there$`,
      ),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the key and the model are checked before any task starts: a refused key, an unknown model, no credits are one line, exit 2", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-errors-" });
  await using sim = await startSimulator();
  const gateway = await simulatedGateway(sim);
  try {
    const rich = await createCaller(gateway.kv, {
      name: "rich",
      creditsMicros: usdToMicros(1),
    });
    const broke = await createCaller(gateway.kv, {
      name: "broke",
      creditsMicros: 0,
    });
    const run = (key: string, model = "gpt-4o") =>
      evalCli([
        RUNS_ENV,
        "--scenario",
        "slow",
        "--args",
        '{"n": 1}',
        "--gateway",
        gateway.url,
        "--key",
        key,
        "--model",
        model,
        "--out",
        `${dir}/results.jsonl`,
      ], dir);
    assertOneLine(
      await run("gk_not_a_key"),
      /^The gateway at http:\/\/\S+ refused the key \(401\): /,
    );
    assertOneLine(
      await run(rich.key, "gpt-nonexistent"),
      /^The gateway at http:\/\/\S+ has no model "gpt-nonexistent": GET \/v1\/models lists them$/,
    );
    assertOneLine(
      await run(rich.key, "claude-haiku-4-5"),
      /^The model "claude-haiku-4-5" cannot be served: No anthropic key is configured/,
    );
    assertOneLine(
      await run(broke.key),
      /^The key has no credits left at http:\/\/\S+ \(balance \$0(\.0+)?\)$/,
    );
    await assert.rejects(Deno.stat(`${dir}/results.jsonl`), "no task ran");
    const fine = await run(rich.key);
    assert.equal(fine.code, 0, fine.stderr);
  } finally {
    await gateway.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a run that fails after its agent acted is an error with no reward, scored 0 in the mean and named in the summary, exit 1", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-errors-" });
  try {
    const tasks = `${dir}/tasks.jsonl`;
    await Deno.writeTextFile(
      tasks,
      [
        { scenario: "slow", args: { n: 4 } },
        { scenario: "broken" },
        { scenario: "slow", args: { n: 8 } },
      ].map((task) => JSON.stringify(task)).join("\n"),
    );
    const run = await evalCli(
      [RUNS_ENV, "--tasks", tasks, "--out", `${dir}/results.jsonl`],
      dir,
    );
    assert.equal(run.code, 1, run.stderr);
    const results = (await Deno.readTextFile(`${dir}/results.jsonl`)).trim()
      .split("\n").map((line) => JSON.parse(line) as EvalResult)
      .sort((a, b) => a.task - b.task);
    assert.deepEqual(results.map((r) => r.reward), [0.4, null, 0.8]);
    assert.equal(results[1].error_kind, "task");
    assert.match(results[1].error ?? "", /The grader crashed on purpose/);
    // The grader crashed after the agent answered: a failure, scored 0.
    assert.match(run.stdout, /^total +3 +0\.400 +±\S+ +\S+ +\S+ +1 +0 /m);
    assert.match(run.stdout, /^broken +1 +0\.000 +/m);
    assert.match(run.stdout, /^1 run\(s\) ended in an error \(task 1\)$/m);
    assert.match(
      run.stdout,
      /^ {2}1 after the agent acted: counted as failures \(reward 0\) in the mean and pass@k$/m,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--timeout ends a run that takes too long as an error, not a zero", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-errors-" });
  try {
    const started = performance.now();
    const run = await evalCli([
      RUNS_ENV,
      "--scenario",
      "slow",
      "--args",
      '{"n": 5}',
      "--env",
      "EVAL_FIXTURE_DELAY_MS=20000",
      "--timeout",
      "0.5",
      "--out",
      `${dir}/results.jsonl`,
    ], dir);
    assert.equal(run.code, 1, run.stderr);
    assert.ok(performance.now() - started < 15_000, "cut off, not waited out");
    const [result] = (await Deno.readTextFile(`${dir}/results.jsonl`)).trim()
      .split("\n").map((line) => JSON.parse(line) as EvalResult);
    assert.equal(result.reward, null);
    assert.equal(result.error, "Timed out after 0.5 s");
    assert.equal(result.error_kind, "timeout");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

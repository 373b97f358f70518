/**
 * Resume and retry: a run stopped with SIGINT and resumed has every task
 * exactly once; `--retries` runs again a task whose environment failed, never
 * one that failed on its own; `--repeat` gives pass@k.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { EvalResult } from "../eval/mod.ts";
import { readResults as parseResults } from "../eval/run/results_file.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const RUNS_ENV = `${ROOT}tests/fixtures/eval_runs_env.ts`;

function evalCommand(args: string[], dir: string, piped = false) {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}eval/main.ts`, RUNS_ENV, ...args],
    cwd: dir,
    env: { NO_COLOR: "1", GATEWAY_URL: "", GATEWAY_KEY: "" },
    stdin: "null",
    ...(piped && { stdout: "piped", stderr: "piped" }),
  });
}

async function evalCli(args: string[], dir: string) {
  const output = await evalCommand(args, dir).output();
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr),
  };
}

/** The results file's line that counts per run (a resume appends after older ones). */
async function readResults(file: string): Promise<EvalResult[]> {
  return parseResults(await Deno.readTextFile(file)).results;
}

async function writeTasks(dir: string, tasks: object[]): Promise<string> {
  const file = `${dir}/tasks.jsonl`;
  await Deno.writeTextFile(
    file,
    tasks.map((task) => JSON.stringify(task)).join("\n"),
  );
  return file;
}

Deno.test("a run stopped with SIGINT and resumed has every task exactly once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-resume-" });
  try {
    const tasks = await writeTasks(
      dir,
      Array.from({ length: 10 }, (_, n) => ({ scenario: "slow", args: { n } })),
    );
    const out = `${dir}/results.jsonl`;
    const common = [
      "--tasks",
      tasks,
      "--concurrency",
      "2",
      "--env",
      "EVAL_FIXTURE_DELAY_MS=300",
    ];
    const child = evalCommand([...common, "--out", out], dir, true).spawn();
    const stdout = new Response(child.stdout).text();
    const reader = child.stderr.pipeThrough(new TextDecoderStream())
      .getReader();
    let stderr = "";
    while (!/ 3\/10 runs/.test(stderr)) {
      const { value, done } = await reader.read();
      if (done) break;
      stderr += value;
    }
    child.kill("SIGINT");
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      stderr += r.value;
    }
    assert.equal((await child.status).code, 130, stderr);
    await stdout;
    const first = await readResults(out);
    const finished = first.filter((r) => !r.error);
    assert.ok(
      finished.length >= 3 && finished.length < 10,
      `${finished.length} finished`,
    );
    // Runs cut off by the stop are in the file as errors, to run again.
    for (const result of first.filter((r) => r.error)) {
      assert.equal(result.error_kind, "stopped");
      assert.equal(result.reward, null);
    }

    const written = await Deno.readTextFile(out);
    const resumed = await evalCli(["--tasks", tasks, "--resume", out], dir);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.ok(
      (await Deno.readTextFile(out)).startsWith(written),
      "a resume appends: every line written before is still there",
    );
    assert.match(
      resumed.stderr,
      new RegExp(
        `Running ${
          10 - finished.length
        } task\\(s\\) .*\\(${finished.length} already in `,
      ),
    );
    const results = await readResults(out);
    assert.deepEqual(
      results.map((r) => r.task).sort((a, b) => a - b),
      Array.from({ length: 10 }, (_, n) => n),
      "every task exactly once",
    );
    for (const result of results) {
      assert.equal(result.error, undefined);
      assert.equal(result.reward, result.task / 10);
    }
    // The runs finished before the stop were kept as they were.
    for (const before of finished) {
      assert.deepEqual(
        results.find((r) => r.task === before.task),
        before,
      );
    }
    assert.match(resumed.stdout, /^total +10 +0\.450 /m);

    // Resuming a finished run runs nothing.
    const again = await evalCli(["--tasks", tasks, "--resume", out], dir);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /Running 0 task\(s\)/);
    assert.equal((await readResults(out)).length, 10);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--resume with other tasks, or a torn last line, is handled: one line for the first, a re-run for the second", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-resume-" });
  try {
    const tasks = await writeTasks(dir, [
      { scenario: "slow", args: { n: 1 } },
      { scenario: "slow", args: { n: 2 } },
    ]);
    const out = `${dir}/results.jsonl`;
    const first = await evalCli(["--tasks", tasks, "--out", out], dir);
    assert.equal(first.code, 0, first.stderr);
    const [kept] = (await Deno.readTextFile(out)).split("\n");
    // A kill mid-write leaves half a line.
    await Deno.writeTextFile(out, `${kept}\n${kept.slice(0, 40)}`);
    const resumed = await evalCli(["--tasks", tasks, "--resume", out], dir);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stderr, /Running 1 task\(s\)/);
    assert.deepEqual(
      (await readResults(out)).map((r) => r.reward).sort(),
      [0.1, 0.2],
    );

    const other = await writeTasks(dir, [{ scenario: "slow", args: { n: 3 } }]);
    const refused = await evalCli(["--tasks", other, "--resume", out], dir);
    assert.equal(refused.code, 2, refused.stderr);
    assert.equal(refused.stderr.trim().split("\n").length, 1, refused.stderr);
    assert.match(
      refused.stderr,
      /holds a result of another task \(task 0, slow \{"n":1\}, repeat 0\): resume with the same tasks and --repeat/,
    );
    const both = await evalCli(
      ["--tasks", tasks, "--resume", out, "--out", `${dir}/other.jsonl`],
      dir,
    );
    assert.equal(both.code, 2);
    assert.match(both.stderr, /^--resume adds to its own file/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--retries runs again a task whose environment died, never one that failed on its own", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-resume-" });
  try {
    const starts = `${dir}/starts.txt`;
    const env = (marker: string) => [
      "--env",
      `EVAL_FIXTURE_CRASH_ONCE=${dir}/${marker}`,
      "--env",
      `EVAL_FIXTURE_STARTS=${starts}`,
    ];
    const retried = await evalCli([
      "--scenario",
      "flaky",
      "--retries",
      "2",
      ...env("crashed-a"),
      "--out",
      `${dir}/retried.jsonl`,
    ], dir);
    assert.equal(retried.code, 0, retried.stderr);
    const [ok] = await readResults(`${dir}/retried.jsonl`);
    assert.equal(ok.reward, 1);
    assert.equal(ok.attempts, 2);

    const once = await evalCli([
      "--scenario",
      "flaky",
      ...env("crashed-b"),
      "--out",
      `${dir}/once.jsonl`,
    ], dir);
    assert.equal(once.code, 1, once.stderr);
    const [failed] = await readResults(`${dir}/once.jsonl`);
    assert.equal(failed.reward, null);
    assert.equal(failed.error_kind, "environment");
    assert.match(
      failed.error ?? "",
      /; its stderr ends: runs-env: out of memory \(on purpose, once\)$/,
    );
    assert.equal(failed.attempts, 1);

    await Deno.writeTextFile(starts, "");
    const broken = await evalCli([
      "--scenario",
      "broken",
      "--retries",
      "3",
      ...env("crashed-c"),
      "--out",
      `${dir}/broken.jsonl`,
    ], dir);
    assert.equal(broken.code, 1, broken.stderr);
    const [task] = await readResults(`${dir}/broken.jsonl`);
    assert.equal(task.error_kind, "task");
    assert.equal(task.attempts, 1, "a failure of the task is not retried");
    // The probe and the one run: no process started for a retry.
    assert.equal(
      (await Deno.readTextFile(starts)).trim().split("\n").length,
      2,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--repeat K runs every task K times and the summary gives pass@1, pass@K and the spread", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-resume-" });
  try {
    const tasks = await writeTasks(dir, [
      { scenario: "slow", args: { n: 10 } },
      { scenario: "slow", args: { n: 0 } },
    ]);
    const run = await evalCli([
      "--tasks",
      tasks,
      "--repeat",
      "3",
      "--concurrency",
      "3",
      "--out",
      `${dir}/results.jsonl`,
    ], dir);
    assert.equal(run.code, 0, run.stderr);
    const results = await readResults(`${dir}/results.jsonl`);
    assert.deepEqual(
      results.map((r) => `${r.task}.${r.repeat}`).sort(),
      ["0.0", "0.1", "0.2", "1.0", "1.1", "1.2"],
    );
    // Rewards 1, 1, 1, 0, 0, 0: mean 0.5, sd 0.548, 95% ci ±0.438;
    // task 0 always passes and task 1 never does: pass@1 = pass@3 = 0.5.
    assert.match(
      run.stdout,
      /^scenario +runs +mean reward +95% ci +std dev +pass@1 +pass@3 +errors/m,
    );
    assert.match(
      run.stdout,
      /^total +6 +0\.500 +±0\.438 +0\.548 +0\.500 +0\.500 +0 /m,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--resume with another --model is refused in one line: a results file is one model's", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-resume-" });
  try {
    const tasks = await writeTasks(dir, [
      { scenario: "slow", args: { n: 1 } },
      { scenario: "slow", args: { n: 2 } },
    ]);
    const out = `${dir}/results.jsonl`;
    const first = await evalCli(
      ["--tasks", tasks, "--out", out, "--model", "gpt-4o-mini"],
      dir,
    );
    assert.equal(first.code, 0, first.stderr);
    const results = await readResults(out);
    assert.deepEqual(results.map((r) => r.model), [
      "gpt-4o-mini",
      "gpt-4o-mini",
    ]);
    // The second task's result is gone: a resume would run it.
    await Deno.writeTextFile(out, JSON.stringify(results[0]) + "\n");
    const other = await evalCli(
      ["--tasks", tasks, "--resume", out, "--model", "gpt-4o"],
      dir,
    );
    assert.equal(other.code, 2, other.stderr);
    assert.equal(other.stderr.trim().split("\n").length, 1, other.stderr);
    assert.match(
      other.stderr,
      /holds results of the model "gpt-4o-mini": resume with --model gpt-4o-mini/,
    );
    assert.equal((await readResults(out)).length, 1, "the file is untouched");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

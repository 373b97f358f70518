/**
 * The runner's new command-line options: `--harness-token` and `--env` reach
 * a stdio environment's process, `--display` reaches its initialize hook,
 * and a bad `--display`, `--env`, `--convention` or `--tool-timeout` is one
 * line and exit 2.
 *
 * @module
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url).pathname;
const ENV = `${ROOT}tests/fixtures/eval_contract_env.ts`;

async function evalCli(args: string[], dir: string) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}eval/main.ts`, ENV, ...args],
    cwd: dir,
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr),
  };
}

Deno.test("--harness-token and --env reach the stdio environment, --display its initialize hook", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-cli-" });
  try {
    const run = await evalCli([
      "--tasks",
      await tasks(dir, ["harness", "display"]),
      "--harness-token",
      "tok-cli",
      "--env",
      "EVAL_FIXTURE_GREETING=hello=world",
      "--env",
      "UNUSED=1",
      "--display",
      "1024x640",
      "--out",
      `${dir}/results.jsonl`,
    ], dir);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /with gpt-4o-mini \(chat\)/);
    const [harness, display] = (await Deno.readTextFile(
      `${dir}/results.jsonl`,
    )).trim().split("\n").map((line) => JSON.parse(line)).sort((a, b) =>
      a.task - b.task
    );
    // The simulated agent called `setup` as the prompt says; the environment,
    // holding the token, refused it, so the secret never reached the answer.
    assert.equal(harness.reward, 1, harness.content);
    assert.deepEqual(JSON.parse(harness.content), {
      token: "tok-cli",
      greeting: "hello=world",
    });
    assert.deepEqual(JSON.parse(display.content), {
      display_width: 1024,
      display_height: 640,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a bad --display, --env, --convention or --tool-timeout is one line and exit 2", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-cli-" });
  try {
    const cases: [string[], RegExp][] = [
      [["--display", "big"], /^--display must be WIDTHxHEIGHT/],
      [["--env", "NOEQUALS"], /^--env must be KEY=VALUE, got "NOEQUALS"/],
      [["--convention", "grpc"], /^--convention: Unknown convention "grpc"/],
      [["--tool-timeout", "0"], /^--tool-timeout must be a positive integer/],
    ];
    for (const [args, message] of cases) {
      const run = await evalCli(args, dir);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, message);
      assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

async function tasks(dir: string, scenarios: string[]): Promise<string> {
  const file = `${dir}/tasks.jsonl`;
  await Deno.writeTextFile(
    file,
    scenarios.map((scenario) => JSON.stringify({ scenario })).join("\n"),
  );
  return file;
}

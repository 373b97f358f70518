/**
 * Isolation that holds: `deno task eval --concurrency 4` against one HTTP
 * process of an example scores every task exactly as over stdio (a process
 * per worker), and an HTTP environment that does not declare isolated runs
 * is refused in one line before any task runs.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { EvalResult } from "../eval/mod.ts";
import { startServerProcess } from "./_example_process.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const GAME = `${ROOT}examples/text_game/main.ts`;
const RUNS_ENV = `${ROOT}tests/fixtures/eval_runs_env.ts`;

async function evalCli(args: string[], dir: string) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}eval/main.ts`, ...args],
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

async function readResults(file: string): Promise<EvalResult[]> {
  return (await Deno.readTextFile(file)).trim().split("\n")
    .map((line) => JSON.parse(line) as EvalResult)
    .sort((a, b) => a.task - b.task || a.repeat - b.repeat);
}

/** What each task scored, with its scenario and arguments. */
function scores(results: EvalResult[]) {
  return results.map((r) => ({
    task: r.task,
    repeat: r.repeat,
    scenario: r.scenario,
    args: r.args,
    reward: r.reward,
    subscores: r.subscores,
    error: r.error,
  }));
}

Deno.test("the text game scores every task the same with --concurrency 4 against one HTTP process as over stdio", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-isolation-" });
  // Twelve games at once: the secret 7 is found (the simulated agent guesses
  // 7), the others not; a game shared between runs would mix them up.
  const targets = [7, 2, 7, 9, 7, 4, 7, 1, 7, 10, 7, 5];
  const tasks = `${dir}/tasks.jsonl`;
  await Deno.writeTextFile(
    tasks,
    targets.map((target) =>
      JSON.stringify({
        scenario: "guess",
        args: { target, max: 10, max_guesses: 3 },
      })
    ).join("\n"),
  );
  const server = await startServerProcess(Deno.execPath(), [
    "run",
    "-A",
    GAME,
    "http",
  ]);
  try {
    const stdio = await evalCli(
      [GAME, "--tasks", tasks, "--out", `${dir}/stdio.jsonl`],
      dir,
    );
    assert.equal(stdio.code, 0, stdio.stderr);
    const http = await evalCli([
      `${server.baseUrl}/mcp`,
      "--tasks",
      tasks,
      "--concurrency",
      "4",
      "--out",
      `${dir}/http.jsonl`,
    ], dir);
    assert.equal(http.code, 0, http.stderr);
    assert.match(http.stderr, /12 task\(s\) of text-game .*, 4 at a time/);
    const overStdio = scores(await readResults(`${dir}/stdio.jsonl`));
    const overHttp = scores(await readResults(`${dir}/http.jsonl`));
    assert.equal(overHttp.length, 12);
    assert.deepEqual(overHttp, overStdio);
    assert.deepEqual(
      overStdio.map((r) => r.reward === 1),
      targets.map((target) => target === 7),
    );
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("per-run state keeps concurrent runs of a fixture apart over HTTP, and stdio workers are processes of their own", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-isolation-" });
  const tasks = `${dir}/tasks.jsonl`;
  await Deno.writeTextFile(
    tasks,
    Array.from(
      { length: 8 },
      (_, n) => JSON.stringify({ scenario: "slow", args: { n: n + 1 } }),
    ).join("\n"),
  );
  const server = await startServerProcess(Deno.execPath(), [
    "run",
    "-A",
    RUNS_ENV,
    "http",
    "EVAL_FIXTURE_ISOLATION=true",
    "EVAL_FIXTURE_DELAY_MS=100",
  ]);
  try {
    const http = await evalCli([
      `${server.baseUrl}/mcp`,
      "--tasks",
      tasks,
      "--concurrency",
      "4",
      "--out",
      `${dir}/http.jsonl`,
    ], dir);
    assert.equal(http.code, 0, http.stderr);
    const stdio = await evalCli([
      RUNS_ENV,
      "--tasks",
      tasks,
      "--concurrency",
      "4",
      "--env",
      "EVAL_FIXTURE_DELAY_MS=100",
      "--out",
      `${dir}/stdio.jsonl`,
    ], dir);
    // No declaration is needed over stdio: each worker has its own process.
    assert.equal(stdio.code, 0, stdio.stderr);
    const expected = Array.from({ length: 8 }, (_, n) => (n + 1) / 10);
    assert.deepEqual(
      (await readResults(`${dir}/http.jsonl`)).map((r) => r.reward),
      expected,
    );
    assert.deepEqual(
      (await readResults(`${dir}/stdio.jsonl`)).map((r) => r.reward),
      expected,
    );
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--concurrency above 1 against an HTTP environment that does not isolate runs is one line and exit 2; --concurrency 1 runs", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-isolation-" });
  const cases: [string[], RegExp][] = [
    [
      [],
      /it does not say it isolates runs \(experimental capability "mcpkit\/runs"\)/,
    ],
    [["EVAL_FIXTURE_ISOLATION=false"], /it says its runs share state/],
  ];
  try {
    for (const entry of cases) {
      const [settings, reason] = entry;
      const server = await startServerProcess(Deno.execPath(), [
        "run",
        "-A",
        RUNS_ENV,
        "http",
        ...settings,
      ]);
      try {
        const url = `${server.baseUrl}/mcp`;
        const refused = await evalCli([
          url,
          "--scenario",
          "slow",
          "--args",
          '{"n": 3}',
          "--concurrency",
          "3",
          "--out",
          `${dir}/refused.jsonl`,
        ], dir);
        assert.equal(refused.code, 2, refused.stderr);
        assert.equal(
          refused.stderr.trim().split("\n").length,
          1,
          refused.stderr,
        );
        assert.match(
          refused.stderr,
          new RegExp(
            `^Cannot run 3 tasks at once against runs-env at ${url}: ` +
              reason.source +
              "; use --concurrency 1, or run it over stdio",
          ),
        );
        await assert.rejects(Deno.stat(`${dir}/refused.jsonl`));
        const one = await evalCli([
          url,
          "--scenario",
          "slow",
          "--args",
          '{"n": 3}',
          "--out",
          // A file per case: --out never adds to an existing one.
          `${dir}/one-${cases.indexOf(entry)}.jsonl`,
        ], dir);
        assert.equal(one.code, 0, one.stderr);
        assert.equal(
          (await readResults(`${dir}/one-${cases.indexOf(entry)}.jsonl`))[0]
            .reward,
          0.3,
        );
      } finally {
        await server.stop();
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const DESKTOP = `${ROOT}examples/desktop/main.ts`;
function onPath(binary: string): boolean {
  return (Deno.env.get("PATH") ?? "").split(":").some((dir) => {
    try {
      return Deno.statSync(`${dir}/${binary}`).isFile;
    } catch {
      return false;
    }
  });
}
const desktopMissing = [
  ...["Xvfb", "xdotool"].filter((binary) => !onPath(binary)),
  ...(Deno.env.get("CHROMIUM_PATH") ||
      ["chromium", "chromium-browser", "google-chrome"].some(onPath)
    ? []
    : ["chromium"]),
];
if (desktopMissing.length > 0) {
  console.log(
    `eval_isolation_test: the desktop case is skipped, missing ${
      desktopMissing.join(", ")
    }`,
  );
}

Deno.test({
  name:
    "the desktop example (one screen per process) over HTTP is refused with --concurrency 2, in one line",
  ignore: desktopMissing.length > 0,
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-isolation-" });
  const server = await startServerProcess(
    Deno.execPath(),
    ["run", "-A", DESKTOP, "http"],
    60_000,
  );
  try {
    const url = `${server.baseUrl}/mcp`;
    const refused = await evalCli([
      url,
      "--model",
      "operator",
      "--concurrency",
      "2",
      "--out",
      `${dir}/results.jsonl`,
    ], dir);
    assert.equal(refused.code, 2, refused.stderr);
    assert.equal(refused.stderr.trim().split("\n").length, 1, refused.stderr);
    assert.match(
      refused.stderr,
      new RegExp(
        `^Cannot run 2 tasks at once against desktop at ${url}: it (says its runs share state|does not say it isolates runs)`,
      ),
    );
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

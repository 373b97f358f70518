import assert from "node:assert/strict";
import {
  createResultsFile,
  latestPerRun,
  readResults,
  readResultsToResume,
} from "./results_file.ts";
import type { EvalResult } from "./result.ts";

Deno.test("createResultsFile() gives evals started at the same instant files of their own, and never opens an existing one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-results-" });
  const cwd = Deno.cwd();
  Deno.chdir(dir);
  try {
    const instant = new Date("2026-11-26T20:49:01.123Z");
    const names = await Promise.all(
      Array.from(
        { length: 8 },
        () => createResultsFile(undefined, () => instant),
      ),
    );
    assert.equal(new Set(names).size, 8);
    for (const name of names) {
      assert.match(
        name,
        /^eval-results\/2026-11-26T20-49-01Z-[0-9a-f]{8}\.jsonl$/,
      );
    }
    await Deno.writeTextFile("mine.jsonl", '{"task":0}\n');
    await assert.rejects(
      () => createResultsFile("mine.jsonl"),
      /^AlreadyExists: mine\.jsonl exists: --resume mine\.jsonl adds to it; --out takes a new file$/,
    );
    assert.equal(await Deno.readTextFile("mine.jsonl"), '{"task":0}\n');
  } finally {
    Deno.chdir(cwd);
    await Deno.remove(dir, { recursive: true });
  }
});

const line = (fields: Partial<EvalResult>) =>
  ({
    task: 0,
    repeat: 0,
    scenario: "s",
    args: {},
    reward: 1,
    steps: 1,
    ...fields,
  }) as EvalResult;

Deno.test("latestPerRun() keeps a run's newer line, and a scored line over a later one not scored", () => {
  const stopped = line({
    reward: null,
    error: "Stopped",
    error_kind: "stopped",
  });
  const redone = line({ reward: 0.5, cost_usd: 2 });
  const failed = line({
    task: 1,
    reward: null,
    error: "crash",
    error_kind: "environment",
    agent_acted: true,
  });
  const infra = { ...failed, agent_acted: false };
  assert.deepEqual(latestPerRun([stopped, failed, redone, infra]), [
    redone,
    failed,
  ]);
  const text = [stopped, redone].map((r) => JSON.stringify(r)).join("\n");
  assert.deepEqual(readResults(text).results, [redone]);
});

Deno.test("readResultsToResume() counts torn lines anywhere and refuses a line that is not a result", () => {
  const text = `${JSON.stringify(line({}))}\n{"task":1,"scen\n${
    JSON.stringify(line({ task: 2 }))
  }\n{"task":3`;
  const read = readResultsToResume(text, "r.jsonl");
  assert.deepEqual(read.lines.map((r) => r.task), [0, 2]);
  assert.equal(read.torn, 2);
  assert.equal(read.endsTorn, true);
  assert.throws(
    () =>
      readResultsToResume(`${JSON.stringify(line({}))}\nhello\n`, "r.jsonl"),
    /^SyntaxError: r\.jsonl line 2 is not an eval result: cannot resume$/,
  );
});

/**
 * Record and replay from the command line: a run of `examples/text_game`
 * recorded through a real gateway (the demo's, on loopback) replays with
 * the same rewards, a cost of $0 and no request reaching any gateway (the
 * recording gateway is stopped, and the `--gateway` given to the replay
 * counts every request it gets); replayed against an environment that
 * answers differently, the run is an error naming the step and the
 * difference, not a zero. The desktop half (skipped, saying so, without
 * Xvfb, xdotool or Chromium) replays a computer-use run over Gemini's
 * native route, screenshots in every request.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startDemo } from "../gateway/cli/demo.ts";
import { evalCli, readResultsFile, ROOT } from "./_eval_cli.ts";
import { missingDesktopPrograms } from "./_desktop.ts";

const desktopOk =
  missingDesktopPrograms("eval_replay_test (desktop replay)").length === 0;

/** A server on loopback that answers 503 to everything and counts it. */
function countingGateway() {
  let requests = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      requests++;
      await request.body?.cancel();
      return new Response("not a gateway", { status: 503 });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    requests: () => requests,
    close: () => server.shutdown(),
  };
}

async function writeTasks(dir: string, name: string, tasks: unknown[]) {
  const path = `${dir}/${name}`;
  await Deno.writeTextFile(
    path,
    tasks.map((task) => JSON.stringify(task)).join("\n") + "\n",
  );
  return path;
}

Deno.test({
  name:
    "a recorded text_game run replays with identical rewards, $0 and no request to a gateway",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-replay-" });
  const demo = await startDemo({ quiet: true, port: 0 });
  const counter = countingGateway();
  try {
    const recorded = await evalCli([
      `${ROOT}examples/text_game/main.ts`,
      "--tasks",
      `${ROOT}examples/text_game/tasks.jsonl`,
      "--gateway",
      demo.gateway.url,
      "--key",
      demo.callerKey,
      "--record",
      `${dir}/recording`,
      "--out",
      `${dir}/recorded.jsonl`,
    ], dir);
    assert.equal(recorded.code, 0, recorded.stderr);
    assert.match(recorded.stdout, /Model exchanges recorded in .*recording/);
    await demo.close();

    const before = await readResultsFile(`${dir}/recorded.jsonl`);
    assert.equal(before.length, 3);
    assert.ok(before.every((r) => r.cost_usd > 0 && !r.error));

    // The same tasks come from the recording; the gateway named is never asked.
    const replayed = await evalCli([
      `${ROOT}examples/text_game/main.ts`,
      "--replay",
      `${dir}/recording`,
      "--gateway",
      counter.url,
      "--out",
      `${dir}/replayed.jsonl`,
    ], dir);
    assert.equal(replayed.code, 0, replayed.stderr);
    assert.match(
      replayed.stdout,
      /Replayed from .*: no model was called, the cost is \$0/,
    );
    const after = await readResultsFile(`${dir}/replayed.jsonl`);
    assert.deepEqual(
      after.map((r) => [r.task, r.scenario, r.args, r.reward, r.steps]),
      before.map((r) => [r.task, r.scenario, r.args, r.reward, r.steps]),
    );
    assert.deepEqual(
      after.map((r) => r.trajectory!.steps.map((s) => s.text)),
      before.map((r) => r.trajectory!.steps.map((s) => s.text)),
    );
    for (const result of after) {
      assert.equal(result.cost_usd, 0);
      assert.ok(result.trajectory!.steps.every((s) => s.replayed === true));
      assert.ok(result.trajectory!.steps.every((s) => s.cost_usd === 0));
    }
    assert.equal(counter.requests(), 0);

    // Without --gateway, a replay starts no demo gateway either.
    const plain = await evalCli([
      `${ROOT}examples/text_game/main.ts`,
      "--replay",
      `${dir}/recording`,
      "--out",
      `${dir}/plain.jsonl`,
    ], dir);
    assert.equal(plain.code, 0, plain.stderr);
    assert.doesNotMatch(plain.stderr, /demo gateway/);
    assert.deepEqual(
      (await readResultsFile(`${dir}/plain.jsonl`)).map((r) => r.reward),
      before.map((r) => r.reward),
    );
  } finally {
    await demo.close().catch(() => {});
    await counter.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "a replay whose environment answers differently fails that run as an error naming the step and the difference",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-replay-" });
  try {
    const recorded = await evalCli([
      `${ROOT}examples/text_game/main.ts`,
      "--tasks",
      await writeTasks(dir, "seven.jsonl", [
        { scenario: "guess", args: { target: 7, max: 10, max_guesses: 4 } },
      ]),
      "--record",
      `${dir}/recording`,
      "--out",
      `${dir}/recorded.jsonl`,
    ], dir);
    assert.equal(recorded.code, 0, recorded.stderr);
    assert.equal((await readResultsFile(`${dir}/recorded.jsonl`))[0].reward, 1);

    // The same prompt, but the secret is 2: the agent's guess of 7 is now
    // "too high", so the request after it differs from the recorded one.
    const replayed = await evalCli([
      `${ROOT}examples/text_game/main.ts`,
      "--tasks",
      await writeTasks(dir, "two.jsonl", [
        { scenario: "guess", args: { target: 2, max: 10, max_guesses: 4 } },
      ]),
      "--replay",
      `${dir}/recording`,
      "--out",
      `${dir}/replayed.jsonl`,
    ], dir);
    assert.notEqual(replayed.code, 0);
    const [result] = await readResultsFile(`${dir}/replayed.jsonl`);
    assert.equal(result.reward, null);
    assert.equal(result.error_kind, "task");
    assert.match(
      result.error!,
      /^Replay diverged at step 3 \(recorded task 0 "guess"\): the request differs at body\.messages\[\d+\]\.content: recorded "Correct!.*", now "7 is too high.*"$/,
    );
    assert.match(replayed.stderr, /task 0: Replay diverged at step 3/);

    // A folder that holds no recording is one line and exit 2.
    const missing = await evalCli([
      `${ROOT}examples/text_game/main.ts`,
      "--replay",
      `${dir}/nowhere`,
    ], dir);
    assert.equal(missing.code, 2);
    assert.equal(
      missing.stderr.trim(),
      `--replay: ${dir}/nowhere holds no recording (no recording.json)`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "a recorded computer-use run of the desktop example, screenshots and all, replays with identical rewards and $0",
  ignore: !desktopOk,
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-replay-" });
  try {
    const common = [
      `${ROOT}examples/desktop/main.ts`,
      "--tasks",
      await writeTasks(dir, "tasks.jsonl", [
        { scenario: "fill_form", args: { word: "lantern" } },
      ]),
      "--model",
      "gemini-2.5-computer-use-preview",
    ];
    const recorded = await evalCli(
      [
        ...common,
        "--record",
        `${dir}/recording`,
        "--out",
        `${dir}/recorded.jsonl`,
      ],
      dir,
      240_000,
    );
    assert.equal(recorded.code, 0, recorded.stderr);
    const replayed = await evalCli(
      [
        ...common,
        "--replay",
        `${dir}/recording`,
        "--out",
        `${dir}/replayed.jsonl`,
      ],
      dir,
      240_000,
    );
    assert.equal(replayed.code, 0, replayed.stderr);
    const [before] = await readResultsFile(`${dir}/recorded.jsonl`);
    const [after] = await readResultsFile(`${dir}/replayed.jsonl`);
    assert.equal(before.reward, 1);
    assert.equal(after.reward, 1);
    assert.equal(after.steps, before.steps);
    assert.equal(after.cost_usd, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

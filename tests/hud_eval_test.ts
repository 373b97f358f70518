/**
 * One environment, two wires: `deno task eval` scores `examples/text_game`
 * identically over MCP (stdio) and over HUD v6's control channel
 * (`tcp://host:port`), offline (the demo gateway's simulated model). Also:
 * the control channel in a real process announces its port on stdout as
 * HUD's subprocess runtime expects, and SIGTERM still runs the shutdown
 * hooks and exits 0.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startHudServeProcess } from "./_example_process.ts";

const ROOT = new URL("../", import.meta.url);
const GAME = new URL("examples/text_game/main.ts", ROOT).pathname;
const TASKS = new URL("examples/text_game/tasks.jsonl", ROOT).pathname;
const EVAL = new URL("eval/main.ts", ROOT).pathname;

/** The text game serving the control channel on a free port. */
function startHudGame(env: Record<string, string> = {}) {
  return startHudServeProcess(GAME, "game", 20_000, env);
}

async function evaluate(target: string, out: string, extra: string[] = []) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", EVAL, target, "--tasks", TASKS, "--out", out, ...extra],
    env: { NO_COLOR: "1", GATEWAY_URL: "", GATEWAY_KEY: "" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, stderr);
  return (await Deno.readTextFile(out)).trim().split("\n").map((line) =>
    JSON.parse(line)
  );
}

Deno.test("deno task eval scores examples/text_game identically over MCP stdio and over the HUD v6 control channel, offline", async () => {
  const dir = await Deno.makeTempDir({ prefix: "hud-eval-" });
  const game = await startHudGame();
  try {
    const overMcp = await evaluate(GAME, `${dir}/mcp.jsonl`);
    const overHud = await evaluate(
      `tcp://127.0.0.1:${game.port}`,
      `${dir}/hud.jsonl`,
    );
    const scores = (results: Record<string, unknown>[]) =>
      results.map((
        {
          task,
          scenario,
          args,
          reward,
          done,
          subscores,
          content,
          error,
          steps,
        },
      ) => ({
        task,
        scenario,
        args,
        reward,
        done,
        subscores,
        content,
        error,
        steps,
      }));
    assert.equal(overHud.length, overMcp.length);
    assert.ok(overMcp.length >= 3, "the task file has tasks");
    assert.deepEqual(scores(overHud), scores(overMcp));
    assert.ok(
      overMcp.some((r) => r.reward === 1),
      "at least one task solved, so the scores say something",
    );
  } finally {
    const status = await game.stop();
    assert.equal(status.code, 0, game.stderr());
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("with MCP_HARNESS_TOKEN set, deno task eval --harness-token plays examples/text_game over HUD v6 (hello, tasks and tunnels carry the token) and scores as without one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "hud-eval-token-" });
  const token = `harness-${crypto.randomUUID()}`;
  const game = await startHudGame({ MCP_HARNESS_TOKEN: token });
  try {
    const results = await evaluate(
      `tcp://127.0.0.1:${game.port}`,
      `${dir}/hud.jsonl`,
      ["--harness-token", token],
    );
    assert.ok(results.length >= 3);
    assert.deepEqual(
      results.map((r) => r.error ?? null),
      results.map(() => null),
    );
    assert.ok(results.some((r) => r.reward === 1), "a task solved");
  } finally {
    const status = await game.stop();
    assert.equal(status.code, 0, game.stderr());
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("examples/text_game hud announces HUD_SERVE_PORT on stdout, and SIGTERM runs the shutdown hook and exits 0", async () => {
  const game = await startHudGame();
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: game.port });
  await conn.write(
    new TextEncoder().encode(
      '{"jsonrpc":"2.0","id":1,"method":"hello"}\n',
    ),
  );
  const buffer = new Uint8Array(4096);
  const n = await conn.read(buffer);
  const hello = JSON.parse(new TextDecoder().decode(buffer.subarray(0, n!)));
  assert.equal(hello.result.env.name, "text-game");
  conn.close();
  const status = await game.stop("SIGTERM");
  assert.equal(status.code, 0);
  assert.match(game.stderr(), /text-game: shutting down/);
  assert.equal(
    game.stdout().trim(),
    `HUD_SERVE_PORT=${game.port}`,
    "stdout carries only the announcement",
  );
});

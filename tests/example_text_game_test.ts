// The number-guessing example as a real subprocess, driven by the official
// SDK client: over stdio, over Streamable HTTP, and (when a local denort
// runtime is given in DENORT_BIN) as the binary `deno task compile:env` builds.
import assert from "node:assert/strict";
import { playByBisection } from "../examples/text_game/agent.ts";
import { startServerProcess } from "./_example_process.ts";
import {
  Client,
  StdioClientTransport,
  StreamableHTTPClientTransport,
} from "./_mcp_client.ts";

const MAIN = new URL("../examples/text_game/main.ts", import.meta.url).pathname;
const ROOT = new URL("..", import.meta.url).pathname;
const DEADLINE_MS = 30_000;
const DENORT_BIN = Deno.env.get("DENORT_BIN");

/** Starts a game through the setup hub, plays it, scores it through the evaluate hub. */
async function playToReward(
  client: Client,
  start: Record<string, unknown> | string,
): Promise<{ reward: number; done: boolean; guesses: number[] }> {
  const names = (await client.listTools()).tools.map((tool) => tool.name);
  assert.deepEqual(names.sort(), [
    "_hud_submit",
    "evaluate",
    "guess",
    "look",
    "setup",
  ]);
  const started = await client.callTool({
    name: "setup",
    arguments: { name: "start", arguments: start },
  });
  assert.equal(started.isError, undefined, JSON.stringify(started));
  const played = await playByBisection(client);
  assert.equal(played.solved, true, `Guesses: ${played.guesses.join(", ")}`);
  const scored = await client.callTool({
    name: "evaluate",
    arguments: { name: "solved" },
  });
  const { reward, done } = scored.structuredContent as {
    reward: number;
    done: boolean;
  };
  return { reward, done, guesses: played.guesses };
}

async function readStatus(client: Client): Promise<Record<string, unknown>> {
  const status = await client.readResource({ uri: "game://status" });
  return JSON.parse((status.contents[0] as { text: string }).text);
}

Deno.test("an SDK client plays the text game over stdio to a reward of 1", async () => {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: ["run", "-A", MAIN, "stdio"],
    stderr: "ignore",
  });
  const client = new Client({ name: "stdio-player", version: "1.0.0" });
  const timer = setTimeout(() => transport.close(), DEADLINE_MS);
  try {
    await client.connect(transport);
    const result = await playToReward(client, { seed: 2026, max: 100 });
    assert.deepEqual({ reward: result.reward, done: result.done }, {
      reward: 1,
      done: true,
    });
    assert.ok(result.guesses.length <= 7);
    const status = await readStatus(client);
    assert.equal((status.game as { solved: boolean }).solved, true);
    assert.equal(status.columns, 240, "1920 px default at 8 px per column");
  } finally {
    clearTimeout(timer);
    await client.close();
  }
});

Deno.test("SDK clients play the text game over Streamable HTTP; SIGTERM runs the shutdown hook and exits 0", async () => {
  const server = await startServerProcess(Deno.execPath(), [
    "run",
    "-A",
    MAIN,
    "http",
  ]);
  const url = new URL(`${server.baseUrl}/mcp`);
  const player = new Client({ name: "http-player", version: "1.0.0" });
  const grader = new Client({ name: "http-grader", version: "1.0.0" });
  const playerTransport = new StreamableHTTPClientTransport(url);
  const graderTransport = new StreamableHTTPClientTransport(url);
  try {
    await player.connect(playerTransport);
    // Hub arguments may arrive as a JSON string, as some agents send them.
    const result = await playToReward(
      player,
      JSON.stringify({ target: 58, max: 1000, max_guesses: 10 }),
    );
    assert.deepEqual({ reward: result.reward, done: result.done }, {
      reward: 1,
      done: true,
    });
    assert.equal(result.guesses.at(-1), 58);

    // A second session sees the same environment, as a grader would.
    await grader.connect(graderTransport);
    const efficiency = await grader.callTool({
      name: "evaluate",
      arguments: { name: "efficiency" },
    });
    const { reward } = efficiency.structuredContent as { reward: number };
    assert.equal(reward, (10 - result.guesses.length) / 9);
    assert.equal((await readStatus(grader)).gamesStarted, 1);

    await playerTransport.terminateSession();
    await graderTransport.terminateSession();
  } finally {
    await player.close();
    await grader.close();
    const status = await server.stop("SIGTERM");
    assert.equal(status.code, 0, server.stderr());
    assert.match(
      server.stderr(),
      /text-game: shutting down after 1 game\(s\); last game solved/,
    );
  }
});

Deno.test({
  name: DENORT_BIN
    ? "the compiled text game binary serves Streamable HTTP and exits 0 on SIGTERM"
    : "the compiled text game binary (skipped: set DENORT_BIN to a local denort, deno compile cannot download one here)",
  ignore: !DENORT_BIN,
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-compile-" });
  const binary = `${dir}/text-game`;
  try {
    // The same flags as `deno task compile:env`, with the output in a temp dir.
    const compiled = await new Deno.Command(Deno.execPath(), {
      args: [
        "compile",
        "-A",
        "--exclude-unused-npm",
        "--output",
        binary,
        MAIN,
      ],
      cwd: ROOT,
      env: { DENORT_BIN: DENORT_BIN! },
      stdin: "null",
      signal: AbortSignal.timeout(120_000),
    }).output();
    assert.equal(
      compiled.code,
      0,
      new TextDecoder().decode(compiled.stderr),
    );
    const server = await startServerProcess(binary, ["http"]);
    const client = new Client({ name: "binary-player", version: "1.0.0" });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp`)),
      );
      const result = await playToReward(client, { seed: 7 });
      assert.equal(result.reward, 1);
    } finally {
      await client.close();
      const status = await server.stop("SIGTERM");
      assert.equal(status.code, 0, server.stderr());
      assert.match(server.stderr(), /text-game: shutting down/);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

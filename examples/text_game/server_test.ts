import assert from "node:assert/strict";
import { initializeMessage } from "../../tests/_mcp_client.ts";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/inMemory"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { playByBisection } from "./agent.ts";
import { createTextGameServer } from "./server.ts";

async function connect(game = createTextGameServer()) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await game.mcp.createInstance().connect(serverSide);
  const client = new Client({ name: "text-game-test", version: "1.0.0" });
  await client.connect(clientSide);
  return { ...game, client };
}

function text(result: Record<string, unknown>): string {
  return (result.content as { text?: string }[]).map((item) => item.text)
    .join("\n");
}

Deno.test("the initialize hook reads display_width, reports progress and mounts the hubs", async () => {
  const { mcp, setup } = createTextGameServer();
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const received: JSONRPCMessage[] = [];
  const answered = Promise.withResolvers<void>();
  clientSide.onmessage = (message) => {
    received.push(message);
    if ("result" in message || "error" in message) answered.resolve();
  };
  await clientSide.start();
  await mcp.createInstance().connect(serverSide);
  try {
    await clientSide.send(
      initializeMessage(1, { progressToken: "init", display_width: 400 }),
    );
    await answered.promise;
    const progress = received
      .filter((m) => "method" in m && m.method === "notifications/progress")
      .map((m) =>
        (m as unknown as { params: { progress: number } }).params.progress
      );
    assert.deepEqual(progress, [0, 100]);
    assert.ok(received.some((m) => "result" in m), "initialize succeeded");
    assert.equal(setup.env.columns, 50, "400 px at 8 px per column");
    assert.deepEqual(mcp.hubs.map((hub) => hub.name), ["setup", "evaluate"]);
  } finally {
    await clientSide.close();
  }
});

Deno.test("the agent sees look and guess, not the setup and evaluate tools", async () => {
  const { client } = await connect();
  try {
    const names = (await client.listTools()).tools.map((tool) => tool.name)
      .sort();
    // `_hud_submit` is the scenario harness's (agents are not shown `_` tools).
    assert.deepEqual(names, [
      "_hud_submit",
      "evaluate",
      "guess",
      "look",
      "setup",
    ]);
    const functions = await client.readResource({ uri: "setup://functions" });
    const listed = JSON.parse(
      (functions.contents[0] as { text: string }).text,
    ) as { name: string }[];
    assert.deepEqual(listed.map((tool) => tool.name), ["start"]);
  } finally {
    await client.close();
  }
});

Deno.test("a game started with a target is solved by bisection for reward 1", async () => {
  const { client } = await connect();
  try {
    await client.callTool({
      name: "setup",
      arguments: { name: "start", arguments: { target: 73, max: 100 } },
    });
    const played = await playByBisection(client);
    assert.equal(played.solved, true);
    assert.equal(played.guesses.at(-1), 73);
    const scored = await client.callTool({
      name: "evaluate",
      arguments: { name: "solved" },
    });
    assert.deepEqual(scored.structuredContent, {
      reward: 1,
      done: true,
      info: { guesses: played.guesses.length, maxGuesses: 7 },
    });
    const efficiency = await client.callTool({
      name: "evaluate",
      arguments: { name: "efficiency", arguments: "{}" },
    });
    const reward = (efficiency.structuredContent as { reward: number }).reward;
    assert.equal(reward, (7 - played.guesses.length) / 6);
    const status = await client.readResource({ uri: "game://status" });
    const body = JSON.parse((status.contents[0] as { text: string }).text);
    assert.equal(body.game.solved, true);
    assert.equal(body.game.target, 73);
    assert.equal(body.gamesStarted, 1);
  } finally {
    await client.close();
  }
});

Deno.test("a game lost by running out of guesses scores 0 and reveals the secret", async () => {
  const { client } = await connect();
  try {
    await client.callTool({
      name: "setup",
      arguments: {
        name: "start",
        arguments: { target: 9, max: 10, max_guesses: 2 },
      },
    });
    await client.callTool({ name: "guess", arguments: { number: 1 } });
    await client.callTool({ name: "guess", arguments: { number: 2 } });
    assert.match(
      text(await client.callTool({ name: "look", arguments: {} })),
      /Out of guesses: the number was 9/,
    );
    const scored = await client.callTool({
      name: "evaluate",
      arguments: { name: "solved" },
    });
    assert.equal(
      (scored.structuredContent as { reward: number }).reward,
      0,
    );
  } finally {
    await client.close();
  }
});

Deno.test("tools answer isError before a game starts and for guesses out of range", async () => {
  const { client } = await connect();
  try {
    const early = await client.callTool({ name: "look", arguments: {} });
    assert.equal(early.isError, true);
    assert.match(text(early), /No game in play: call setup\/start first/);
    await client.callTool({
      name: "setup",
      arguments: { name: "start", arguments: { seed: 1, max: 10 } },
    });
    const outOfRange = await client.callTool({
      name: "guess",
      arguments: { number: 11 },
    });
    assert.equal(outOfRange.isError, true);
    assert.match(text(outOfRange), /Cannot guess "11"/);
    const unknown = await client.callTool({
      name: "setup",
      arguments: { name: "restart" },
    });
    assert.equal(unknown.isError, true);
    assert.match(text(unknown), /"start"/);
  } finally {
    await client.close();
  }
});

/** Runs of the `guess` scenario, each keyed by its `_meta.run_id`. */
function scenarioRun(client: Client, runId: string) {
  const meta = { run_id: runId };
  return {
    start: (args: Record<string, string>) =>
      client.getPrompt({
        name: "text-game:guess",
        arguments: args,
        _meta: meta,
      }),
    guess: async (number: number) =>
      text(
        await client.callTool({
          name: "guess",
          arguments: { number },
          _meta: meta,
        }),
      ),
    look: async () =>
      text(await client.callTool({ name: "look", arguments: {}, _meta: meta })),
    finish: async (answer: string) => {
      await client.callTool({
        name: "_hud_submit",
        arguments: { scenario: "guess", answer },
        _meta: meta,
      });
      const read = await client.readResource({
        uri: "text-game:guess",
        _meta: meta,
      });
      return JSON.parse((read.contents[0] as { text: string }).text) as {
        reward: number;
        subscores: { name: string; value: number }[];
        info: { target: number };
      };
    },
  };
}

Deno.test("two scenario runs on one connection play their own games, and a run's game goes with it", async () => {
  const { client, games } = await connect();
  try {
    const a = scenarioRun(client, "run-a");
    const b = scenarioRun(client, "run-b");
    await a.start({ target: "3", max: "10" });
    await b.start({ target: "8", max: "10" });
    assert.equal(games.size, 2);
    assert.match(await a.guess(3), /^Correct! The number is 3\./);
    assert.match(await b.guess(3), /^3 is too low/);
    assert.match(await b.look(), /between 4 and 10/);
    assert.match(await b.guess(8), /^Correct!/);
    assert.equal((await a.finish("It is 3")).reward, 1);
    assert.equal(games.size, 1, "the finished run's game is dropped");
    // Solved on the second of 7 guesses, and the answer names it.
    const reward = (await b.finish("8")).reward;
    assert.ok(
      Math.abs(reward - (0.6 + 0.2 * 6 / 7 + 0.2)) < 1e-12,
      `${reward}`,
    );
    assert.equal(games.size, 0);
    // Without a run, the tools play the hubs' game, which nobody started.
    const early = await client.callTool({ name: "look", arguments: {} });
    assert.match(text(early), /No game in play: call setup\/start first/);
  } finally {
    await client.close();
  }
});

Deno.test('the answer subscore needs the secret itself: "undefined" does not name it while the game runs', async () => {
  const { client } = await connect();
  try {
    const run = scenarioRun(client, "run-undefined");
    await run.start({ target: "5", max: "10" });
    assert.match(await run.guess(2), /too low/);
    const result = await run.finish("The number is undefined");
    assert.equal(
      result.subscores.find((s) => s.name === "answer")?.value,
      0,
    );
    assert.equal(result.reward, 0);
    assert.equal(result.info.target, 5);
  } finally {
    await client.close();
  }
});

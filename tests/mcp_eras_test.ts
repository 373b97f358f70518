/**
 * Real clients of both protocol eras against `examples/text_game` as a real
 * subprocess, over stdio and Streamable HTTP: the v1 SDK `Client` (legacy
 * handshake), and the v2 `Client` pinned to 2026-07-28 (modern, stateless)
 * and in `auto` mode (it probes with `server/discover` and lands modern).
 * Each plays a whole episode: hidden hubs, progress during setup, reward and
 * done, errors.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernHttpTransport,
} from "@modelcontextprotocol/client";
import { StdioClientTransport as ModernStdioTransport } from "@modelcontextprotocol/client/stdio";
import {
  Client as LegacyClient,
  StdioClientTransport as LegacyStdioTransport,
  StreamableHTTPClientTransport as LegacyHttpTransport,
} from "./_mcp_client.ts";
import { startServerProcess } from "./_example_process.ts";
import { playByBisection } from "../examples/text_game/agent.ts";

const MAIN = new URL("../examples/text_game/main.ts", import.meta.url)
  .pathname;
const CONFIG = new URL("../deno.json", import.meta.url).pathname;

/** What the episode needs from a client of either SDK. */
interface EpisodeClient {
  listTools(
    params?: Record<string, unknown>,
    options?: Record<string, unknown>,
  ): Promise<{ tools: { name: string }[] }>;
  callTool(
    params: { name: string; arguments?: Record<string, unknown> },
  ): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

function textOf(result: Record<string, unknown>): string {
  return (result.content as { text?: string }[]).map((item) => item.text ?? "")
    .join("\n");
}

/** Plays one episode and checks what an agent and a harness see. */
async function episode(client: EpisodeClient, progress: boolean) {
  const reported: { progress: number; message?: string }[] = [];
  const listed = await client.listTools(
    {},
    progress ? { onprogress: (p: never) => reported.push(p) } : {},
  );
  if (progress) {
    // The first modern request ran the initialize hook, with its progress.
    assert.deepEqual(reported.map((p) => p.progress), [0, 100]);
    assert.equal(reported.at(-1)?.message, "Ready");
  }
  assert.deepEqual(listed.tools.map((tool) => tool.name).sort(), [
    "_hud_submit",
    "evaluate",
    "guess",
    "look",
    "setup",
  ]);
  const unknown = await client.callTool({
    name: "setup",
    arguments: { name: "restart" },
  });
  assert.equal(unknown.isError, true);
  assert.match(textOf(unknown), /Unknown tool "restart" in hub "setup"/);

  await client.callTool({
    name: "setup",
    arguments: { name: "start", arguments: { target: 37, max: 100 } },
  });
  const outOfRange = await client.callTool({
    name: "guess",
    arguments: { number: 500 },
  });
  assert.equal(outOfRange.isError, true);
  const played = await playByBisection(client);
  assert.equal(played.solved, true);
  const scored = await client.callTool({
    name: "evaluate",
    arguments: { name: "solved" },
  });
  assert.equal((scored.structuredContent as { reward: number }).reward, 1);
  assert.equal((scored.structuredContent as { done: boolean }).done, true);
}

/** A v2 client: pinned to 2026-07-28, probing (`auto`), or the SDK's default legacy handshake (its fallback path). */
function modernClient(mode: "pin" | "auto" | "legacy") {
  if (mode === "legacy") {
    return new ModernClient({ name: "v2-legacy-test", version: "1.0.0" });
  }
  return new ModernClient({ name: "modern-test", version: "1.0.0" }, {
    versionNegotiation: {
      mode: mode === "pin" ? { pin: "2026-07-28" } : "auto",
    },
  });
}

const stdioArgs = ["run", "-A", "--config", CONFIG, MAIN, "stdio"];

Deno.test("over stdio, a legacy v1 client plays a whole episode", async () => {
  const client = new LegacyClient({ name: "legacy", version: "1.0.0" });
  await client.connect(
    new LegacyStdioTransport({
      command: Deno.execPath(),
      args: stdioArgs,
      stderr: "ignore",
    }),
  );
  try {
    await episode(client as unknown as EpisodeClient, false);
  } finally {
    await client.close();
  }
});

for (const mode of ["pin", "auto", "legacy"] as const) {
  const era = mode === "legacy" ? "legacy" : "modern";
  Deno.test(`over stdio, a v2 client (${mode}) lands on the ${era} era and plays a whole episode`, async () => {
    const client = modernClient(mode);
    await client.connect(
      new ModernStdioTransport({
        command: Deno.execPath(),
        args: stdioArgs,
        stderr: "ignore",
      }),
    );
    try {
      assert.equal(client.getProtocolEra(), era);
      await episode(client as unknown as EpisodeClient, era === "modern");
    } finally {
      await client.close();
    }
  });
}

Deno.test("over HTTP, legacy and modern clients play in turn on one server; setup ran once, with progress to the first", async () => {
  const server = await startServerProcess(Deno.execPath(), [
    "run",
    "-A",
    MAIN,
    "http",
  ]);
  const url = new URL(`${server.baseUrl}/mcp`);
  const pinned = modernClient("pin");
  const auto = modernClient("auto");
  const legacy = new LegacyClient({ name: "legacy", version: "1.0.0" });
  const v2Legacy = modernClient("legacy");
  try {
    await pinned.connect(new ModernHttpTransport(url));
    assert.equal(pinned.getProtocolEra(), "modern");
    // The first request runs the hook: progress goes to it.
    await episode(pinned as unknown as EpisodeClient, true);
    await auto.connect(new ModernHttpTransport(url));
    assert.equal(auto.getProtocolEra(), "modern");
    await legacy.connect(new LegacyHttpTransport(url));
    // One environment per process (a container): episodes take turns.
    await episode(auto as unknown as EpisodeClient, false);
    await episode(legacy as unknown as EpisodeClient, false);
    await v2Legacy.connect(new ModernHttpTransport(url));
    assert.equal(v2Legacy.getProtocolEra(), "legacy");
    await episode(v2Legacy as unknown as EpisodeClient, false);
    const status = await legacy.readResource({ uri: "game://status" });
    const body = JSON.parse((status.contents[0] as { text: string }).text);
    assert.equal(body.gamesStarted, 4, "one process, one environment");
  } finally {
    await Promise.all(
      [pinned, auto, legacy, v2Legacy].map((client) => client.close()),
    );
    assert.equal((await server.stop()).code, 0);
  }
});

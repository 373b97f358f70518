/**
 * The runner's own `computer` tool on a HUD environment's `rfb` screen is
 * held to the tool time limit like any tool: a VNC server that stops
 * answering (here a fake one that completes the handshake, then sends
 * nothing) fails the call as an environment error, instead of hanging the
 * run.
 *
 * @module
 */
import assert from "node:assert/strict";
import { MCPServer, rfbCapability } from "../mcp/mod.ts";
import { HudEnvironment } from "../eval/environments/hud_environment.ts";
import { EnvironmentError } from "../eval/environments/target.ts";

/** An RFB 3.8 server that shakes hands (None security, 64×48), then goes silent. */
function stallingVnc(options: { silentFromStart?: boolean } = {}) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  const serving = (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      if (options.silentFromStart) continue;
      (async () => {
        const buf = new Uint8Array(64);
        const write = (bytes: Uint8Array) => conn.write(bytes);
        await write(new TextEncoder().encode("RFB 003.008\n"));
        await conn.read(buf); // the client's version
        await write(new Uint8Array([1, 1])); // one type: None
        await conn.read(buf); // the chosen type
        await write(new Uint8Array([0, 0, 0, 0])); // SecurityResult OK
        await conn.read(buf); // ClientInit
        const init = new Uint8Array(24 + 4);
        const view = new DataView(init.buffer);
        view.setUint16(0, 64);
        view.setUint16(2, 48);
        init.set([32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0], 4);
        view.setUint32(20, 4);
        init.set(new TextEncoder().encode("fake"), 24);
        await write(init);
        // Reads what the client sends, answers nothing.
        while (await conn.read(buf) !== null) { /* silent */ }
      })().catch(() => {});
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    async close() {
      listener.close();
      for (const conn of conns) {
        try {
          conn.close();
        } catch { /* closed */ }
      }
      await serving;
    },
  };
}

async function hudWithScreen(vncPort: number) {
  const mcp = new MCPServer({ name: "stall-env" });
  mcp.addCapability(rfbCapability(`rfb://127.0.0.1:${vncPort}`));
  mcp.scenario({ name: "look" }, async function* () {
    yield "Take a screenshot.";
  });
  const abort = new AbortController();
  const port = Promise.withResolvers<number>();
  const log = console.log;
  console.log = () => {};
  const stopped = mcp.run({
    transport: "hud",
    port: 0,
    handleSignals: false,
    signal: abort.signal,
    onListen: (addr) => port.resolve(addr.port),
  });
  const controlPort = await port.promise;
  console.log = log;
  return {
    controlPort,
    async close() {
      abort.abort();
      await stopped;
    },
  };
}

/** The promise's outcome, or "hung" after `ms`. */
function within<T>(promise: Promise<T>, ms: number) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    ),
    new Promise<"hung">((resolve) => timer = setTimeout(resolve, ms, "hung")),
  ]).finally(() => clearTimeout(timer));
}

Deno.test("hud screen: a VNC server that stops answering fails the computer call within the tool time limit", async () => {
  const vnc = stallingVnc();
  const hud = await hudWithScreen(vnc.port);
  const env = await HudEnvironment.open(`tcp://127.0.0.1:${hud.controlPort}`, {
    toolTimeoutMs: 500,
  });
  try {
    const runId = crypto.randomUUID();
    await env.setup("look", {}, runId);
    const tools = await env.tools();
    assert.ok(tools.some((tool) => tool.name === "computer"));
    const call = within(
      env.callTool("computer", { action: "screenshot" }, undefined, runId),
      5_000,
    );
    const outcome = await call;
    if (outcome === "hung") throw new Error("the computer call hung");
    assert.ok("error" in outcome, "the call failed");
    assert.ok(outcome.error instanceof EnvironmentError);
    assert.match(
      (outcome.error as Error).message,
      /The tool "computer" did not answer within 0\.5 s/,
    );
  } finally {
    await env.close();
    await hud.close();
    await vnc.close();
  }
});

Deno.test("hud screen: a VNC server that never says hello fails the tool list within the tool time limit", async () => {
  const vnc = stallingVnc({ silentFromStart: true });
  const hud = await hudWithScreen(vnc.port);
  const env = await HudEnvironment.open(`tcp://127.0.0.1:${hud.controlPort}`, {
    toolTimeoutMs: 500,
  });
  try {
    const outcome = await within(env.tools(), 5_000);
    if (outcome === "hung") throw new Error("listing the tools hung");
    assert.ok("error" in outcome);
    assert.ok(outcome.error instanceof EnvironmentError);
    assert.match(
      (outcome.error as Error).message,
      /Cannot reach the screen "screen".*0\.5 s/,
    );
  } finally {
    await env.close();
    await hud.close();
    await vnc.close();
  }
});

/**
 * The runner on a HUD v6 environment that publishes a screen (`rfb`: a real
 * Xvfb served by x11vnc) and no `computer` tool of its own: the runner's
 * `HudEnvironment` offers the agent a `computer` tool it plays on that
 * screen itself, with our RFB client through the control port's tunnel.
 *
 * Skips, saying why, when Xvfb or x11vnc is missing.
 *
 * @module
 */
import assert from "node:assert/strict";
import { cdpCapability, MCPServer, rfbCapability } from "../mcp/mod.ts";
import { HudEnvironment } from "../eval/environments/hud_environment.ts";
import { pngSize, startXvfb } from "../tools/mod.ts";

function installed(program: string): boolean {
  try {
    return new Deno.Command("which", {
      args: [program],
      stdout: "null",
      stderr: "null",
    }).outputSync().success;
  } catch {
    return false;
  }
}

const missing = ["Xvfb", "x11vnc"].filter((program) => !installed(program));
if (missing.length > 0) {
  console.log(
    `hud_screen_test: skipped, ${
      missing.join(", ")
    } not installed (apt-get install xvfb x11vnc)`,
  );
}

async function listening(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

Deno.test({
  name:
    "hud screen: the runner gives the agent a computer tool on the environment's rfb screen and plays it through the tunnel",
  ignore: missing.length > 0,
}, async () => {
  const xvfb = await startXvfb({ width: 800, height: 600 });
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const vncPort = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const vnc = new Deno.Command("x11vnc", {
    args: [
      "-display",
      xvfb.display,
      "-rfbport",
      String(vncPort),
      "-localhost",
      "-forever",
      "-shared",
      "-nopw",
      "-quiet",
    ],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const mcp = new MCPServer({ name: "screen-env" });
  mcp.initialize(async () => {
    await listening(vncPort, 15_000);
    mcp.addCapability(
      rfbCapability(`rfb://127.0.0.1:${vncPort}`, { display: 0 }),
    );
    // A published capability whose daemon is gone is refused, not hung.
    mcp.addCapability(cdpCapability("http://127.0.0.1:1"));
  });
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
  const env = await HudEnvironment.open(`tcp://127.0.0.1:${controlPort}`, {
    display: { width: 400, height: 300 },
  });
  try {
    assert.deepEqual(env.bindings.map((b) => b.protocol), [
      "mcp/2025-11-25",
      "rfb/3.8",
      "cdp/1.3",
    ]);
    const runId = crypto.randomUUID();
    const setup = await env.setup("look", {}, runId);
    assert.deepEqual(setup.messages, [{
      role: "user",
      content: { type: "text", text: "Take a screenshot." },
    }]);
    const tools = await env.tools();
    const computer = tools.find((tool) => tool.name === "computer");
    assert.ok(computer, "the runner offers a computer tool");
    assert.equal((computer.inputSchema as { type?: string }).type, "object");

    const shot = await env.callTool(
      "computer",
      { action: "screenshot" },
      undefined,
      runId,
    );
    assert.equal(shot.isError, false, shot.text);
    assert.equal(shot.images.length, 1);
    const bytes = Uint8Array.from(
      atob(shot.images[0].data),
      (c) => c.charCodeAt(0),
    );
    assert.deepEqual(
      pngSize(bytes),
      { width: 400, height: 300 },
      "in the agent's size",
    );

    // zoom: a quarter-height strip of the screen, enlarged to the agent's width.
    const zoomed = await env.callTool(
      "computer",
      { action: "zoom", region: [0, 0, 200, 75] },
      undefined,
      runId,
    );
    assert.equal(zoomed.isError, false, zoomed.text);
    assert.deepEqual(
      pngSize(
        Uint8Array.from(atob(zoomed.images[0].data), (c) => c.charCodeAt(0)),
      ),
      { width: 400, height: 150 },
    );

    // A shift-click: the keys go down and up over the tunnel around it.
    const shiftClick = await env.callTool(
      "computer",
      {
        action: "click",
        x: 10,
        y: 10,
        hold_keys: ["shift"],
        screenshot: false,
      },
      undefined,
      runId,
    );
    assert.equal(shiftClick.isError, false, shiftClick.text);
    assert.match(shiftClick.text, /holding shift/);

    const moved = await env.callTool(
      "computer",
      { action: "move", x: 200, y: 150, screenshot: false },
      undefined,
      runId,
    );
    assert.equal(moved.isError, false, moved.text);
    const where = await env.callTool(
      "computer",
      { action: "cursor_position" },
      undefined,
      runId,
    );
    assert.match(where.text, /200\D+150/);
    const bad = await env.callTool(
      "computer",
      { action: "explode" },
      undefined,
      runId,
    );
    assert.equal(bad.isError, true);

    await env.submit("look", "done", runId);
    assert.deepEqual(await env.evaluate("look", runId), {
      reward: 1,
      done: true,
    });
  } finally {
    await env.close();
    abort.abort();
    await stopped;
    vnc.kill("SIGTERM");
    await vnc.status;
    await xvfb.close();
  }
});

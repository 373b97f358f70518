/**
 * The HUD v6 control port under a hostile client on loopback: frames that
 * parse to far more than their bytes, floods of idle connections, idle
 * sessions and tunnels, and a client without the harness token reaching
 * into the harness's live task through the `mcp` tunnel. The server is a
 * real subprocess where its memory is measured (`/proc/<pid>/status`),
 * in process elsewhere; clients speak the raw wire or use the official MCP
 * SDK through a tunnel.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  Client,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import { CapabilityForwarder } from "../mcp/hud/tunnel.ts";
import { startHudServeProcess } from "./_example_process.ts";
import { serveHudInProcess } from "./_hud_serve.ts";
import { Wire } from "./_hud_wire.ts";
import { createHudTrustEnv } from "./fixtures/hud_trust_env.ts";

const FIXTURE = new URL("./fixtures/hud_trust_env.ts", import.meta.url)
  .pathname;
const MIB = 1024 * 1024;
const FRAME = 16 * MIB;
const TOKEN = "harness-s3cret";

/** `/proc/<pid>/status`'s VmRSS and VmHWM, MiB. */
async function memoryOf(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const field = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1]) / 1024;
  return { rss: field("VmRSS"), peak: field("VmHWM") };
}

/**
 * A `hello` frame of exactly `size` bytes whose `params.x` is `fill`
 * repeated: `{},` parses to five million objects, `a` to one string.
 */
function helloFrame(size: number, fill: "{}," | "a"): Uint8Array {
  const head = fill === "a"
    ? '{"jsonrpc":"2.0","id":1,"method":"hello","params":{"x":"'
    : '{"jsonrpc":"2.0","id":1,"method":"hello","params":{"x":[';
  const tail = fill === "a" ? '"}}' : "{}]}}";
  const bytes = new Uint8Array(size + 1);
  const encoder = new TextEncoder();
  bytes.set(encoder.encode(head));
  const body = size - head.length - tail.length;
  const unit = encoder.encode(fill);
  const whole = body - (body % unit.length);
  for (let i = 0; i < whole; i += unit.length) bytes.set(unit, head.length + i);
  // What the units leave over is spaces, which JSON allows between values.
  bytes.fill(0x20, head.length + whole, head.length + body);
  bytes.set(encoder.encode(tail), head.length + body);
  bytes[size] = 0x0a;
  return bytes;
}

/** Resolves with the line, or "open" when none came within `ms`. */
async function lineWithin(wire: Wire, ms: number): Promise<string | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return await Promise.race([
    wire.line(),
    new Promise<string>((resolve) => timer = setTimeout(resolve, ms, "open")),
  ]).finally(() => clearTimeout(timer));
}

Deno.test("hud trust: twenty connections each sending a 16 MiB frame and idling leave the server under 500 MiB, and it still serves", async () => {
  const server = await startHudServeProcess(FIXTURE, "hud trust env", 30_000);
  const wires: Wire[] = [];
  try {
    const before = await memoryOf(server.pid);
    const objects = helloFrame(FRAME, "{},");
    const strings = helloFrame(FRAME, "a");
    for (let i = 0; i < 20; i++) wires.push(await Wire.open(server.port));
    const replies = await Promise.all(wires.map(async (wire, i) => {
      await wire.sendRaw(i % 2 === 0 ? objects : strings);
      return JSON.parse(await wire.line() ?? "null");
    }));
    for (const [i, reply] of replies.entries()) {
      if (i % 2 === 0) {
        assert.equal(reply.error.code, -32700, JSON.stringify(reply));
        assert.match(reply.error.message, /more than 100000 JSON values/);
      } else {
        assert.equal(reply.result.env.name, "hud-trust");
      }
    }
    // The twenty stay open and idle while the memory is read.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const after = await memoryOf(server.pid);
    console.log(
      `HUD server memory: ${before.rss.toFixed(0)} MiB at start, ${
        after.rss.toFixed(0)
      } MiB with 20 idle connections after 20 frames of 16 MiB (peak ${
        after.peak.toFixed(0)
      } MiB)`,
    );
    assert.ok(after.rss < 500, `RSS ${after.rss} MiB`);
    assert.ok(after.peak < 500, `peak RSS ${after.peak} MiB`);
    const fresh = await Wire.open(server.port);
    wires.push(fresh);
    assert.equal((await fresh.result("hello")).env.name, "hud-trust");
  } finally {
    for (const wire of wires) wire.close();
    await server.stop();
  }
});

Deno.test("hud trust: the harness gets in and plays a task while 512 idle connections are open", async () => {
  for (const limits of [{}, { maxPerPeer: 1024 }]) {
    await using env = await serveHudInProcess(createHudTrustEnv(TOKEN), limits);
    const idle: Wire[] = [];
    for (let i = 0; i < 512; i++) {
      const wire = await env.open();
      // Half say hello without the token, half never speak.
      if (i % 2 === 0) {
        await wire.sendRaw(
          '{"jsonrpc":"2.0","id":1,"method":"hello","params":{}}\n',
        );
      }
      idle.push(wire);
    }
    const harness = await env.open();
    const hello = await harness.result("hello", { harness_token: TOKEN });
    assert.equal(hello.env.name, "hud-trust", JSON.stringify(limits));
    await harness.result("tasks.start", {
      id: "guess",
      args: { target: 42 },
    });
    assert.equal(
      (await harness.result("tasks.grade", { answer: "42" })).score,
      1,
    );
    const late = await env.open();
    const refused = await late.call("hello", {});
    assert.match(refused.error.message, /Too many connections/);
    assert.equal((await idle[0].reply()).result.env.name, "hud-trust");
    assert.deepEqual(
      (await idle[0].call("tasks.list")).result.tasks.map((t: { id: string }) =>
        t.id
      ),
      ["guess"],
      "the first idle guest is still served",
    );
  }
});

Deno.test("hud trust: idle guests and token-less tunnels are closed after their idle limits; the harness's session and tunnels are kept", async () => {
  await using env = await serveHudInProcess(createHudTrustEnv(), {
    idleTimeoutMs: 300,
    tunnelIdleMs: 300,
    frameTimeoutMs: 200,
  });
  const guest = await env.open();
  await guest.result("hello");
  assert.equal(await lineWithin(guest, 5_000), null, "an idle guest is closed");
  const player = await env.open();
  await player.result("tasks.start", { id: "guess", args: { target: 5 } });
  // Three idle limits later, the session holding a task is still served.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  assert.equal((await player.result("tasks.grade", { answer: "5" })).score, 1);
  const tunnel = await env.open();
  await tunnel.result("tunnel.open", { capability: "mcp" });
  assert.equal(await lineWithin(tunnel, 5_000), null, "an idle tunnel closes");
});

Deno.test("hud trust: with a token, tunnel.open without it is refused; a knock past the caps without it is closed", async () => {
  await using env = await serveHudInProcess(createHudTrustEnv(TOKEN), {
    maxConnections: 1,
    maxKnocks: 1,
  });
  const first = await env.open();
  const tunnel = await first.call("tunnel.open", { capability: "mcp" });
  assert.match(tunnel.error.message, /harness_token/);
  const guest = await env.open();
  await guest.result("hello");
  const knock = await env.open();
  const refused = await knock.call("hello", {});
  assert.match(refused.error.message, /Too many connections/);
  const harness = await env.open();
  assert.equal(
    (await harness.result("hello", { harness_token: TOKEN })).env.name,
    "hud-trust",
  );
});

Deno.test("hud trust: a prompts/get inside the harness's live task through the mcp tunnel is refused, and the agent plays the harness's task", async () => {
  for (const token of [TOKEN, undefined]) {
    await using env = await serveHudInProcess(createHudTrustEnv(token));
    const harness = await env.open();
    await harness.result("hello", token ? { harness_token: token } : {});
    await harness.result("tasks.start", { id: "guess", args: { target: 42 } });
    // The runner's forwarder opens its tunnels with the token; any local
    // process (the agent's shell) can dial that loopback port.
    await using forwarder = {
      inner: CapabilityForwarder.start(
        { hostname: "127.0.0.1", port: env.port },
        "mcp",
        token,
      ),
      async [Symbol.asyncDispose]() {
        await this.inner.close();
      },
    };
    const attacker = new Client({ name: "attacker", version: "1" });
    await attacker.connect(
      new StreamableHTTPClientTransport(
        new URL(`http://127.0.0.1:${forwarder.inner.port}/mcp`),
      ),
    );
    try {
      await assert.rejects(
        attacker.getPrompt({
          name: "hud-trust:guess",
          arguments: { target: "7" },
        }),
        /only the evaluation harness|a task of the control channel/,
      );
      const guess = await attacker.callTool({
        name: "guess",
        arguments: { value: 42 },
      });
      assert.deepEqual(
        guess.content,
        [{ type: "text", text: "correct" }],
        "the agent plays the harness's target",
      );
    } finally {
      await attacker.close();
    }
    assert.equal(
      (await harness.result("tasks.grade", { answer: "42" })).score,
      1,
    );
  }
});

Deno.test("hud trust: a display size in hello is for the harness when a token is set, and an out-of-range one is refused in one line", async () => {
  await using env = await serveHudInProcess(createHudTrustEnv(TOKEN));
  const guest = await env.open();
  const refused = await guest.call("hello", {
    display_width: 640,
    display_height: 480,
  });
  assert.match(refused.error.message, /for the evaluation harness/);
  const harness = await env.open();
  const bad = await harness.call("hello", {
    harness_token: TOKEN,
    display_width: 99_999,
  });
  assert.equal(bad.error.code, -32602);
  assert.match(bad.error.message, /display_width 99999/);
  const good = await harness.call("hello", {
    harness_token: TOKEN,
    display_width: 1024,
    display_height: 640,
  });
  assert.equal(good.result.env.name, "hud-trust");
  const forwarder = CapabilityForwarder.start(
    { hostname: "127.0.0.1", port: env.port },
    "mcp",
    TOKEN,
  );
  const client = new Client({ name: "harness", version: "1" });
  try {
    await client.connect(
      new StreamableHTTPClientTransport(
        new URL(`http://127.0.0.1:${forwarder.port}/mcp`),
      ),
    );
    const size = await client.callTool({ name: "screen_size", arguments: {} });
    assert.deepEqual(size.content, [{ type: "text", text: "1024x640" }]);
  } finally {
    await client.close();
    await forwarder.close();
  }
});

/**
 * The HUD v6 control channel, driven by a client written from HUD's public
 * contract (`docs/v6/internals/control-channel.mdx`, `docs/v6/protocol.mdx`):
 * raw newline-delimited JSON-RPC over a TCP socket, no code of ours on the
 * client side. Every method, the 16 MiB frame limit, unknown methods, a
 * task started on one connection and graded on another, the ambiguity
 * error with two parked, sessions kept apart, the harness token, and the
 * `mcp` capability through `tunnel.open` (raw HTTP bytes, and the official
 * MCP SDK client through a loopback forwarder).
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  Client,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import { z } from "zod";
import { MCPServer } from "../mcp/mod.ts";
import { CapabilityForwarder } from "../mcp/hud/tunnel.ts";
import { startHud } from "../mcp/hud/serve.ts";
import { RunState } from "../mcp/scenarios/runs.ts";
import { serveHudInProcess } from "./_hud_serve.ts";
import { Wire } from "./_hud_wire.ts";

const LIMIT = 16 * 1024 * 1024;

/** An environment with per-run state, a tool that reads it, and a failing setup. */
function testServer(harnessToken?: string) {
  const mcp = new MCPServer({
    name: "hud-test",
    version: "1.2.3",
    harnessToken,
  });
  const secrets = new RunState<string>();
  let hooks = 0;
  mcp.initialize(() => {
    hooks++;
  });
  mcp.tool(
    { name: "reveal", description: "The run's secret." },
    (_args, extra) => secrets.require(extra),
  );
  mcp.scenario({
    name: "secret",
    description: "Answer with the secret.",
    input: {
      secret: z.string().describe("What to remember"),
      rounds: z.number().int().default(1),
    },
  }, async function* (args, ctx) {
    secrets.set(ctx, args.secret);
    try {
      const answer = yield `Remember ${args.secret} (${args.rounds} round)`;
      yield answer === args.secret
        ? 1
        : { reward: 0, done: true, content: `got ${answer}` };
    } finally {
      secrets.delete(ctx);
    }
  });
  // Setup fails before the prompt: the generator never yields.
  // deno-lint-ignore require-yield
  mcp.scenario({ name: "broken" }, async function* () {
    throw new Error("the world is missing");
  });
  mcp.scenario(
    { name: "filtered", excludeTools: ["reveal"] },
    async function* () {
      yield [{
        role: "user",
        content: { type: "text", text: "Do without reveal" },
      }];
    },
  );
  return { mcp, hooks: () => hooks };
}

async function serve(harnessToken?: string) {
  const env = testServer(harnessToken);
  return { ...env, ...await serveHudInProcess(env.mcp) };
}

Deno.test("hud channel: hello gives a session id, the environment's identity and its bindings, after the initialize hooks ran", async () => {
  await using env = await serve();
  assert.equal(env.hooks(), 1, "hooks run before the port is bound");
  const wire = await env.open();
  const hello = await wire.result("hello");
  assert.match(hello.session_id, /^sess-[0-9a-f]{32}$/);
  assert.deepEqual(hello.env, { name: "hud-test", version: "1.2.3" });
  assert.equal(hello.bindings.length, 1);
  assert.equal(hello.bindings[0].name, "tools");
  assert.equal(hello.bindings[0].protocol, "mcp/2025-11-25");
  assert.match(hello.bindings[0].url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  assert.deepEqual(hello.bindings[0].params, { transport: "streamable-http" });
  const other = await (await env.open()).result("hello");
  assert.notEqual(other.session_id, hello.session_id);
  assert.equal(env.hooks(), 1, "hooks run once per process");
});

Deno.test("hud channel: tasks.list gives each task's id, description and argument schema", async () => {
  await using env = await serve();
  const { tasks } = await (await env.open()).result("tasks.list");
  assert.deepEqual(tasks.map((t: { id: string }) => t.id), [
    "secret",
    "broken",
    "filtered",
  ]);
  const secret = tasks[0];
  assert.equal(secret.description, "Answer with the secret.");
  assert.equal(secret.args.type, "object");
  assert.equal(secret.args.properties.secret.type, "string");
  assert.equal(secret.args.properties.secret.description, "What to remember");
  assert.deepEqual(secret.args.required, ["secret"]);
  assert.equal(secret.args.additionalProperties, false);
});

Deno.test("hud channel: tasks.start returns the first yield as the prompt, tasks.grade the second with a numeric score; the task is then gone", async () => {
  await using env = await serve();
  const wire = await env.open();
  await wire.result("hello");
  const started = await wire.result("tasks.start", {
    id: "secret",
    args: { secret: "tulip", rounds: "2" },
  });
  assert.deepEqual(started, { prompt: "Remember tulip (2 round)" });
  assert.deepEqual(await wire.result("tasks.grade", { answer: "tulip" }), {
    score: 1,
    done: true,
  });
  const again = await wire.call("tasks.grade", { answer: "tulip" });
  assert.equal(again.error.code, -32600);
  assert.match(again.error.message, /no task in progress/i);
  await wire.result("tasks.start", { id: "secret", args: { secret: "rose" } });
  const wrong = await wire.result("tasks.grade", { answer: "tulip" });
  assert.deepEqual(wrong, { score: 0, done: true, content: "got tulip" });
  const filtered = await wire.result("tasks.start", { id: "filtered" });
  assert.deepEqual(filtered, {
    prompt: [{
      role: "user",
      content: { type: "text", text: "Do without reveal" },
    }],
    _meta: { exclude_tools: ["reveal"] },
  });
  assert.equal(
    (await wire.result("tasks.grade", { answer: "" })).score,
    1,
    "no second yield scores 1",
  );
});

Deno.test("hud channel: bad tasks.start calls get invalid-params or server errors, and the session goes on", async () => {
  await using env = await serve();
  const wire = await env.open();
  const cases: [unknown, number, RegExp][] = [
    [{ args: {} }, -32602, /id must be a string/],
    [{ id: "secret", args: [] }, -32602, /args must be an object/],
    [{ id: "nope" }, -32602, /Unknown task "nope"/],
    [{ id: "secret", args: {} }, -32602, /secret/],
    [
      { id: "broken" },
      -32000,
      /Setup of task "broken" failed: the world is missing/,
    ],
  ];
  for (const [params, code, message] of cases) {
    const reply = await wire.call("tasks.start", params);
    assert.equal(reply.error?.code, code, JSON.stringify(params));
    assert.match(reply.error.message, message);
  }
  assert.equal((await wire.result("tasks.list")).tasks.length, 3);
});

Deno.test("hud channel: tasks.cancel removes the task; bye cancels it, answers goodbye and closes", async () => {
  await using env = await serve();
  const wire = await env.open();
  await wire.result("tasks.start", { id: "secret", args: { secret: "a" } });
  assert.deepEqual(await wire.result("tasks.cancel"), { cancelled: true });
  assert.equal(
    (await wire.call("tasks.grade", { answer: "a" })).error.code,
    -32600,
  );
  assert.deepEqual(
    await wire.result("tasks.cancel"),
    { cancelled: true },
    "cancel with nothing held",
  );
  await wire.result("tasks.start", { id: "secret", args: { secret: "b" } });
  assert.deepEqual(await wire.result("bye"), { goodbye: true });
  assert.equal(await wire.line(), null, "bye closes the connection");
  const next = await env.open();
  assert.equal(
    (await next.call("tasks.grade", { answer: "b" })).error.code,
    -32600,
    "bye's task is gone",
  );
});

Deno.test("hud channel: unknown methods get -32601, malformed frames -32700 or -32600, notifications no reply", async () => {
  await using env = await serve();
  const wire = await env.open();
  const unknown = await wire.call("tasks.explode");
  assert.deepEqual(unknown.error, {
    code: -32601,
    message: "Method not found: tasks.explode",
  });
  await wire.sendRaw("{not json\n");
  const parse = await wire.reply();
  assert.equal(parse.id, null);
  assert.equal(parse.error.code, -32700);
  await wire.sendRaw('[1,2]\n{"jsonrpc":"2.0","id":9}\n');
  for (const id of [null, 9]) {
    const invalid = await wire.reply();
    assert.equal(invalid.id, id);
    assert.equal(invalid.error.code, -32600);
  }
  await wire.sendRaw('{"jsonrpc":"2.0","method":"hello"}\n');
  assert.equal(
    (await wire.call("hello")).result.env.name,
    "hud-test",
    "the notification got no reply",
  );
  const late = await wire.call("tunnel.open", { capability: "tools" });
  assert.equal(late.error.code, -32601, "tunnel.open is a preface only");
});

Deno.test("hud channel: a frame of exactly 16 MiB is read; one byte more gets the error with its size and the limit, then the connection closes", async () => {
  await using env = await serve();
  const wire = await env.open();
  const frame = (size: number) => {
    const head = '{"jsonrpc":"2.0","id":7,"method":"hello","params":{"pad":"';
    const tail = '"}}';
    return head + "x".repeat(size - head.length - tail.length) + tail;
  };
  const exact = frame(LIMIT);
  assert.equal(new TextEncoder().encode(exact).length, LIMIT);
  await wire.sendRaw(exact + "\n");
  const hello = await wire.reply();
  assert.equal(hello.id, 7);
  assert.equal(hello.result.env.name, "hud-test");
  await wire.sendRaw(frame(LIMIT + 1) + "\n");
  const over = await wire.reply();
  assert.equal(over.id, null);
  assert.equal(over.error.code, -32600);
  assert.equal(
    over.error.message,
    `Frame of ${LIMIT + 1} bytes exceeds the ${LIMIT}-byte limit`,
  );
  assert.deepEqual(over.error.data, { size: LIMIT + 1, limit: LIMIT });
  assert.equal(await wire.line(), null, "closed after the error");
  const first = await env.open();
  await first.sendRaw("y".repeat(LIMIT + 5) + "\n");
  assert.equal(
    (await first.reply()).error.data.size,
    LIMIT + 5,
    "an oversized preface too",
  );
  assert.equal(await first.line(), null);
});

Deno.test("hud channel: a task started on one connection is graded on another after a drop, resumed by session id", async () => {
  await using env = await serve();
  const a = await env.open();
  const { session_id } = await a.result("hello");
  await a.result("tasks.start", { id: "secret", args: { secret: "orchid" } });
  a.close();
  const b = await env.open();
  // The drop reaches the server a moment later: until then the session is live.
  let resumed;
  for (let i = 0; i < 100; i++) {
    resumed = await b.call("hello", { session_id });
    if (!resumed.error) break;
    assert.match(resumed.error.message, /has a live connection/);
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(resumed!.result.session_id, session_id);
  assert.deepEqual(await b.result("tasks.grade", { answer: "orchid" }), {
    score: 1,
    done: true,
  });
  const c = await env.open();
  const unknown = await c.call("hello", { session_id: "sess-nobody" });
  assert.equal(unknown.error.code, -32600);
  assert.match(unknown.error.message, /Unknown session "sess-nobody"/);
  const bad = await c.call("hello", { session_id: 42 });
  assert.equal(bad.error.code, -32602);
  const live = await c.call("hello", { session_id });
  assert.match(live.error.message, /has a live connection/);
});

async function parked(env: Awaited<ReturnType<typeof serve>>, secret: string) {
  const wire = await env.open();
  const { session_id } = await wire.result("hello");
  await wire.result("tasks.start", { id: "secret", args: { secret } });
  await wire.result("tasks.list"); // the start is answered and held
  wire.close();
  return session_id as string;
}

async function untilParked(wire: Wire, expected: RegExp) {
  for (let i = 0; i < 100; i++) {
    const reply = await wire.call("tasks.grade", { answer: "?" });
    if (reply.error && expected.test(reply.error.message)) return reply;
    assert.ok(reply.error, "graded before the sessions parked");
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("the sessions never parked");
}

Deno.test("hud channel: a plain tasks.grade adopts the one parked task; with two parked it names both and asks for a hello", async () => {
  await using env = await serve();
  const one = await parked(env, "lily");
  const grader = await env.open();
  let adopted;
  for (let i = 0; i < 100; i++) {
    adopted = await grader.call("tasks.grade", { answer: "lily" });
    if (!adopted.error) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.deepEqual(adopted!.result, { score: 1, done: true });
  assert.notEqual(one, undefined);

  const first = await parked(env, "fern");
  const second = await parked(env, "moss");
  const probe = await env.open();
  const ambiguous = await untilParked(probe, /2 parked sessions/);
  assert.equal(ambiguous.error.code, -32600);
  assert.ok(
    ambiguous.error.message.includes(first) &&
      ambiguous.error.message.includes(second),
  );
  assert.match(
    ambiguous.error.message,
    /resume one by sending hello with its session_id/,
  );
  const resumer = await env.open();
  assert.equal(
    (await resumer.result("hello", { session_id: second })).session_id,
    second,
  );
  assert.deepEqual(await resumer.result("tasks.grade", { answer: "moss" }), {
    score: 1,
    done: true,
  });
  assert.deepEqual(await probe.result("tasks.grade", { answer: "fern" }), {
    score: 1,
    done: true,
  }, "one left: adopted");
});

Deno.test("hud channel: concurrent sessions keep their tasks and state apart; each run's tools read its own state over the mcp capability", async () => {
  await using env = await serve();
  const sessions = await Promise.all(
    ["alpha", "beta", "gamma"].map(async (secret) => {
      const wire = await env.open();
      const { session_id } = await wire.result("hello");
      await wire.result("tasks.start", { id: "secret", args: { secret } });
      return { wire, session_id, secret };
    }),
  );
  await using forwarder = forwarderFor(env.port, "mcp");
  const client = new Client({ name: "hud-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(
      new URL(`http://127.0.0.1:${forwarder.port}/mcp`),
    ),
  );
  try {
    for (const { session_id, secret } of sessions) {
      const result = await client.callTool({
        name: "reveal",
        arguments: {},
        _meta: { run_id: session_id },
      });
      assert.deepEqual(result.content, [{ type: "text", text: secret }]);
    }
  } finally {
    await client.close();
  }
  const grades = await Promise.all(
    sessions.map(({ wire, secret }) =>
      wire.result("tasks.grade", { answer: secret })
    ),
  );
  assert.deepEqual(grades.map((g) => g.score), [1, 1, 1]);
});

function forwarderFor(port: number, capability: string) {
  const forwarder = CapabilityForwarder.start(
    { hostname: "127.0.0.1", port },
    capability,
  );
  return {
    port: forwarder.port,
    [Symbol.asyncDispose]: () => forwarder.close(),
  };
}

Deno.test("hud channel: tunnel.open to the mcp capability carries raw HTTP bytes to the server's own Streamable HTTP endpoint", async () => {
  await using env = await serve();
  const wire = await env.open();
  await wire.sendRaw(
    JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tunnel.open",
      params: { capability: "tools" },
    }) + "\n",
  );
  assert.deepEqual(await wire.reply(), {
    jsonrpc: "2.0",
    id: 1,
    result: { capability: "tools" },
  });
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "raw", version: "1" },
    },
  });
  await wire.sendRaw(
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
  );
  let response = "";
  for (let line = await wire.line(); line !== null; line = await wire.line()) {
    response += line + "\n";
  }
  assert.match(response, /^HTTP\/1\.1 200/);
  assert.match(
    response,
    /"serverInfo":\{"name":"hud-test","version":"1.2.3"\}/,
  );
  const dev = await env.open();
  await dev.sendRaw(
    JSON.stringify({
      jsonrpc: "2.0",
      id: 2,
      method: "tunnel.open",
      params: { capability: "mcp" },
    }) + "\n",
  );
  assert.equal(
    (await dev.reply()).result.capability,
    "tools",
    "the protocol family names the one mcp binding",
  );
  await dev.sendRaw(
    "GET /dev/tools HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
  );
  assert.match(
    (await dev.line())!,
    /^HTTP\/1\.1 404/,
    "no dev endpoints behind the tunnel",
  );
});

Deno.test("hud channel: tunnel.open to an unknown capability or without a name is refused", async () => {
  await using env = await serve();
  const unknown = await env.open();
  await unknown.sendRaw(
    '{"jsonrpc":"2.0","id":1,"method":"tunnel.open","params":{"capability":"screen"}}\n',
  );
  const refused = await unknown.reply();
  assert.equal(refused.error.code, -32000);
  assert.match(
    refused.error.message,
    /Unknown capability "screen": the environment offers tools/,
  );
  const unnamed = await env.open();
  await unnamed.sendRaw(
    '{"jsonrpc":"2.0","id":1,"method":"tunnel.open","params":{}}\n',
  );
  assert.equal((await unnamed.reply()).error.code, -32602);
});

Deno.test("hud channel: the official MCP SDK client lists and calls the server's tools through tunnel.open", async () => {
  await using env = await serve();
  await using forwarder = forwarderFor(env.port, "tools");
  for (const mode of ["auto", "legacy"] as const) {
    const client = new Client({ name: "sdk", version: "1.0.0" }, {
      versionNegotiation: { mode },
    });
    await client.connect(
      new StreamableHTTPClientTransport(
        new URL(`http://127.0.0.1:${forwarder.port}/mcp`),
      ),
    );
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes("reveal"), names.join(","));
      const result = await client.callTool({ name: "reveal", arguments: {} });
      assert.equal(result.isError, true, "no run: the tool says so");
    } finally {
      await client.close();
    }
  }
});

Deno.test("hud channel: with a harness token, task methods answer only a session whose hello carried it", async () => {
  await using env = await serve("s3cret");
  const agent = await env.open();
  await agent.result("hello");
  const refused = await agent.call("tasks.start", {
    id: "secret",
    args: { secret: "x" },
  });
  assert.equal(refused.error.code, -32600);
  assert.match(refused.error.message, /harness_token/);
  assert.equal(
    (await agent.call("tasks.grade", { answer: "x" })).error.code,
    -32600,
  );
  const harness = await env.open();
  await harness.result("hello", { harness_token: "s3cret" });
  await harness.result("tasks.start", { id: "secret", args: { secret: "x" } });
  assert.equal((await harness.result("tasks.grade", { answer: "x" })).score, 1);
});

Deno.test("hud channel: a connection that sends no first frame within the preface time-out is closed", async () => {
  const mcp = new MCPServer({ name: "quiet" });
  const listening = Promise.withResolvers<number>();
  const log = console.log;
  console.log = () => {};
  const running = await startHud(mcp, {
    tasks: () => new Map(),
    bindings: () => [],
    initialize: () => Promise.resolve(),
  }, {
    port: 0,
    host: "127.0.0.1",
    prefaceTimeoutMs: 200,
    onListen: (addr) => listening.resolve(addr.port),
  });
  console.log = log;
  const port = await listening.promise;
  const silent = await Wire.open(port);
  let talker: Wire | undefined;
  try {
    const started = Date.now();
    assert.equal(await silent.line(), null, "closed");
    assert.ok(Date.now() - started < 5_000);
    talker = await Wire.open(port);
    assert.equal(
      (await talker.result("hello")).env.name,
      "quiet",
      "a speaking one is served",
    );
  } finally {
    silent.close();
    talker?.close();
    await running.close();
  }
});

Deno.test("hud channel: a tool call without _meta.run_id reaches the one held task's state (HUD's harness sends none); with two held it reaches none", async () => {
  await using env = await serve();
  await using forwarder = forwarderFor(env.port, "tools");
  const client = new Client({ name: "hud-harness", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(
      new URL(`http://127.0.0.1:${forwarder.port}/mcp`),
    ),
  );
  try {
    const first = await env.open();
    await first.result("tasks.start", {
      id: "secret",
      args: { secret: "ivy" },
    });
    const alone = await client.callTool({ name: "reveal", arguments: {} });
    assert.deepEqual(alone.content, [{ type: "text", text: "ivy" }]);
    const second = await env.open();
    await second.result("tasks.start", {
      id: "secret",
      args: { secret: "oak" },
    });
    const ambiguous = await client.callTool({ name: "reveal", arguments: {} });
    assert.equal(ambiguous.isError, true, "two tasks: no run is guessed");
  } finally {
    await client.close();
  }
});

Deno.test("hud channel: a session that leaves a frame unfinished is closed after the frame time-out; an idle one is kept", async () => {
  const mcp = new MCPServer({ name: "loris" });
  const listening = Promise.withResolvers<number>();
  const log = console.log;
  console.log = () => {};
  const running = await startHud(mcp, {
    tasks: () => new Map(),
    bindings: () => [],
    initialize: () => Promise.resolve(),
  }, {
    port: 0,
    host: "127.0.0.1",
    frameTimeoutMs: 200,
    onListen: (addr) => listening.resolve(addr.port),
  });
  console.log = log;
  const port = await listening.promise;
  const loris = await Wire.open(port);
  const idle = await Wire.open(port);
  try {
    await loris.result("hello");
    await idle.result("hello");
    await loris.sendRaw('{"jsonrpc":"2.0","id":9,"method":"tasks.li');
    let timer: ReturnType<typeof setTimeout> | undefined;
    const closed = await Promise.race([
      loris.line(),
      new Promise<"open">((resolve) =>
        timer = setTimeout(resolve, 5_000, "open")
      ),
    ]).finally(() => clearTimeout(timer));
    assert.equal(closed, null, "the part frame's connection is closed");
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.deepEqual(
      (await idle.result("tasks.list")).tasks,
      [],
      "an idle session is served after three periods",
    );
  } finally {
    loris.close();
    idle.close();
    await running.close();
  }
});

Deno.test("hud channel: the mcp capability's endpoint refuses requests a browser page sends (an Origin header), even from a loopback page", async () => {
  await using env = await serve();
  const hello = await (await env.open()).result("hello");
  const url = hello.bindings[0].url as string;
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "page", version: "1" },
    },
  });
  const post = (headers: Record<string, string>) =>
    fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...headers,
      },
      body,
    });
  // A page the agent opened in the environment's own browser (e.g. the
  // task's page on loopback) could otherwise call every tool, those the
  // scenario left out included.
  for (const origin of ["http://127.0.0.1:8080", "http://localhost", "null"]) {
    const page = await post({ origin });
    assert.equal(page.status, 403, origin);
    assert.match(await page.text(), /browser/);
  }
  const harness = await post({});
  assert.equal(harness.status, 200);
  await harness.body?.cancel();
});

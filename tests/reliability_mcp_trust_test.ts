/**
 * What `MCPServer` enforces itself, for a client that reaches it without
 * the runner: a tool the run's scenario left out is refused over
 * Streamable HTTP, stdio and the HUD control channel's `mcp` capability
 * (official SDK clients, real servers and subprocesses), and a loopback
 * page of another origin gets 403 and no CORS header whether or not
 * `refuseBrowsers` is set.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  Client,
  StdioClientTransport,
  StreamableHTTPClientTransport,
} from "./_mcp_client.ts";
import { CapabilityForwarder } from "../mcp/hud/tunnel.ts";
import { Wire } from "./_hud_wire.ts";
import { createHudTrustEnv } from "./fixtures/hud_trust_env.ts";

const FIXTURE = new URL("./fixtures/hud_trust_env.ts", import.meta.url)
  .pathname;

/** Serves the fixture on loopback over `transport`; its port. */
async function serve(transport: "http" | "hud") {
  const mcp = createHudTrustEnv();
  const listening = Promise.withResolvers<number>();
  const stopped = new AbortController();
  const log = console.log;
  console.log = () => {}; // HUD's port line
  const running = mcp.run({
    transport,
    port: 0,
    handleSignals: false,
    signal: stopped.signal,
    onListen: (addr) => listening.resolve(addr.port),
  });
  const port = await listening.promise;
  console.log = log;
  return {
    port,
    [Symbol.asyncDispose]: async () => {
      stopped.abort();
      await running;
    },
  };
}

function text(result: Record<string, unknown>): string {
  return ((result.content ?? []) as { text?: string }[]).map((c) => c.text)
    .join("");
}

Deno.test("a tool the run's scenario left out is refused by the server over Streamable HTTP; other runs and tools are served", async () => {
  await using server = await serve("http");
  const client = new Client({ name: "direct", version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(
      new URL(`http://127.0.0.1:${server.port}/mcp`),
    ),
  );
  try {
    await client.getPrompt({
      name: "hud-trust:guess",
      arguments: { target: "42" },
      _meta: { run_id: "r1" },
    });
    const peek = await client.callTool({
      name: "peek",
      arguments: {},
      _meta: { run_id: "r1" },
    });
    assert.equal(peek.isError, true);
    assert.match(
      text(peek),
      /"peek" is left out of this run by scenario "guess"/,
    );
    const guess = await client.callTool({
      name: "guess",
      arguments: { value: 42 },
      _meta: { run_id: "r1" },
    });
    assert.equal(text(guess), "correct");
    // Once the run is evaluated, its filters go with it.
    await client.readResource({
      uri: "hud-trust:guess",
      _meta: { run_id: "r1" },
    });
    const after = await client.callTool({
      name: "peek",
      arguments: {},
      _meta: { run_id: "r1" },
    });
    assert.doesNotMatch(text(after), /left out/);
  } finally {
    await client.close();
  }
});

Deno.test("a tool the run's scenario left out is refused by the server over stdio", async () => {
  const client = new Client({ name: "direct", version: "1" });
  await client.connect(
    new StdioClientTransport({
      command: Deno.execPath(),
      args: ["run", "-A", FIXTURE],
      stderr: "ignore",
    }),
  );
  try {
    await client.getPrompt({
      name: "hud-trust:guess",
      arguments: { target: "42" },
    });
    const peek = await client.callTool({ name: "peek", arguments: {} });
    assert.equal(peek.isError, true);
    assert.match(text(peek), /left out of this run/);
    assert.equal(
      text(await client.callTool({ name: "guess", arguments: { value: 42 } })),
      "correct",
    );
  } finally {
    await client.close();
  }
});

Deno.test("a tool the task left out is refused over the HUD control channel's mcp capability", async () => {
  await using server = await serve("hud");
  const harness = await Wire.open(server.port);
  const forwarder = CapabilityForwarder.start(
    { hostname: "127.0.0.1", port: server.port },
    "mcp",
  );
  const client = new Client({ name: "direct", version: "1" });
  try {
    await harness.result("tasks.start", { id: "guess", args: { target: 9 } });
    await client.connect(
      new StreamableHTTPClientTransport(
        new URL(`http://127.0.0.1:${forwarder.port}/mcp`),
      ),
    );
    const peek = await client.callTool({ name: "peek", arguments: {} });
    assert.equal(peek.isError, true);
    assert.match(text(peek), /left out of this run by scenario "guess"/);
    assert.equal(
      text(await client.callTool({ name: "guess", arguments: { value: 9 } })),
      "correct",
    );
    assert.equal(
      (await harness.result("tasks.grade", { answer: "9" })).score,
      1,
    );
  } finally {
    await client.close();
    await forwarder.close();
    harness.close();
  }
});

Deno.test("a loopback page of another origin gets 403 and no Access-Control-Allow-Origin from a plain HTTP server", async () => {
  await using server = await serve("http");
  const url = `http://127.0.0.1:${server.port}/mcp`;
  const preflight = await fetch(url, {
    method: "OPTIONS",
    headers: {
      origin: "http://127.0.0.1:9000",
      "access-control-request-method": "POST",
      "access-control-request-headers": "content-type",
    },
  });
  assert.equal(preflight.status, 403);
  assert.equal(preflight.headers.get("access-control-allow-origin"), null);
  await preflight.body?.cancel();
  const call = await fetch(url, {
    method: "POST",
    headers: {
      origin: "http://localhost:9000",
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "peek", arguments: {} },
    }),
  });
  assert.equal(call.status, 403);
  assert.equal(call.headers.get("access-control-allow-origin"), null);
  await call.body?.cancel();
});

Deno.test("idle legacy /sse streams are closed after the session idle time, so a full table takes new clients again", async () => {
  const mcp = createHudTrustEnv();
  const listening = Promise.withResolvers<number>();
  const stopped = new AbortController();
  const running = mcp.run({
    transport: "sse",
    port: 0,
    handleSignals: false,
    signal: stopped.signal,
    sessionIdleMs: 300,
    maxSessions: 4,
    onListen: (addr) => listening.resolve(addr.port),
  });
  const url = `http://127.0.0.1:${await listening.promise}/sse`;
  const streams: Response[] = [];
  try {
    for (let i = 0; i < 4; i++) {
      const stream = await fetch(url);
      assert.equal(stream.status, 200);
      streams.push(stream);
    }
    const refused = await fetch(url);
    assert.equal(refused.status, 503, "the table is full");
    await refused.body?.cancel();
    // The sweep runs every second; the four idle streams go at the next
    // (a stream still open after 10 s fails the test rather than hang it).
    const readers = streams.map((stream) => stream.body!.getReader());
    let cancelled = false;
    const deadline = setTimeout(() => {
      cancelled = true;
      for (const reader of readers) reader.cancel().catch(() => {});
    }, 10_000);
    const ended = await Promise.all(
      readers.map(async (reader) => {
        try {
          while (!(await reader.read()).done) { /* events until the close */ }
          return !cancelled;
        } catch {
          return false;
        }
      }),
    ).finally(() => clearTimeout(deadline));
    assert.deepEqual(ended, [true, true, true, true]);
    const admitted = await fetch(url);
    assert.equal(admitted.status, 200, "a new client gets in");
    await admitted.body?.cancel();
  } finally {
    stopped.abort();
    await running;
  }
});

Deno.test("an environment started with MCP_HARNESS_TOKEN takes it out of its /proc/<pid>/environ and keeps enforcing it", async () => {
  const token = `harness-${crypto.randomUUID()}`;
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: ["run", "-A", FIXTURE],
    env: { MCP_HARNESS_TOKEN: token, PATH: Deno.env.get("PATH") ?? "" },
    stderr: "ignore",
  });
  const client = new Client({ name: "harness", version: "1" });
  await client.connect(transport);
  try {
    const pid = transport.pid;
    assert.ok(pid, "the environment's pid");
    const environ = await Deno.readTextFile(`/proc/${pid}/environ`);
    assert.ok(environ.length > 0, "the environment block is readable");
    assert.ok(
      !environ.includes(token),
      "the token is not in /proc/<pid>/environ",
    );
    await assert.rejects(
      client.getPrompt({ name: "hud-trust:guess", arguments: { target: "3" } }),
      /only the evaluation harness/,
    );
    const prompt = await client.getPrompt({
      name: "hud-trust:guess",
      arguments: { target: "3" },
      _meta: { harness_token: token },
    });
    assert.ok(prompt.messages.length > 0);
  } finally {
    await client.close();
  }
});

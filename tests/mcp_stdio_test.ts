// The counter fixture as a real subprocess over stdio: raw JSON-RPC, the
// SDK's StdioClientTransport, and process signals.
import assert from "node:assert/strict";
import {
  Client,
  initializeMessage,
  StdioClientTransport,
  StreamableHTTPClientTransport,
} from "./_mcp_client.ts";

const FIXTURE =
  new URL("./fixtures/mcp_counter_server.ts", import.meta.url).pathname;
const DEADLINE_MS = 20_000;

interface Fixture {
  child: Deno.ChildProcess;
  send(message: unknown): Promise<void>;
  /** The next stdout line, parsed; fails if it is not JSON-RPC. */
  next(): Promise<Record<string, unknown>>;
  /** Closes stdin and waits for the exit status; stdout lines left are returned. */
  end(): Promise<{ status: Deno.CommandStatus; stderr: string }>;
  kill(
    signal: Deno.Signal,
  ): Promise<{ status: Deno.CommandStatus; stderr: string }>;
  dispose(): Promise<void>;
}

function startFixture(env: Record<string, string> = {}): Fixture {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), DEADLINE_MS);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", FIXTURE, "stdio"],
    env,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    signal: abort.signal,
  }).spawn();
  const writer = child.stdin.getWriter();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const stderr = new Response(child.stderr).text();
  let buffered = "";
  let stdinClosed = false;
  const finish = async () => {
    const status = await child.status;
    clearTimeout(timer);
    await lines.cancel().catch(() => {});
    return { status, stderr: await stderr };
  };
  return {
    child,
    send: (message) =>
      writer.write(new TextEncoder().encode(JSON.stringify(message) + "\n")),
    async next() {
      while (!buffered.includes("\n")) {
        const { value, done } = await lines.read();
        if (done) throw new Error(`Stdout ended; partial output "${buffered}"`);
        buffered += value;
      }
      const index = buffered.indexOf("\n");
      const line = buffered.slice(0, index);
      buffered = buffered.slice(index + 1);
      const parsed = JSON.parse(line);
      assert.equal(
        parsed.jsonrpc,
        "2.0",
        `Stdout line is not JSON-RPC: ${line}`,
      );
      return parsed;
    },
    async end() {
      stdinClosed = true;
      await writer.close();
      return await finish();
    },
    async kill(signal) {
      child.kill(signal);
      return await finish();
    },
    async dispose() {
      clearTimeout(timer);
      try {
        child.kill("SIGKILL");
      } catch {
        // already exited
      }
      if (!stdinClosed) await writer.close().catch(() => {});
      await child.status;
      await lines.cancel().catch(() => {});
      await stderr;
    },
  };
}

const initialize = (meta?: Record<string, unknown>) =>
  initializeMessage(1, meta);

async function handshake(
  fixture: Fixture,
  meta?: Record<string, unknown>,
): Promise<Record<string, unknown>[]> {
  await fixture.send(initialize(meta));
  const seen = [];
  while (true) {
    const message = await fixture.next();
    seen.push(message);
    if (message.id === 1) break;
  }
  await fixture.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  return seen;
}

Deno.test("a stdio server keeps stdout to protocol messages and exits when stdin closes", async () => {
  const fixture = startFixture();
  try {
    const seen = await handshake(fixture, {
      progressToken: "p",
      display_width: 800,
    });
    const progress = seen.filter((m) => m.method === "notifications/progress");
    assert.deepEqual(progress.map((m) => m.params), [
      { progressToken: "p", progress: 50, total: 100, message: "starting" },
    ]);
    assert.ok("result" in seen.at(-1)!);
    await fixture.send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    const list = await fixture.next();
    const names = (list.result as { tools: { name: string }[] }).tools.map((
      t,
    ) => t.name);
    assert.deepEqual(names, ["increment", "log", "setup", "evaluate"]);
    await fixture.send({
      jsonrpc: "2.0",
      id: 3,
      method: "tools/call",
      params: { name: "log", arguments: {} },
    });
    const logged = await fixture.next();
    assert.deepEqual(logged.result, {
      content: [{ type: "text", text: "logged" }],
    });
    const { status, stderr } = await fixture.end();
    assert.equal(status.code, 0);
    assert.match(stderr, /initialize hook says hello on stdout/);
    assert.match(stderr, /tool output that must not reach stdout/);
  } finally {
    await fixture.dispose();
  }
});

Deno.test("SIGTERM runs the shutdown hook exactly once and exits 0", async () => {
  const marker = await Deno.makeTempFile();
  const fixture = startFixture({ MCP_SHUTDOWN_MARKER: marker });
  try {
    await handshake(fixture);
    // A second SIGTERM while the hook runs is ignored; the process may already be gone.
    for (let i = 0; i < 2; i++) {
      try {
        fixture.child.kill("SIGTERM");
      } catch {
        break;
      }
    }
    assert.equal((await fixture.child.status).code, 0);
    assert.equal(await Deno.readTextFile(marker), "shutdown\n");
  } finally {
    await fixture.dispose();
    await Deno.remove(marker);
  }
});

Deno.test("SIGTERM with a throwing shutdown hook logs it and still exits 0", async () => {
  const fixture = startFixture({ MCP_SHUTDOWN_MODE: "throw" });
  try {
    await handshake(fixture);
    const { status, stderr } = await fixture.kill("SIGTERM");
    assert.equal(status.code, 0);
    assert.match(
      stderr,
      /Shutdown hook failed: Error: Cleanup failed on purpose/,
    );
  } finally {
    await fixture.dispose();
  }
});

Deno.test("SIGTERM with a hanging shutdown hook exits 0 after shutdownTimeoutMs", async () => {
  const fixture = startFixture({
    MCP_SHUTDOWN_MODE: "hang",
    MCP_SHUTDOWN_TIMEOUT_MS: "300",
  });
  try {
    await handshake(fixture);
    const started = performance.now();
    const { status, stderr } = await fixture.kill("SIGTERM");
    assert.equal(status.code, 0);
    assert.ok(performance.now() - started < 5_000);
    assert.match(stderr, /did not finish within 300 ms/);
  } finally {
    await fixture.dispose();
  }
});

Deno.test("SIGINT exits without running the shutdown hook", async () => {
  const marker = await Deno.makeTempFile();
  const fixture = startFixture({ MCP_SHUTDOWN_MARKER: marker });
  try {
    await handshake(fixture);
    const { status } = await fixture.kill("SIGINT");
    assert.equal(status.code, 130);
    assert.equal(await Deno.readTextFile(marker), "");
  } finally {
    await fixture.dispose();
    await Deno.remove(marker);
  }
});

Deno.test("the SDK stdio client lists tools and calls hub tools through the dispatcher", async () => {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: ["run", "-A", FIXTURE, "stdio"],
    stderr: "ignore",
  });
  const client = new Client({ name: "stdio-test", version: "1.0.0" });
  const timer = setTimeout(() => transport.close(), DEADLINE_MS);
  try {
    await client.connect(transport);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes("setup") && !names.includes("reset"));
    await client.callTool({
      name: "setup",
      arguments: { name: "reset", arguments: { to: 9 } },
    });
    const result = await client.callTool({
      name: "evaluate",
      arguments: { name: "reached", arguments: '{"target": 9}' },
    });
    assert.deepEqual(result.structuredContent, { reward: 1, done: true });
  } finally {
    clearTimeout(timer);
    await client.close();
  }
});

Deno.test("SIGTERM to an HTTP server with a connected client runs the hook once and exits 0", async () => {
  const marker = await Deno.makeTempFile();
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), DEADLINE_MS);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", FIXTURE, "http", "0"],
    env: { MCP_SHUTDOWN_MARKER: marker },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    signal: abort.signal,
  }).spawn();
  const stderr = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  const client = new Client({ name: "http-sigterm", version: "1.0.0" });
  try {
    let log = "";
    while (!/on http:\/\/[\d.]+:\d+/.test(log)) {
      const { value, done } = await stderr.read();
      if (done) throw new Error(`Server exited early: ${log}`);
      log += value;
    }
    const url = log.match(/on (http:\/\/[\d.]+:\d+)/)![1];
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${url}/mcp`)),
    );
    assert.ok((await client.listTools()).tools.length > 0);
    child.kill("SIGTERM");
    assert.equal((await child.status).code, 0);
    assert.equal(await Deno.readTextFile(marker), "shutdown\n");
  } finally {
    clearTimeout(timer);
    await client.close().catch(() => {});
    try {
      child.kill("SIGKILL");
    } catch {
      // already exited
    }
    await child.status;
    await stderr.cancel();
    await Deno.remove(marker);
  }
});

// Hostile input and process signals against a real stdio subprocess, driven
// by the official SDK client (raw bytes go to the same stdin beside it).
import assert from "node:assert/strict";
import { Client } from "./_mcp_client.ts";
import {
  assertStoppedAfterCall,
  ChildStdioTransport,
  markerLines,
  waitForLine,
} from "./fixtures/reliability_process.ts";

async function connect(
  env: Record<string, string> = {},
): Promise<{ client: Client; transport: ChildStdioTransport }> {
  const transport = new ChildStdioTransport({ env });
  const client = new Client({ name: "reliability-stdio", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

async function echo(client: Client, text: string): Promise<string> {
  const result = await client.callTool({ name: "echo", arguments: { text } });
  return (result.content as { text: string }[])[0].text;
}

/** Writes `raw`, then returns the error response with `id` the server wrote for it. */
async function errorFor(
  transport: ChildStdioTransport,
  raw: string | Uint8Array,
  id: string | number | null = null,
): Promise<{ code: number; message: string }> {
  const before = transport.received.length;
  await transport.write(raw);
  const response = await transport.waitFor((m) =>
    transport.received.indexOf(m) >= before && "error" in m && m.id === id
  );
  return response.error as { code: number; message: string };
}

Deno.test("a garbage line over stdio gets a -32700 parse error and the server keeps serving", async () => {
  const { client, transport } = await connect();
  try {
    const error = await errorFor(transport, "this is not json {\n");
    assert.equal(error.code, -32700);
    assert.equal(await echo(client, "still here"), "still here");
    assert.deepEqual(transport.junk, []);
  } finally {
    await client.close();
  }
});

Deno.test("valid JSON that is not JSON-RPC over stdio gets -32600 invalid request, answered on its id", async () => {
  const { client, transport } = await connect();
  try {
    const noVersion = await errorFor(transport, '{"hello":"world"}\n');
    assert.equal(noVersion.code, -32600);
    const badMethod = await errorFor(
      transport,
      '{"jsonrpc":"2.0","id":"x1","method":42}\n',
      "x1",
    );
    assert.equal(badMethod.code, -32600);
    const scalar = await errorFor(transport, "42\n");
    assert.equal(scalar.code, -32600);
    assert.equal(await echo(client, "after"), "after");
  } finally {
    await client.close();
  }
});

Deno.test("a JSON-RPC batch over stdio is refused with -32600 and the server keeps serving", async () => {
  const { client, transport } = await connect();
  try {
    const batch = JSON.stringify([
      { jsonrpc: "2.0", id: 901, method: "tools/list" },
      { jsonrpc: "2.0", id: 902, method: "ping" },
    ]);
    const error = await errorFor(transport, batch + "\n");
    assert.equal(error.code, -32600);
    assert.match(error.message, /batches are not supported/);
    assert.equal(await echo(client, "after batch"), "after batch");
  } finally {
    await client.close();
  }
});

Deno.test("a 5 MB garbage line gets a parse error and a 1 MB argument still round-trips", async () => {
  const { client, transport } = await connect();
  try {
    const error = await errorFor(transport, "x".repeat(5 * 1024 * 1024) + "\n");
    assert.equal(error.code, -32700);
    const big = "y".repeat(1024 * 1024);
    assert.equal(await echo(client, big), big);
  } finally {
    await client.close();
  }
});

Deno.test("a line over the 10 MB limit is refused with -32600, skipped to its end, and the server keeps serving", async () => {
  const { client, transport } = await connect();
  try {
    // Written in pieces: the refusal comes before the line ends, and the
    // rest of the line must be skipped rather than read as a new message.
    const piece = new TextEncoder().encode(
      '{"jsonrpc":"2.0","id":77,"method":"x"}'.repeat(28_000),
    );
    const refused = errorFor(transport, piece);
    for (let i = 0; i < 11; i++) await transport.write(piece);
    await transport.write("\n");
    const error = await refused;
    assert.equal(error.code, -32600);
    assert.match(error.message, /longer than 10485760 bytes/);
    assert.equal(await echo(client, "after flood"), "after flood");
    assert.equal(
      transport.received.filter((m) => (m as { id?: unknown }).id === 77)
        .length,
      0,
    );
  } finally {
    await client.close();
  }
});

Deno.test("SIGTERM during a short tool call lets it answer before the shutdown hook runs once, then exits 0", async () => {
  const marker = await Deno.makeTempFile();
  const { client, transport } = await connect({
    REL_MARKER: marker,
    REL_SHUTDOWN_TIMEOUT_MS: "3000",
  });
  try {
    const call = client.callTool({ name: "slow", arguments: { ms: 300 } });
    await waitForLine(marker, "slow-start");
    transport.process.kill("SIGTERM");
    const result = await call;
    assert.deepEqual(result.content, [{ type: "text", text: "slept 300 ms" }]);
    await assertStoppedAfterCall(marker, transport.process.status);
  } finally {
    await client.close();
    await Deno.remove(marker);
  }
});

Deno.test("after SIGTERM a stdio server refuses new requests with a JSON-RPC error while it finishes the running call", async () => {
  const marker = await Deno.makeTempFile();
  const { client, transport } = await connect({
    REL_MARKER: marker,
    REL_SHUTDOWN_TIMEOUT_MS: "3000",
  });
  try {
    const call = client.callTool({ name: "slow", arguments: { ms: 500 } });
    await waitForLine(marker, "slow-start");
    transport.process.kill("SIGTERM");
    await new Promise((resolve) => setTimeout(resolve, 100));
    const refused = await errorFor(
      transport,
      JSON.stringify({
        jsonrpc: "2.0",
        id: "late",
        method: "tools/call",
        params: { name: "echo", arguments: { text: "too late" } },
      }) + "\n",
      "late",
    );
    assert.equal(refused.code, -32000);
    assert.match(refused.message, /shutting down/);
    const result = await call;
    assert.deepEqual(result.content, [{ type: "text", text: "slept 500 ms" }]);
    // The late request never ran: no echo, and the hook ran once.
    await assertStoppedAfterCall(marker, transport.process.status);
  } finally {
    await client.close();
    await Deno.remove(marker);
  }
});

Deno.test("SIGTERM during a tool call longer than the drain budget closes it cleanly, runs the shutdown hook once and exits 0", async () => {
  const marker = await Deno.makeTempFile();
  const { client, transport } = await connect({ REL_MARKER: marker });
  try {
    const call = client.callTool({ name: "slow", arguments: { ms: 5_000 } })
      .then(() => "answered", (error: Error) => `closed: ${error.message}`);
    await waitForLine(marker, "slow-start");
    const started = performance.now();
    transport.process.kill("SIGTERM");
    const outcome = await call;
    const status = await transport.process.status;
    const elapsed = performance.now() - started;
    assert.match(outcome, /^(answered|closed: .*Connection closed)/);
    assert.equal(status.code, 0);
    assert.ok(elapsed < 4_000, `exit took ${elapsed} ms`);
    const lines = await markerLines(marker);
    assert.equal(lines.filter((l) => l === "shutdown").length, 1);
  } finally {
    await client.close();
    await Deno.remove(marker);
  }
});

Deno.test("a hanging shutdown hook is cut off after shutdownTimeoutMs and a second SIGTERM does not rerun it", async () => {
  const marker = await Deno.makeTempFile();
  const { client, transport } = await connect({
    REL_MARKER: marker,
    REL_SHUTDOWN_HANG: "1",
    REL_SHUTDOWN_TIMEOUT_MS: "300",
  });
  try {
    assert.equal(await echo(client, "up"), "up");
    const started = performance.now();
    transport.process.kill("SIGTERM");
    await waitForLine(marker, "shutdown");
    transport.process.kill("SIGTERM");
    const status = await transport.process.status;
    const elapsed = performance.now() - started;
    assert.equal(status.code, 0);
    assert.ok(elapsed >= 300, `exited after ${elapsed} ms, before the cut-off`);
    assert.ok(elapsed < 3_000, `exit took ${elapsed} ms`);
    assert.match(
      await transport.process.stderr,
      /did not finish within 300 ms/,
    );
    assert.deepEqual(
      (await markerLines(marker)).filter((l) => l === "shutdown"),
      ["shutdown"],
    );
  } finally {
    await client.close();
    await Deno.remove(marker);
  }
});

Deno.test("over stdio a failed initialize can be retried on the same connection", async () => {
  const marker = await Deno.makeTempFile();
  const transport = new ChildStdioTransport({
    env: { REL_MARKER: marker, REL_INIT_FAILURES: "1" },
  });
  await transport.start();
  const initialize = (id: number) =>
    transport.send({
      jsonrpc: "2.0",
      id,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "raw", version: "1.0.0" },
      },
    });
  try {
    await initialize(1);
    const failed = await transport.waitFor((m) => m.id === 1);
    assert.match(
      (failed.error as { message: string }).message,
      /Setup failed on purpose/,
    );
    await initialize(2);
    const retried = await transport.waitFor((m) => m.id === 2);
    assert.ok("result" in retried, JSON.stringify(retried));
    assert.deepEqual(await markerLines(marker), ["init-failed", "init"]);
  } finally {
    await transport.close();
    await Deno.remove(marker);
  }
});

Deno.test("over stdio a throwing tool and a cancelled hanging hub tool leave the server serving", async () => {
  const { client } = await connect();
  try {
    const thrown = await client.callTool({ name: "boom", arguments: {} });
    assert.equal(thrown.isError, true);
    const abort = new AbortController();
    const hang = client.callTool(
      { name: "work", arguments: { name: "hang", arguments: {} } },
      undefined,
      { signal: abort.signal },
    );
    setTimeout(() => abort.abort("the test gave up"), 100);
    await assert.rejects(hang, /the test gave up/);
    const cancelled = async () =>
      ((await client.callTool({
        name: "work",
        arguments: { name: "cancelled" },
      })).content as { text: string }[])[0].text;
    const deadline = Date.now() + 5_000;
    let count = await cancelled();
    while (count !== "1" && Date.now() < deadline) count = await cancelled();
    assert.equal(count, "1");
    assert.equal(await echo(client, "alive"), "alive");
  } finally {
    await client.close();
  }
});

// Hostile input, failures and cancellation against a real Streamable HTTP
// subprocess, driven by the official SDK client and raw POSTs to /mcp.
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "./_mcp_client.ts";
import { startHttpFixture } from "./fixtures/reliability_process.ts";

const MCP_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};

interface Session {
  client: Client;
  transport: StreamableHTTPClientTransport;
}

async function connect(
  base: string,
  name = "reliability-http",
): Promise<Session> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`));
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

function text(result: unknown): string {
  return (result as { content: { text: string }[] }).content[0].text;
}

async function echo(client: Client, value: string): Promise<string> {
  return text(
    await client.callTool({ name: "echo", arguments: { text: value } }),
  );
}

async function rawPost(
  base: string,
  body: string,
  sessionId?: string,
): Promise<{ status: number; error: { code: number; message: string } }> {
  const response = await fetch(`${base}/mcp`, {
    method: "POST",
    body,
    headers: {
      ...MCP_HEADERS,
      ...(sessionId && { "mcp-session-id": sessionId }),
    },
  });
  const json = await response.json();
  return { status: response.status, error: json.error };
}

async function sessionCount(base: string): Promise<number> {
  const response = await fetch(`${base}/dev/tools/stats`, {
    method: "POST",
    body: "{}",
  });
  return (await response.json()).structuredContent.sessions;
}

/** Polls `read` until it returns `expected` or 5 s pass; returns the last value. */
async function eventually<T>(read: () => Promise<T>, expected: T): Promise<T> {
  const deadline = Date.now() + 5_000;
  let value = await read();
  while (value !== expected && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await read();
  }
  return value;
}

Deno.test("garbage POSTed to /mcp without a session gets a JSON-RPC error and the server keeps serving", async () => {
  const { process, base } = await startHttpFixture();
  try {
    const garbage = await rawPost(base, "this is not json {");
    assert.equal(garbage.status, 400);
    assert.equal(garbage.error.code, -32700);
    const notRpc = await rawPost(base, '{"hello":"world"}');
    assert.equal(notRpc.status, 400);
    assert.equal(notRpc.error.code, -32600);
    const batch = await rawPost(
      base,
      '[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
    );
    assert.equal(batch.status, 400);
    assert.equal(batch.error.code, -32000);
    assert.match(batch.error.message, /no valid session ID/);
    assert.equal(await sessionCount(base), 0);
    const { client } = await connect(base);
    assert.equal(await echo(client, "still here"), "still here");
    await client.close();
  } finally {
    await process.dispose();
  }
});

Deno.test("garbage POSTed to /mcp within a session gets a JSON-RPC error and the session keeps serving", async () => {
  const { process, base } = await startHttpFixture();
  const { client, transport } = await connect(base);
  try {
    const id = transport.sessionId!;
    const garbage = await rawPost(base, "]]]", id);
    assert.equal(garbage.status, 400);
    assert.equal(garbage.error.code, -32700);
    const notRpc = await rawPost(base, '{"hello":"world"}', id);
    assert.equal(notRpc.status, 400);
    assert.equal(notRpc.error.code, -32600);
    const badBatch = await rawPost(
      base,
      '[{"jsonrpc":"2.0","id":1,"method":"ping"}, 7]',
      id,
    );
    assert.equal(badBatch.status, 400);
    assert.equal(badBatch.error.code, -32600);
    assert.equal(await echo(client, "same session"), "same session");
    assert.equal(await sessionCount(base), 1);
  } finally {
    await client.close();
    await process.dispose();
  }
});

Deno.test("a body over 4 MB POSTed to /mcp is refused with 413 without reading it, with or without a session", async () => {
  const { process, base } = await startHttpFixture();
  const { client, transport } = await connect(base);
  try {
    const huge = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { pad: "x".repeat(5 * 1024 * 1024) },
    });
    const anonymous = await rawPost(base, huge);
    assert.equal(anonymous.status, 413);
    const inSession = await rawPost(base, huge, transport.sessionId);
    assert.equal(inSession.status, 413);
    assert.equal(await echo(client, "after"), "after");
  } finally {
    await client.close();
    await process.dispose();
  }
});

Deno.test("a failing initialize hook fails that initialize only, and a new client retries setup successfully", async () => {
  const marker = await Deno.makeTempFile();
  const { process, base } = await startHttpFixture({
    env: { REL_MARKER: marker, REL_INIT_FAILURES: "1" },
  });
  const clients: Client[] = [];
  try {
    await assert.rejects(connect(base, "first"), /Setup failed on purpose/);
    // The failed session is released once its answer is out, which may be
    // a moment after the client has read the error.
    assert.equal(await eventually(() => sessionCount(base), 0), 0);
    const second = await connect(base, "second");
    clients.push(second.client);
    const names = (await second.client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes("work"), `hub not mounted: ${names}`);
    const third = await connect(base, "third");
    clients.push(third.client);
    assert.equal(await echo(third.client, "ok"), "ok");
    const lines = (await Deno.readTextFile(marker)).split("\n").filter(Boolean);
    assert.deepEqual(lines, ["init-failed", "init"]);
    assert.equal(await sessionCount(base), 2);
  } finally {
    for (const client of clients) await client.close();
    await process.dispose();
    await Deno.remove(marker);
  }
});

Deno.test("a tool that throws is an isError result and the session keeps serving", async () => {
  const { process, base } = await startHttpFixture();
  const { client } = await connect(base);
  try {
    const result = await client.callTool({ name: "boom", arguments: {} });
    assert.equal(result.isError, true);
    assert.match(text(result), /Tool failed on purpose/);
    assert.equal(await echo(client, "after boom"), "after boom");
  } finally {
    await client.close();
    await process.dispose();
  }
});

Deno.test("a hanging hub tool cancelled through the SDK's AbortSignal is aborted on the server, which keeps serving", async () => {
  const { process, base } = await startHttpFixture();
  const { client } = await connect(base);
  try {
    const abort = new AbortController();
    const call = client.callTool(
      { name: "work", arguments: { name: "hang", arguments: {} } },
      undefined,
      { signal: abort.signal },
    );
    setTimeout(() => abort.abort("the test gave up"), 100);
    await assert.rejects(call, /the test gave up/);
    let cancelled = "0";
    const deadline = Date.now() + 5_000;
    while (cancelled !== "1" && Date.now() < deadline) {
      cancelled = text(
        await client.callTool({
          name: "work",
          arguments: { name: "cancelled" },
        }),
      );
    }
    assert.equal(cancelled, "1");
    assert.equal(await echo(client, "after cancel"), "after cancel");
  } finally {
    await client.close();
    await process.dispose();
  }
});

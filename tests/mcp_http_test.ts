// The MCP server over real sockets: Streamable HTTP with concurrent SDK
// clients and raw requests, and the legacy SSE transport.
import assert from "node:assert/strict";
import {
  Client,
  initializeMessage,
  SSEClientTransport,
  StreamableHTTPClientTransport,
} from "./_mcp_client.ts";
import { createCounterEnv } from "./fixtures/mcp_counter_env.ts";
import type { MCPServer } from "../mcp/mod.ts";

async function serve(
  mcp: MCPServer,
  transport: "http" | "sse",
  resumable = false,
): Promise<{ base: string; stopped: Promise<void> }> {
  const listening = Promise.withResolvers<Deno.NetAddr>();
  const stopped = mcp.run({
    transport,
    resumable,
    port: 0,
    host: "127.0.0.1",
    handleSignals: false,
    onListen: listening.resolve,
  });
  const addr = await listening.promise;
  return { base: `http://127.0.0.1:${addr.port}`, stopped };
}

async function httpClient(
  base: string,
  name: string,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`));
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

function sseEvents(text: string): Record<string, unknown>[] {
  return text.split("\n").filter((line) => line.startsWith("data:")).map((
    line,
  ) => JSON.parse(line.slice(5)));
}

Deno.test("two concurrent Streamable HTTP sessions share one MCPServer and run initialize once", async () => {
  const env = createCounterEnv();
  const { base, stopped } = await serve(env.mcp, "http");
  try {
    const [a, b] = await Promise.all([
      httpClient(base, "a"),
      httpClient(base, "b"),
    ]);
    assert.equal(env.initializeRuns(), 1);
    assert.ok(
      a.transport.sessionId && b.transport.sessionId &&
        a.transport.sessionId !== b.transport.sessionId,
    );
    const [listA, listB] = await Promise.all([
      a.client.listTools(),
      b.client.listTools(),
    ]);
    assert.deepEqual(listA.tools.map((t) => t.name), [
      "increment",
      "setup",
      "evaluate",
    ]);
    assert.deepEqual(
      listB.tools.map((t) => t.name),
      listA.tools.map((t) => t.name),
    );
    await a.client.callTool({
      name: "setup",
      arguments: { name: "reset", arguments: { to: 1 } },
    });
    await b.client.callTool({ name: "increment", arguments: {} });
    const reached = await a.client.callTool({
      name: "evaluate",
      arguments: { name: "reached", arguments: { target: 2 } },
    });
    assert.deepEqual(reached.structuredContent, { reward: 1, done: true });

    const id = a.transport.sessionId;
    await a.transport.terminateSession();
    const after = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": id,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/list" }),
    });
    assert.equal(after.status, 404);
    await after.body?.cancel();
    assert.equal((await b.client.listTools()).tools.length, 3);
    await a.client.close();
    await b.client.close();
  } finally {
    await env.mcp.stop();
    await stopped;
  }
});

Deno.test("a raw HTTP initialize passes _meta to the hook and streams its progress first", async () => {
  const env = createCounterEnv();
  const { base, stopped } = await serve(env.mcp, "http");
  try {
    const response = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify(
        initializeMessage(1, {
          progressToken: 7,
          display_width: 1024,
          display_height: 768,
        }),
      ),
    });
    assert.equal(response.status, 200);
    assert.ok(response.headers.get("mcp-session-id"));
    assert.match(
      response.headers.get("access-control-expose-headers") ?? "",
      /Mcp-Session-Id/i,
    );
    const events = sseEvents(await response.text());
    assert.deepEqual(events[0], {
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: {
        progressToken: 7,
        progress: 50,
        total: 100,
        message: "starting",
      },
    });
    assert.equal(
      (events[1].result as { serverInfo: { name: string } }).serverInfo.name,
      "counter-env",
    );
    assert.deepEqual(env.lastMeta(), {
      progressToken: 7,
      display_width: 1024,
      display_height: 768,
    });
    assert.equal(env.setup.env.width, 1024);
  } finally {
    await env.mcp.stop();
    await stopped;
  }
});

Deno.test("the legacy SSE transport serves the SDK SSE client", async () => {
  const env = createCounterEnv();
  const { base, stopped } = await serve(env.mcp, "sse");
  try {
    const transport = new SSEClientTransport(new URL(`${base}/sse`));
    const client = new Client({ name: "sse", version: "1.0.0" });
    await client.connect(transport);
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), [
      "increment",
      "setup",
      "evaluate",
    ]);
    const result = await client.callTool({
      name: "increment",
      arguments: { by: 5 },
    });
    assert.deepEqual(result.content, [{ type: "text", text: "5" }]);
    const dev = await (await fetch(`${base}/dev`)).json();
    assert.equal(dev.transport, "sse");
    await client.close();
  } finally {
    await env.mcp.stop();
    await stopped;
  }
});

Deno.test("run() resolves once stopped through its abort signal", async () => {
  const env = createCounterEnv();
  const controller = new AbortController();
  const listening = Promise.withResolvers<Deno.NetAddr>();
  const stopped = env.mcp.run({
    transport: "http",
    port: 0,
    handleSignals: false,
    signal: controller.signal,
    onListen: listening.resolve,
  });
  const addr = await listening.promise;
  const dev = await fetch(`http://127.0.0.1:${addr.port}/dev`);
  assert.equal(dev.status, 200);
  await dev.body?.cancel();
  controller.abort();
  await stopped;
  await assert.rejects(
    env.mcp.run({ transport: "carrier-pigeon" }),
    /Unknown transport "carrier-pigeon"/,
  );
});

Deno.test("with resumable: true, a Streamable HTTP stream closed mid-call resumes with Last-Event-ID and delivers the result", async () => {
  const env = createCounterEnv();
  env.mcp.tool(
    { name: "poll_me", description: "Closes its stream, then answers." },
    async (_args, extra) => {
      extra.closeSSEStream?.();
      await new Promise((resolve) => setTimeout(resolve, 50));
      return "answered after the stream closed";
    },
  );
  const { base, stopped } = await serve(env.mcp, "http", true);
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
  };
  try {
    const init = await fetch(`${base}/mcp`, {
      method: "POST",
      headers,
      body: JSON.stringify(initializeMessage(1, undefined, "2025-11-25")),
    });
    const session = init.headers.get("mcp-session-id")!;
    await init.body?.cancel();
    const call = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { ...headers, "mcp-session-id": session },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "poll_me", arguments: {} },
      }),
    });
    const closed = await call.text();
    // The priming event gives the client an id to resume from and the retry delay.
    const priming = /^id: (\S+)\nretry: 1000\ndata: \n\n/.exec(closed);
    assert.ok(
      priming,
      `expected a priming event first, got ${JSON.stringify(closed)}`,
    );
    assert.ok(
      !closed.includes("answered after"),
      "the stream closed before the answer",
    );

    await new Promise((resolve) => setTimeout(resolve, 100));
    const resumed = await fetch(`${base}/mcp`, {
      method: "GET",
      headers: {
        accept: "text/event-stream",
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-11-25",
        "last-event-id": priming[1],
      },
    });
    assert.equal(resumed.status, 200);
    const reader = resumed.body!.pipeThrough(new TextDecoderStream())
      .getReader();
    let replayed = "";
    while (!replayed.includes("answered after the stream closed")) {
      const { value, done } = await reader.read();
      if (done) break;
      replayed += value;
    }
    await reader.cancel();
    assert.match(replayed, /"id":2/);
    assert.match(replayed, /answered after the stream closed/);
  } finally {
    await env.mcp.stop();
    await stopped;
  }
});

// The reliability rows of docs/reliability.md for the modern era (protocol
// 2026-07-28: no handshake, no session, every request on its own), against
// a real subprocess, driven by the v2 SDK `Client` pinned to 2026-07-28.
import assert from "node:assert/strict";
import {
  Client,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import {
  assertStoppedAfterCall,
  ChildStdioTransport,
  startHttpFixture,
  waitForLine,
} from "./fixtures/reliability_process.ts";

const MODERN = "2026-07-28";

function modernClient(name: string): Client {
  return new Client({ name, version: "1.0.0" }, {
    versionNegotiation: { mode: { pin: MODERN } },
  });
}

function text(result: unknown): string {
  return (result as { content: { text: string }[] }).content[0].text;
}

/** A raw modern request: the envelope in `_meta`, the method and name in headers. */
function modernPost(
  base: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Response> {
  const params = (body.params ?? {}) as Record<string, unknown>;
  return fetch(`${base}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": MODERN,
      "mcp-method": String(body.method),
      ...(typeof params.name === "string" && { "mcp-name": params.name }),
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, ...body }),
  });
}

function envelope(version = MODERN) {
  return {
    "io.modelcontextprotocol/protocolVersion": version,
    "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1.0.0" },
    "io.modelcontextprotocol/clientCapabilities": {},
  };
}

Deno.test("modern: malformed requests over HTTP get JSON-RPC errors, keep nothing, and the server keeps serving", async () => {
  const { process, base } = await startHttpFixture();
  const client = modernClient("after-garbage");
  try {
    const notJson = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", "mcp-method": "ping" },
      body: "{not json",
    });
    assert.equal(notJson.status, 400);
    assert.equal((await notJson.json()).error.code, -32700);

    const future = await modernPost(base, {
      method: "tools/call",
      params: {
        name: "echo",
        arguments: { text: "x" },
        _meta: envelope("2099-01-01"),
      },
    }, { "mcp-protocol-version": "2099-01-01" });
    const unsupported = await future.json();
    assert.equal(unsupported.error.code, -32022);
    assert.deepEqual(unsupported.error.data.supported, [MODERN]);

    const mismatch = await modernPost(base, {
      method: "tools/call",
      params: { name: "echo", arguments: { text: "x" }, _meta: envelope() },
    }, { "mcp-name": "boom" });
    assert.equal(mismatch.status, 400);
    assert.equal((await mismatch.json()).error.code, -32020);

    const ok = await modernPost(base, {
      method: "tools/call",
      params: { name: "echo", arguments: { text: "raw" }, _meta: envelope() },
    });
    assert.equal(ok.status, 200);
    const answer = await ok.json();
    assert.equal(answer.result.content[0].text, "raw");
    assert.equal(answer.result.resultType, "complete");

    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp`)),
    );
    assert.equal(
      text(await client.callTool({ name: "echo", arguments: { text: "ok" } })),
      "ok",
    );
    const stats = await client.callTool({ name: "stats", arguments: {} });
    assert.equal(
      (stats.structuredContent as { sessions: number }).sessions,
      0,
      "modern requests open no session",
    );
  } finally {
    await client.close();
    await process.dispose();
  }
});

Deno.test("modern: 50 concurrent callers with interleaved calls all get their own correct results, and leave no session", async () => {
  const { process, base } = await startHttpFixture();
  const clients = Array.from({ length: 50 }, (_, i) => modernClient(`c${i}`));
  try {
    await Promise.all(
      clients.map((client) =>
        client.connect(
          new StreamableHTTPClientTransport(new URL(`${base}/mcp`)),
        )
      ),
    );
    const results = await Promise.all(clients.map(async (client, i) => {
      const [slow, echoed] = await Promise.all([
        client.callTool({ name: "slow", arguments: { ms: 20 + i } }),
        client.callTool({ name: "echo", arguments: { text: `echo-${i}` } }),
      ]);
      const again = await client.callTool({
        name: "echo",
        arguments: { text: `again-${i}` },
      });
      return [text(slow), text(echoed), text(again)];
    }));
    results.forEach((result, i) =>
      assert.deepEqual(result, [
        `slept ${20 + i} ms`,
        `echo-${i}`,
        `again-${i}`,
      ])
    );
    const stats = await clients[0].callTool({ name: "stats", arguments: {} });
    assert.equal((stats.structuredContent as { sessions: number }).sessions, 0);
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    await process.dispose();
  }
});

Deno.test("modern: 2,000 stateless requests after a warm-up leave the heap at its baseline", async () => {
  const { process, base } = await startHttpFixture({
    denoFlags: ["--v8-flags=--expose-gc"],
  });
  const clients = Array.from({ length: 20 }, (_, i) => modernClient(`m${i}`));
  const heap = async () =>
    ((await clients[0].callTool({ name: "stats", arguments: {} }))
      .structuredContent as { heapUsed: number }).heapUsed;
  const round = (n: number) =>
    Promise.all(clients.map(async (client, i) => {
      for (let k = 0; k < n; k++) {
        await client.callTool({
          name: "echo",
          arguments: { text: `${i}-${k}-`.padEnd(4096, "v") },
        });
      }
    }));
  try {
    await Promise.all(
      clients.map((client) =>
        client.connect(
          new StreamableHTTPClientTransport(new URL(`${base}/mcp`)),
        )
      ),
    );
    // Warm-up: the heap grows about 1.1 MB over the first 4,000 requests
    // (compiled code, caches) and then stays flat (measured over 10,000).
    await round(200);
    const baseline = await heap();
    await round(100);
    const growth = (await heap()) - baseline;
    console.error(
      `modern heap: baseline ${baseline} B, growth after 2000 requests ${growth} B`,
    );
    // A leak of even 128 bytes a request would show as 256 KB here.
    assert.ok(growth < 256 * 1024, `heap grew ${growth} B`);
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    await process.dispose();
  }
});

Deno.test("modern: SIGTERM during a call over HTTP lets it answer before the shutdown hook runs once, then exits 0", async () => {
  const marker = await Deno.makeTempFile();
  const { process, base } = await startHttpFixture({
    env: { REL_MARKER: marker, REL_SHUTDOWN_TIMEOUT_MS: "3000" },
  });
  const client = modernClient("sigterm-http");
  try {
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp`)),
    );
    const call = client.callTool({ name: "slow", arguments: { ms: 300 } });
    await waitForLine(marker, "slow-start");
    process.kill("SIGTERM");
    assert.equal(text(await call), "slept 300 ms");
    await assertStoppedAfterCall(marker, process.status);
  } finally {
    await client.close();
    await process.dispose();
    await Deno.remove(marker);
  }
});

Deno.test("modern: over stdio, garbage gets -32700, and a call in flight at SIGTERM answers before the hook runs once", async () => {
  const marker = await Deno.makeTempFile();
  const transport = new ChildStdioTransport({
    env: { REL_MARKER: marker, REL_SHUTDOWN_TIMEOUT_MS: "3000" },
  });
  const client = modernClient("sigterm-stdio");
  try {
    await client.connect(transport as never);
    assert.equal(client.getProtocolEra(), "modern");
    const before = transport.received.length;
    await transport.write("this is not json\n");
    const parseError = await transport.waitFor((m) =>
      transport.received.indexOf(m) >= before && "error" in m
    );
    assert.equal((parseError.error as { code: number }).code, -32700);

    const call = client.callTool({ name: "slow", arguments: { ms: 300 } });
    await waitForLine(marker, "slow-start");
    transport.process.kill("SIGTERM");
    assert.equal(text(await call), "slept 300 ms");
    await assertStoppedAfterCall(marker, transport.process.status);
    assert.deepEqual(transport.junk, [], "stdout stays protocol-only");
  } finally {
    await client.close();
    await transport.process.dispose();
    await Deno.remove(marker);
  }
});

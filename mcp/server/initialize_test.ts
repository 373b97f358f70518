// Initialize hooks in the modern era (2026-07-28), through the real HTTP app
// and the v2 SDK `Client` pinned to that revision: no handshake, so the hooks
// run before the first request other than `server/discover`.
import assert from "node:assert/strict";
import {
  Client,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import { z } from "zod";
import { BaseHub, MCPServer } from "../mod.ts";
import { createHttpApp } from "../transports/http.ts";

function modernClient(mcp: MCPServer) {
  const http = createHttpApp(mcp, "http", "127.0.0.1");
  const transport = new StreamableHTTPClientTransport(
    new URL("http://127.0.0.1/mcp"),
    {
      fetch: async (input, init) => {
        const request = new Request(input, init);
        request.headers.set("host", "127.0.0.1"); // as a real client sends
        return await http.app.fetch(request);
      },
    },
  );
  const client = new Client({ name: "hook-test", version: "1.0.0" }, {
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  return {
    connect: () => client.connect(transport),
    client,
    close: async () => {
      await client.close();
      await http.close();
    },
  };
}

function gatedServer() {
  const mcp = new MCPServer({ name: "hooks" });
  const setup = new BaseHub("setup");
  setup.tool("noop", {}, () => "ok");
  const runs: { meta?: Record<string, unknown>; client?: string }[] = [];
  const gate = Promise.withResolvers<void>();
  mcp.initialize(async (ctx) => {
    runs.push({ meta: ctx.meta, client: ctx.clientInfo?.name });
    await ctx.progress(50, "half way");
    await gate.promise;
    mcp.mount(setup);
  });
  mcp.tool({ name: "echo", input: { text: z.string() } }, ({ text }) => text);
  return { mcp, runs, gate };
}

Deno.test("modern: server/discover answers without running the hooks; the first other request runs them once with its _meta, client info and progress", async () => {
  const { mcp, runs, gate } = gatedServer();
  const a = modernClient(mcp);
  try {
    await a.connect(); // server/discover only
    assert.equal(runs.length, 0, "discover does not run the hooks");
    const progress: number[] = [];
    const listing = a.client.listTools({ _meta: { display_width: 800 } }, {
      onprogress: (p) => progress.push(p.progress),
    });
    while (runs.length === 0) await new Promise((r) => setTimeout(r, 5));
    gate.resolve();
    const { tools } = await listing;
    assert.deepEqual(tools.map((t) => t.name).sort(), ["echo", "setup"]);
    assert.equal(runs.length, 1);
    assert.equal(runs[0].meta?.display_width, 800);
    assert.equal(runs[0].client, "hook-test");
    assert.deepEqual(progress, [50]);
  } finally {
    await a.close();
  }
});

Deno.test("modern: concurrent first requests wait for the same run of the hooks", async () => {
  const { mcp, runs, gate } = gatedServer();
  const clients = Array.from({ length: 5 }, () => modernClient(mcp));
  try {
    await Promise.all(clients.map((c) => c.connect()));
    const calls = clients.map((c, i) =>
      c.client.callTool({ name: "echo", arguments: { text: `t${i}` } })
    );
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(runs.length, 1, "one run while the others wait");
    gate.resolve();
    const results = await Promise.all(calls);
    results.forEach((result, i) =>
      assert.deepEqual(result.content, [{ type: "text", text: `t${i}` }])
    );
    assert.equal(runs.length, 1);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
});

Deno.test("modern: a throwing hook fails that request with its message, after a failure progress, and the next request runs the hooks again", async () => {
  const mcp = new MCPServer({ name: "flaky" });
  let attempts = 0;
  mcp.initialize(() => {
    attempts++;
    if (attempts === 1) throw new Error("no database yet");
  });
  mcp.tool({ name: "ping" }, () => "pong");
  const c = modernClient(mcp);
  try {
    await c.connect();
    const progress: (string | undefined)[] = [];
    await assert.rejects(
      c.client.callTool({ name: "ping" }, {
        onprogress: (p) => progress.push(p.message),
      }),
      /no database yet/,
    );
    assert.deepEqual(progress, ["Initialization failed: no database yet"]);
    const result = await c.client.callTool({ name: "ping" });
    assert.deepEqual(result.content, [{ type: "text", text: "pong" }]);
    assert.equal(attempts, 2);
  } finally {
    await c.close();
  }
});

import assert from "node:assert/strict";
import { createHttpApp } from "./transports.ts";
import { initializeMessage } from "../tests/_mcp_client.ts";
import { createCounterEnv } from "../tests/fixtures/mcp_counter_env.ts";

const INIT = JSON.stringify(initializeMessage(1));
const MCP_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};

function setup(boundHost = "127.0.0.1") {
  const env = createCounterEnv();
  const http = createHttpApp(env.mcp, "http", boundHost);
  const request = (
    path: string,
    init: RequestInit & { headers?: Record<string, string> } = {},
  ) =>
    Promise.resolve(http.app.request(`http://x${path}`, {
      ...init,
      headers: { host: "127.0.0.1:8765", ...init.headers },
    }));
  return { env, http, request };
}

Deno.test("dnsRebindingGuard() rejects foreign Host and Origin headers on a loopback server", async () => {
  const { http, request } = setup();
  try {
    const foreignHost = await request("/dev", {
      headers: { host: "evil.example:8765" },
    });
    assert.equal(foreignHost.status, 403);
    assert.match(
      (await foreignHost.json()).error,
      /Host "evil.example:8765" is not allowed/,
    );
    const foreignOrigin = await request("/dev", {
      headers: { origin: "http://evil.example" },
    });
    assert.equal(foreignOrigin.status, 403);
    await foreignOrigin.body?.cancel();
    const opaqueOrigin = await request("/dev", { headers: { origin: "null" } });
    assert.equal(opaqueOrigin.status, 403);
    await opaqueOrigin.body?.cancel();
    const local = await request("/dev", {
      headers: { host: "localhost:8765", origin: "http://localhost:6274" },
    });
    assert.equal(local.status, 200);
    await local.body?.cancel();
  } finally {
    await http.close();
  }
});

Deno.test("dnsRebindingGuard() lets any Host through when bound to 0.0.0.0", async () => {
  const { http, request } = setup("0.0.0.0");
  try {
    const response = await request("/dev", {
      headers: { host: "env.internal:8765" },
    });
    assert.equal(response.status, 200);
    await response.body?.cancel();
  } finally {
    await http.close();
  }
});

Deno.test("CORS preflight allows the MCP headers and responses expose Mcp-Session-Id", async () => {
  const { http, request } = setup();
  try {
    const preflight = await request("/mcp", {
      method: "OPTIONS",
      headers: {
        origin: "http://localhost:6274",
        "access-control-request-method": "POST",
        "access-control-request-headers": "mcp-session-id, content-type",
      },
    });
    assert.equal(preflight.status, 204);
    assert.match(
      preflight.headers.get("access-control-allow-headers") ?? "",
      /Mcp-Session-Id/,
    );
    const init = await request("/mcp", {
      method: "POST",
      body: INIT,
      headers: MCP_HEADERS,
    });
    assert.match(
      init.headers.get("access-control-expose-headers") ?? "",
      /Mcp-Session-Id/,
    );
    await init.body?.cancel();
  } finally {
    await http.close();
  }
});

Deno.test("/mcp refuses requests without a session unless they initialize", async () => {
  const { http, request } = setup();
  try {
    const list = await request("/mcp", {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
      headers: MCP_HEADERS,
    });
    assert.equal(list.status, 400);
    assert.match((await list.json()).error.message, /no valid session ID/);
    const unknown = await request("/mcp", {
      method: "GET",
      headers: { ...MCP_HEADERS, "mcp-session-id": "nope" },
    });
    assert.equal(unknown.status, 404);
    assert.match(
      (await unknown.json()).error.message,
      /Session "nope" not found/,
    );
    const garbage = await request("/mcp", {
      method: "POST",
      body: "{",
      headers: MCP_HEADERS,
    });
    assert.equal(garbage.status, 400);
    await garbage.body?.cancel();
  } finally {
    await http.close();
  }
});

Deno.test("idle Streamable HTTP sessions expire and then answer 404", async () => {
  const { http, request } = setup();
  try {
    const init = await request("/mcp", {
      method: "POST",
      body: INIT,
      headers: MCP_HEADERS,
    });
    const id = init.headers.get("mcp-session-id")!;
    await init.body?.cancel();
    assert.equal(http.sessions.size, 1);
    assert.equal(await http.sessions.expire(60_000), 0);
    assert.equal(await http.sessions.expire(60_000, Date.now() + 61_000), 1);
    assert.equal(http.sessions.size, 0);
    const after = await request("/mcp", {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
      headers: { ...MCP_HEADERS, "mcp-session-id": id },
    });
    assert.equal(after.status, 404);
    await after.body?.cancel();
  } finally {
    await http.close();
  }
});

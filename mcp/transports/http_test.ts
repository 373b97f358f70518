import assert from "node:assert/strict";
import { createHttpApp, type HttpAppOptions } from "./http.ts";
import { MAX_CLIENT_INFO_BYTES } from "./http_sessions.ts";
import { initializeMessage } from "../../tests/_mcp_client.ts";
import { createCounterEnv } from "../../tests/fixtures/mcp_counter_env.ts";

const INIT = JSON.stringify(initializeMessage(1));
const MCP_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};

function setup(
  boundHost = "127.0.0.1",
  options: HttpAppOptions = {},
  transport: "http" | "sse" = "http",
) {
  const env = createCounterEnv();
  const http = createHttpApp(env.mcp, transport, boundHost, options);
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
    const own = await request("/dev", {
      headers: { host: "localhost:8765", origin: "http://localhost:8765" },
    });
    assert.equal(own.status, 200, "the server's own page");
    await own.body?.cancel();
  } finally {
    await http.close();
  }
});

Deno.test("a loopback page of another origin is refused on /mcp and /dev with or without refuseBrowsers, with no CORS header, while an MCP client (no Origin) is served", async () => {
  for (const refuseBrowsers of [false, true]) {
    const { http, request } = setup("127.0.0.1", { refuseBrowsers });
    try {
      const page = await request("/mcp", {
        method: "POST",
        headers: { ...MCP_HEADERS, origin: "http://127.0.0.1:9000" },
        body: INIT,
      });
      assert.equal(page.status, 403);
      assert.equal(page.headers.get("access-control-allow-origin"), null);
      assert.match(
        (await page.json()).error,
        refuseBrowsers
          ? /browser pages may not call this environment/
          : /Origin "http:\/\/127.0.0.1:9000" may not call this server/,
      );
      const preflight = await request("/mcp", {
        method: "OPTIONS",
        headers: {
          origin: "http://127.0.0.1:9000",
          "access-control-request-method": "POST",
        },
      });
      assert.equal(
        preflight.headers.get("access-control-allow-origin"),
        null,
        "no CORS for a loopback page",
      );
      await preflight.body?.cancel();
      const dev = await request("/dev/tools", {
        headers: { origin: "http://localhost:9000" },
      });
      assert.equal(dev.status, 403);
      await dev.body?.cancel();
      const client = await request("/mcp", {
        method: "POST",
        headers: MCP_HEADERS,
        body: INIT,
      });
      assert.equal(client.status, 200);
      await client.body?.cancel();
    } finally {
      await http.close();
    }
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

Deno.test("CORS preflight from a listed origin allows the MCP headers, names that origin (never *), and responses expose Mcp-Session-Id", async () => {
  const { http, request } = setup("127.0.0.1", {
    allowedOrigins: ["http://localhost:6274"],
  });
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
    assert.equal(
      preflight.headers.get("access-control-allow-origin"),
      "http://localhost:6274",
    );
    const init = await request("/mcp", {
      method: "POST",
      body: INIT,
      headers: { ...MCP_HEADERS, origin: "http://localhost:6274" },
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

async function initialize(
  request: ReturnType<typeof setup>["request"],
  message: unknown = initializeMessage(1),
): Promise<Response> {
  return await request("/mcp", {
    method: "POST",
    body: JSON.stringify(message),
    headers: MCP_HEADERS,
  });
}

Deno.test("past the session cap a new session is refused while every session is in use, and takes the idle-longest one's place once it idles", async () => {
  const { http, request } = setup("127.0.0.1", {
    maxSessions: 3,
    evictableIdleMs: 200,
  });
  try {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await initialize(request);
      assert.equal(response.status, 200);
      ids.push(response.headers.get("mcp-session-id")!);
      await response.body?.cancel();
    }
    const refused = await initialize(request);
    assert.equal(refused.status, 503);
    assert.match((await refused.json()).error.message, /Too many sessions/);
    assert.equal(http.sessions.size, 3);
    await new Promise((resolve) => setTimeout(resolve, 250));
    const admitted = await initialize(request);
    assert.equal(admitted.status, 200);
    await admitted.body?.cancel();
    assert.equal(http.sessions.size, 3);
    // The first session went: it idled the longest.
    const gone = await request("/mcp", {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
      headers: { ...MCP_HEADERS, "mcp-session-id": ids[0] },
    });
    assert.equal(gone.status, 404);
    await gone.body?.cancel();
  } finally {
    await http.close();
  }
});

Deno.test("an initialize whose clientInfo is larger than a session keeps is refused with invalid params", async () => {
  const { http, request } = setup();
  try {
    const message = initializeMessage(1) as unknown as {
      params: { clientInfo: { name: string } };
    };
    message.params.clientInfo.name = "x".repeat(MAX_CLIENT_INFO_BYTES + 1);
    const response = await initialize(request, message);
    assert.equal(response.status, 400);
    const body = await response.json();
    assert.equal(body.error.code, -32602);
    assert.match(body.error.message, /clientInfo/);
    assert.equal(body.id, 1);
    assert.equal(http.sessions.size, 0);
  } finally {
    await http.close();
  }
});

Deno.test("/dev and /mcp answer the server's own pages and listed origins only, and /dev requires the dev token when one is set", async () => {
  const open = setup("0.0.0.0", { allowedOrigins: ["http://localhost:6274"] });
  try {
    const foreign = await open.request("/dev/tools", {
      headers: { origin: "https://evil.example" },
    });
    assert.equal(foreign.status, 403);
    assert.equal(foreign.headers.get("access-control-allow-origin"), null);
    await foreign.body?.cancel();
    const local = await open.request("/dev/tools", {
      headers: { origin: "http://localhost:6274" },
    });
    assert.equal(local.status, 200);
    assert.equal(
      local.headers.get("access-control-allow-origin"),
      "http://localhost:6274",
    );
    await local.body?.cancel();
    const mcp = await open.request("/mcp", {
      method: "OPTIONS",
      headers: {
        origin: "https://inspector.example",
        "access-control-request-method": "POST",
      },
    });
    assert.equal(mcp.status, 403);
    assert.equal(mcp.headers.get("access-control-allow-origin"), null);
    await mcp.body?.cancel();
    const own = await open.request("/dev/tools", {
      headers: {
        host: "env.internal:8765",
        origin: "http://env.internal:8765",
      },
    });
    assert.equal(own.status, 200, "the console's own page, served anywhere");
    await own.body?.cancel();
  } finally {
    await open.http.close();
  }
  const guarded = setup("0.0.0.0", { devToken: "dev-secret" });
  try {
    const missing = await guarded.request("/dev/tools");
    assert.equal(missing.status, 401);
    await missing.body?.cancel();
    const wrong = await guarded.request("/dev/tools", {
      headers: { authorization: "Bearer nope" },
    });
    assert.equal(wrong.status, 401);
    await wrong.body?.cancel();
    const right = await guarded.request("/dev/tools", {
      headers: { authorization: "Bearer dev-secret" },
    });
    assert.equal(right.status, 200);
    await right.body?.cancel();
    const call = await guarded.request("/dev/tools/setup/reset", {
      method: "POST",
      body: JSON.stringify({ to: 1 }),
    });
    assert.equal(call.status, 401);
    await call.body?.cancel();
  } finally {
    await guarded.http.close();
  }
});

Deno.test("legacy SSE answers bad bodies and batches with JSON-RPC errors, as Streamable HTTP does", async () => {
  const { http, request } = setup("127.0.0.1", {}, "sse");
  try {
    const post = (body: string) =>
      request("/messages?sessionId=nope", {
        method: "POST",
        body,
        headers: { "content-type": "application/json" },
      });
    const empty = await post("[]");
    assert.equal(empty.status, 400);
    assert.match(
      (await empty.json()).error.message,
      /batches are not supported/,
    );
    const garbage = await post("{");
    assert.equal(garbage.status, 400);
    assert.equal((await garbage.json()).error.code, -32700);
    const invalid = await post(JSON.stringify({ jsonrpc: "2.0", id: 1 }));
    assert.equal(invalid.status, 400);
    const error = (await invalid.json()).error;
    assert.equal(error.code, -32600);
    const batch = await post(JSON.stringify([
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { jsonrpc: "2.0", id: 2, method: "ping" },
    ]));
    // A valid batch reaches the session lookup (none here).
    assert.equal(batch.status, 404);
    assert.equal((await batch.json()).error.code, -32001);
  } finally {
    await http.close();
  }
});

Deno.test("a draining HTTP app refuses new requests with a JSON-RPC error", async () => {
  const { http, request } = setup();
  try {
    http.drain();
    const response = await initialize(request);
    assert.equal(response.status, 503);
    assert.match((await response.json()).error.message, /shutting down/);
  } finally {
    await http.close();
  }
});

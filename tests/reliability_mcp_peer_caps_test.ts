/**
 * One peer cannot lock others out of a plain HTTP environment's legacy
 * sessions: 256 `/sse` streams, or `MCP_MAX_SESSIONS` Streamable HTTP
 * sessions, from one loopback address leave room for a client on another
 * address (127.0.0.2, an official SDK client), and with the table filled
 * from several addresses the harness (its token in `Authorization` or in
 * `initialize`'s `_meta`) still gets in. Real servers on loopback, default
 * caps (256 in total, 64 per peer, 32 kept for the harness).
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  Client,
  SSEClientTransport,
  StreamableHTTPClientTransport,
} from "./_mcp_client.ts";
import { createHudTrustEnv } from "./fixtures/hud_trust_env.ts";

const TOKEN = "peer-caps-harness-token";
const LEGACY_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};

/** Serves the fixture with a harness token over `transport`; its base URL. */
async function serve(transport: "http" | "sse") {
  const mcp = createHudTrustEnv(TOKEN);
  const listening = Promise.withResolvers<number>();
  const stopped = new AbortController();
  const running = mcp.run({
    transport,
    port: 0,
    host: "127.0.0.1",
    handleSignals: false,
    signal: stopped.signal,
    onListen: (addr) => listening.resolve(addr.port),
  });
  const base = `http://127.0.0.1:${await listening.promise}`;
  return {
    base,
    [Symbol.asyncDispose]: async () => {
      stopped.abort();
      await running;
    },
  };
}

/** A fetch whose connections leave from `localAddress` (another loopback peer). */
function fetchFrom(localAddress: string) {
  const client = Deno.createHttpClient({ localAddress });
  const fetchFn = (url: string | URL, init?: RequestInit) =>
    fetch(url, { ...init, client });
  return { fetch: fetchFn, close: () => client.close() };
}

/** What a flood of requests got: the answers kept open, and the statuses. */
interface Flood {
  open: Response[];
  statuses: Map<number, number>;
  refusals: Response[];
}

/** Sends `count` requests at once; keeps the 200s open (their bodies unread). */
async function flood(
  count: number,
  send: () => Promise<Response>,
): Promise<Flood> {
  const responses = await Promise.all(Array.from({ length: count }, send));
  const statuses = new Map<number, number>();
  for (const r of responses) {
    statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  }
  return {
    open: responses.filter((r) => r.status === 200),
    statuses,
    refusals: responses.filter((r) => r.status !== 200),
  };
}

async function release(floods: Flood[]) {
  await Promise.all(
    floods.flatMap((f) => [...f.open, ...f.refusals]).map((r) =>
      r.body?.cancel().catch(() => {})
    ),
  );
}

/** Connects the harness over `transport` and checks it is served. */
async function assertHarnessServed(
  transport: Parameters<Client["connect"]>[0],
): Promise<void> {
  const harness = new Client({ name: "harness", version: "1" });
  await harness.connect(transport);
  const prompts = await harness.listPrompts();
  assert.ok(prompts.prompts.length > 0, "the harness is served");
  await harness.close();
}

function legacyInitialize(meta?: Record<string, unknown>) {
  return JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "flood", version: "1" },
      ...(meta && { _meta: meta }),
    },
  });
}

Deno.test("one peer's 256 idle /sse streams lock out neither a client on another address nor the harness", async () => {
  await using server = await serve("sse");
  const url = `${server.base}/sse`;
  const floods: Flood[] = [];
  const peers = ["127.0.0.3", "127.0.0.4", "127.0.0.5"].map(fetchFrom);
  const victim = fetchFrom("127.0.0.2");
  try {
    const attack = await flood(256, () => fetch(url));
    floods.push(attack);
    assert.deepEqual(
      Object.fromEntries(attack.statuses),
      { 200: 64, 429: 192 },
      "64 streams per peer, the rest refused",
    );
    const refusal = attack.refusals[0];
    assert.ok(Number(refusal.headers.get("retry-after")) >= 1);
    assert.match(
      (await refusal.json()).error.message,
      /^Too many SSE streams from 127\.0\.0\.1: 64 are open and active \(the cap per peer, MCP_MAX_SESSIONS_PER_PEER\); retry in \d+ s or close an SSE stream$/,
    );

    const client = new Client({ name: "victim", version: "1" });
    await client.connect(
      new SSEClientTransport(new URL(url), { fetch: victim.fetch }),
    );
    const { tools } = await client.listTools();
    assert.ok(tools.some((tool) => tool.name === "guess"));

    // Fill the table from three more addresses: 64 + 1 + 3 × 64 > 256.
    for (const peer of peers) {
      floods.push(await flood(64, () => peer.fetch(url)));
    }
    const full = await peers[0].fetch(url);
    assert.equal(full.status, 429);
    await full.body?.cancel();
    const stranger = fetchFrom("127.0.0.6");
    const refused = await stranger.fetch(url);
    assert.equal(refused.status, 503, "the table is full for guests");
    assert.match(
      (await refused.json()).error.message,
      /Too many SSE streams: 256/,
    );
    const wrongToken = await fetch(url, {
      headers: { authorization: "Bearer not-the-token" },
    });
    assert.equal(wrongToken.status, 429);
    await wrongToken.body?.cancel();
    stranger.close();

    await assertHarnessServed(
      new SSEClientTransport(new URL(url), {
        requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      }),
    );
    await client.close();
  } finally {
    await release(floods);
    for (const peer of peers) peer.close();
    victim.close();
  }
});

Deno.test("one peer's MCP_MAX_SESSIONS legacy Streamable HTTP sessions lock out neither a client on another address nor the harness", async () => {
  await using server = await serve("http");
  const url = `${server.base}/mcp`;
  const floods: Flood[] = [];
  const peers = ["127.0.0.3", "127.0.0.4", "127.0.0.5"].map(fetchFrom);
  const victim = fetchFrom("127.0.0.2");
  const initialize = (
    send: typeof fetch | ReturnType<typeof fetchFrom>["fetch"],
  ) =>
    send(url, {
      method: "POST",
      headers: LEGACY_HEADERS,
      body: legacyInitialize(),
    });
  try {
    const attack = await flood(256, () => initialize(fetch));
    floods.push(attack);
    assert.deepEqual(Object.fromEntries(attack.statuses), {
      200: 64,
      429: 192,
    });
    const refusal = attack.refusals[0];
    assert.ok(Number(refusal.headers.get("retry-after")) >= 1);
    assert.match(
      (await refusal.json()).error.message,
      /^Too many sessions from 127\.0\.0\.1: 64 are open and active .*close one with DELETE \/mcp$/,
    );

    // The SDK 1.x client opens a legacy (2025-era) session with initialize.
    const client = new Client({ name: "victim", version: "1" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), { fetch: victim.fetch }),
    );
    assert.ok(client.getServerCapabilities(), "a legacy session was opened");
    const { tools } = await client.listTools();
    assert.ok(tools.some((tool) => tool.name === "guess"));

    for (const peer of peers) {
      floods.push(await flood(64, () => initialize(peer.fetch)));
    }
    const stranger = fetchFrom("127.0.0.6");
    const refused = await initialize(stranger.fetch);
    assert.equal(refused.status, 503, "the table is full for guests");
    await refused.body?.cancel();
    stranger.close();

    // The harness: its token in initialize's _meta, from the flooding peer...
    const byMeta = await fetch(url, {
      method: "POST",
      headers: LEGACY_HEADERS,
      body: legacyInitialize({ harness_token: TOKEN }),
    });
    assert.equal(byMeta.status, 200);
    assert.ok(byMeta.headers.get("mcp-session-id"));
    floods.push({ open: [byMeta], statuses: new Map(), refusals: [] });
    const wrongMeta = await fetch(url, {
      method: "POST",
      headers: LEGACY_HEADERS,
      body: legacyInitialize({ harness_token: "not-the-token" }),
    });
    assert.equal(wrongMeta.status, 429);
    await wrongMeta.body?.cancel();
    // ...or in Authorization, through the official client.
    await assertHarnessServed(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      }),
    );
    await client.close();
  } finally {
    await release(floods);
    for (const peer of peers) peer.close();
    victim.close();
  }
});

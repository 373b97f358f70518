import assert from "node:assert/strict";
import { startSimulator } from "../simulator/mod.ts";
import { createCaller } from "../state/callers.ts";
import { Catalog, DEFAULT_CATALOG } from "../state/catalog.ts";
import { createBilling } from "../state/credits/billing.ts";
import { readBalance } from "../state/credits/ledger.ts";
import { usdToMicros } from "../state/credits/money.ts";
import { LimitCounters } from "../state/limits/counters.ts";
import { MemoryKeyPool } from "../upstream/key_pool.ts";
import { PROVIDERS } from "../upstream/providers/mod.ts";
import { handleCall } from "./call.ts";
import type { CallDeps, CallRequest } from "./deps.ts";

const SIM_KEYS = ["sim-openai-key-1", "sim-openai-key-2"];
const MODEL = "gpt-4o-mini";

/**
 * A call's real collaborators: an in-memory store with a funded caller,
 * billing and limits on it, a key pool of two keys, the default catalog and
 * the provider simulator as the upstream.
 */
async function callParts(creditsMicros = 1_000_000) {
  const kv = await Deno.openKv(":memory:");
  const sim = await startSimulator();
  const logs: Record<string, unknown>[] = [];
  const billing = createBilling(kv, {});
  const keyPool = new MemoryKeyPool({ openai: { keys: SIM_KEYS } }, {
    defaultCooldownMs: 1_000,
  });
  const catalog = new Catalog(DEFAULT_CATALOG);
  const deps: CallDeps = {
    billing,
    limits: new LimitCounters(kv),
    keyPool,
    model: (id) => catalog.get(id),
    modelsOn: (route) =>
      catalog.list().filter((m) => m.routes.includes(route)).map((m) => m.id),
    providers: PROVIDERS,
    baseUrls: sim.baseUrls as CallDeps["baseUrls"],
    upstreamTimeoutMs: 5_000,
    keyCooldownMs: 1_000,
    log: (record) => logs.push(record),
  };
  const caller = await createCaller(kv, { name: "test", creditsMicros });
  const request = (
    body: Record<string, unknown>,
    signal = new AbortController().signal,
  ): CallRequest => ({
    route: "chat",
    caller: { id: caller.id, name: caller.name },
    headers: new Headers(),
    bodyText: JSON.stringify(body),
    query: {},
    signal,
    requestId: `req-${crypto.randomUUID()}`,
    traceId: "trace-1",
  });
  return {
    kv,
    sim,
    deps,
    keyPool,
    logs,
    callerId: caller.id,
    request,
    /** The caller's balance once every charge queued behind an answer has committed. */
    balance: async () => {
      await billing.flush();
      return await readBalance(kv, caller.id);
    },
    /** Keys lent and not given back. */
    lent: () => keyPool.health().reduce((sum, key) => sum + key.inFlight, 0),
    async [Symbol.asyncDispose]() {
      await billing.flush();
      await sim.close();
      kv.close();
    },
  };
}

const chat = (extra: Record<string, unknown> = {}) => ({
  model: MODEL,
  messages: [{ role: "user", content: "Say hello" }],
  max_tokens: 50,
  ...extra,
});

Deno.test("handleCall() answers a non-streamed call, charges the caller its cost once and gives the key back", async () => {
  await using parts = await callParts();
  const response = await handleCall(parts.deps, parts.request(chat()));
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("x-gateway-model"), MODEL);
  assert.equal(response.headers.get("x-gateway-provider"), "openai");
  const body = await response.json();
  assert.equal(body.object, "chat.completion");
  assert.ok(body.usage.prompt_tokens > 0);
  const cost = usdToMicros(Number(response.headers.get("x-gateway-cost")));
  assert.ok(cost > 0);
  assert.equal(await parts.balance(), 1_000_000 - cost);
  assert.equal(
    usdToMicros(Number(response.headers.get("x-gateway-credits-remaining"))),
    1_000_000 - cost,
  );
  assert.equal(parts.sim.requests.length, 1);
  assert.equal(parts.lent(), 0);
});

Deno.test("handleCall() refuses a call the caller's credits cannot hold with a 402, and sends nothing upstream", async () => {
  await using parts = await callParts(1);
  const response = await handleCall(parts.deps, parts.request(chat()));
  assert.equal(response.status, 402);
  const body = await response.json();
  assert.match(
    body.error.message,
    /^Insufficient credits: this call may cost up to \$/,
  );
  assert.equal(parts.sim.requests.length, 0);
  assert.equal(await parts.balance(), 1);
  assert.equal(parts.lent(), 0);
});

Deno.test("handleCall() answers a body that is not JSON with a 400 in the route's convention, charging nothing", async () => {
  await using parts = await callParts();
  const request = { ...parts.request(chat()), bodyText: "{not json" };
  const response = await handleCall(parts.deps, request);
  assert.equal(response.status, 400);
  const body = await response.json();
  assert.equal(body.error.message, "Request body is not valid JSON");
  assert.equal(await parts.balance(), 1_000_000);
});

Deno.test("handleCall() fails an upstream 5xx with a 502, gives every key back, charges nothing and logs it", async () => {
  await using parts = await callParts();
  parts.sim.setDefaultBehaviour({ status: 500, message: "boom" });
  const response = await handleCall(parts.deps, parts.request(chat()));
  assert.equal(response.status, 502);
  const body = await response.json();
  assert.match(body.error.message, /The openai provider failed: .*boom/);
  // The 5xx is retried once, on the other key.
  assert.equal(parts.sim.requests.length, 2);
  assert.equal(await parts.balance(), 1_000_000);
  assert.equal(parts.lent(), 0);
  assert.equal(parts.logs.length, 1);
  assert.equal(parts.logs[0].level, "error");
});

Deno.test("handleCall() relays a stream and settles it from what the relay measured once it ends", async () => {
  await using parts = await callParts();
  const response = await handleCall(
    parts.deps,
    parts.request(chat({
      stream: true,
      stream_options: { include_usage: true },
    })),
  );
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type")!, /^text\/event-stream/);
  // The key is the stream's until it ends.
  assert.equal(parts.lent(), 1);
  const text = await response.text();
  assert.match(text, /data: \[DONE\]/);
  const usage = text.split("\n")
    .filter((line) => line.startsWith("data: {"))
    .map((line) => JSON.parse(line.slice(6)))
    .find((chunk) => chunk.usage)?.usage;
  assert.ok(usage?.prompt_tokens > 0, text);
  const spent = 1_000_000 - await parts.balance();
  assert.ok(spent > 0, `${spent}`);
  assert.equal(parts.lent(), 0);
});

Deno.test("handleCall() settles a stream the caller leaves, and gives its key back", async () => {
  await using parts = await callParts();
  parts.sim.setDefaultBehaviour({
    chunkDelayMs: 50,
    reply: "word ".repeat(40),
  });
  const response = await handleCall(
    parts.deps,
    parts.request(chat({ stream: true })),
  );
  const reader = response.body!.getReader();
  const first = await reader.read();
  assert.equal(first.done, false);
  await reader.cancel();
  // The caller left: the stream is settled (the prompt's estimate and the
  // output relayed) and its key given back, without waiting on the caller.
  const deadline = Date.now() + 5_000;
  while (
    (parts.lent() > 0 || await parts.balance() === 1_000_000) &&
    Date.now() < deadline
  ) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(parts.lent(), 0);
  assert.ok(1_000_000 - await parts.balance() > 0);
});

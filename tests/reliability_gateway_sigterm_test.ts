/**
 * SIGTERM under load: `gateway/main.ts` as a subprocess on a KV file, calls in
 * flight against a slow simulator, then SIGTERM. In-flight calls finish, new
 * ones are refused, the process exits 0, every 200 has its ledger entry, and
 * a restart on the same file keeps keys, balances and traces.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createCaller, type NewCaller } from "../gateway/state/callers.ts";
import { PROVIDER_NAMES } from "../gateway/upstream/providers/mod.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { type Simulator, startSimulator } from "../gateway/simulator/mod.ts";
import { assertLedgerExact } from "./fixtures/reliability_ledger.ts";

const MAIN = new URL("../gateway/main.ts", import.meta.url).pathname;

interface GatewayProcess {
  url: string;
  child: Deno.ChildProcess;
  /** Everything the process wrote on stderr so far. */
  stderr(): string;
  /** Resolves once stderr closed (the process ended). */
  closed: Promise<void>;
}

async function spawnGateway(
  sim: Simulator,
  kvPath: string,
): Promise<GatewayProcess> {
  const env: Record<string, string> = {
    ...sim.env(),
    PORT: "0",
    HOST: "127.0.0.1",
    GATEWAY_KV_PATH: kvPath,
    GATEWAY_DRAIN_TIMEOUT_MS: "5000",
  };
  for (const provider of PROVIDER_NAMES) {
    env[`${provider.toUpperCase()}_API_KEYS`] = `sk-${provider}-term-a`;
  }
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN],
    env,
    clearEnv: true,
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let text = "";
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let url = "";
  while (!url) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`The gateway exited before listening: "${text}"`);
    text += value;
    url = /listening on (http:\/\/\S+)/.exec(text)?.[1] ?? "";
  }
  const closed = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      text += value;
    }
  })();
  return { url, child, stderr: () => text, closed };
}

async function exitOf(gateway: GatewayProcess): Promise<number> {
  const timeout = setTimeout(() => gateway.child.kill("SIGKILL"), 15_000);
  try {
    const status = await gateway.child.status;
    await gateway.closed;
    return status.code;
  } finally {
    clearTimeout(timeout);
  }
}

function chat(url: string, caller: NewCaller, stream: boolean) {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${caller.key}`,
    },
    body: JSON.stringify({
      model: "gpt-4o-mini",
      stream,
      messages: [{ role: "user", content: "drain me" }],
    }),
  });
}

Deno.test("SIGTERM under load drains in-flight calls, refuses new ones, exits 0 and loses no ledger entry; a restart keeps keys, balances and traces", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gateway-sigterm-" });
  const kvPath = join(dir, "gateway.kv");
  await using sim = await startSimulator({ behaviour: { latencyMs: 500 } });
  const setup = await Deno.openKv(kvPath);
  const caller = await createCaller(setup, {
    name: "drain",
    creditsMicros: usdToMicros(50),
  });
  setup.close();

  const first = await spawnGateway(sim, kvPath);
  const inFlight = Array.from(
    { length: 12 },
    (_, i) =>
      chat(first.url, caller, i % 2 === 1).then(async (response) => ({
        status: response.status,
        requestId: response.headers.get("x-request-id"),
        body: await response.text(),
      })),
  );
  await sim.waitFor(() => sim.requests.length === 12, 5000);
  first.child.kill("SIGTERM");
  // Give the signal handler a moment to stop the listener, then knock.
  await new Promise((resolve) => setTimeout(resolve, 150));
  const refused = await chat(first.url, caller, false).then(
    async (response) => {
      await response.body?.cancel();
      return response.status;
    },
    (error: Error) => error.name,
  );
  assert.ok(
    refused === 503 || refused === "TypeError",
    `a new call after SIGTERM is refused, got "${refused}"`,
  );

  const results = await Promise.all(inFlight);
  for (const result of results) {
    assert.equal(result.status, 200, result.body);
    assert.match(result.body, /Echo: drain me/);
  }
  assert.equal(await exitOf(first), 0, first.stderr());
  assert.equal(sim.requests.length, 12, "the refused call never went upstream");

  const kv = await Deno.openKv(kvPath);
  const money = await assertLedgerExact(kv, caller.id);
  kv.close();
  const charged = new Set(money.charges.map((entry) => entry.requestId));
  assert.equal(money.charges.length, 12);
  for (const result of results) {
    assert.ok(
      charged.has(result.requestId!),
      `the 200 "${result.requestId}" has its ledger entry`,
    );
  }
  assert.ok(money.charges.every((entry) => entry.amountMicros < 0));

  const second = await spawnGateway(sim, kvPath);
  try {
    const headers = { authorization: `Bearer ${caller.key}` };
    const credits = await (await fetch(`${second.url}/credits`, { headers }))
      .json();
    assert.equal(credits.balance, money.balanceMicros / 1_000_000);
    const traces = await (await fetch(`${second.url}/traces?limit=100`, {
      headers,
    })).json();
    const traced = new Set(
      (traces.data as { requestId: string }[]).map((t) => t.requestId),
    );
    for (const result of results) {
      assert.ok(traced.has(result.requestId!), `trace "${result.requestId}"`);
    }
    const again = await chat(second.url, caller, false);
    assert.equal(again.status, 200, await again.text());
  } finally {
    second.child.kill("SIGTERM");
    assert.equal(await exitOf(second), 0, second.stderr());
  }
  const after = await Deno.openKv(kvPath);
  const final = await assertLedgerExact(after, caller.id);
  after.close();
  assert.equal(final.charges.length, 13);
  await Deno.remove(dir, { recursive: true });
});

/**
 * Three gateway processes (`gateway/main.ts`) on one real PostgreSQL
 * (`GATEWAY_STORE=postgres://…`), in front of one simulator: under 100
 * concurrent calls on a small balance spending never passes the balance and
 * the ledger sums to it exactly; the same with one process killed with
 * SIGKILL mid-load and started again; a caller's rpm and spend cap hold across
 * the three. Each runs twice: gateways on loopback, and gateways reaching the
 * database through a proxy that holds every chunk 2 ms each way (a query's
 * round trip measured 5.5 ms through it, 0.2 ms without), to stand in for
 * separate hosts (this kernel has no `tc netem`).
 */
import assert from "node:assert/strict";
import { createCaller } from "../gateway/state/callers.ts";
import {
  listLeases,
  listLedger,
  readBalance,
} from "../gateway/state/credits/ledger.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { sweepExpiredLeases } from "../gateway/state/credits/sweep.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import { openPostgresStore } from "../gateway/state/store/postgres.ts";
import { listTraces } from "../gateway/state/traces.ts";
import {
  delay,
  type GatewayProcess,
  ledgerSum,
  postJson,
  spawnGateway,
} from "./_gateway_e2e.ts";
import {
  POSTGRES_MISSING,
  reportSkip,
  startDelayProxy,
  startPostgres,
} from "./_postgres.ts";

reportSkip();
const ignore = POSTGRES_MISSING !== undefined;

/** One-way delays between the gateways and the database, ms. */
const DELAYS = [0, 2];

/** The URL gateways use: through a delaying proxy when `delayMs` > 0. */
function gatewayUrl(
  url: string,
  delayMs: number,
): { url: string } & Disposable {
  if (delayMs === 0) return { url, [Symbol.dispose]() {} };
  const port = Number(new URL(url.replace(/^postgres:/, "http:")).port);
  const proxy = startDelayProxy(port, delayMs);
  return {
    url: url.replace(`:${port}/`, `:${proxy.port}/`),
    [Symbol.dispose]: () => proxy.close(),
  };
}

function named(name: string, delayMs: number): string {
  return delayMs === 0 ? name : `${name}, ${delayMs} ms from the database`;
}
const HELLO = [{ role: "user", content: "hello" }];

async function fire(
  gateways: readonly GatewayProcess[],
  key: string,
  n: number,
): Promise<number[]> {
  return await Promise.all(Array.from({ length: n }, async (_, i) => {
    try {
      const response = await postJson(
        `${gateways[i % gateways.length].url}/v1/chat/completions`,
        key,
        { model: "gpt-4o-mini", messages: HELLO, max_tokens: 64 },
      );
      await response.body?.cancel();
      return response.status;
    } catch {
      return 0; // the process was killed under this call
    }
  }));
}

for (const delayMs of DELAYS) {
  Deno.test({
    name: named(
      "three gateway processes on one PostgreSQL never spend past a small balance under 100 concurrent calls, and the ledger sums to it exactly",
      delayMs,
    ),
    ignore,
    async fn() {
      await using pg = await startPostgres();
      const url = await pg.createDatabase("spend");
      using through = gatewayUrl(url, delayMs);
      await using sim = await startSimulator();
      const store = await openPostgresStore(url);
      const gateways: GatewayProcess[] = [];
      try {
        const opening = 1_500;
        const caller = await createCaller(store, {
          name: "small",
          creditsMicros: opening,
        });
        const env = {
          ...sim.env(),
          GATEWAY_STORE: through.url,
          OPENAI_API_KEYS: "sk-pg-1,sk-pg-2",
        };
        gateways.push(
          ...await Promise.all([0, 1, 2].map(() => spawnGateway(env))),
        );
        assert.match(gateways[0].stderr(), /store: PostgreSQL 127\.0\.0\.1:/);
        const statuses: number[] = [];
        for (let round = 0; round < 3; round++) {
          statuses.push(...await fire(gateways, caller.key, 100));
        }
        const served = statuses.filter((s) => s === 200).length;
        assert.ok(served > 0, "some calls were served");
        assert.ok(statuses.includes(402), "the balance ran out");
        assert.deepEqual(
          statuses.filter((s) => s !== 200 && s !== 402),
          [],
        );
        for (const gateway of gateways) {
          assert.equal((await gateway.stop()).code, 0);
        }
        const ledger = await listLedger(store, caller.id);
        const charges = ledger.filter((e) => e.kind === "charge");
        const balance = await readBalance(store, caller.id);
        assert.equal(charges.length, served);
        assert.equal(ledgerSum(ledger), balance);
        assert.ok(balance >= 0, `balance ${balance}`);
        assert.ok(-ledgerSum(charges) <= opening);
        assert.deepEqual(await listLeases(store, caller.id), []);
        assert.equal(
          (await listTraces(store, caller.id, { limit: 1000 })).filter((t) =>
            t.status === 200
          ).length,
          served,
        );
      } finally {
        await Promise.all(gateways.map((g) => g.stop()));
        await store.end();
      }
    },
  });
}

for (const delayMs of DELAYS) {
  Deno.test({
    name: named(
      "one of three gateway processes on PostgreSQL killed with SIGKILL mid-load and restarted: no overspend and an exact ledger",
      delayMs,
    ),
    ignore,
    async fn() {
      await using pg = await startPostgres();
      const url = await pg.createDatabase("killed");
      using through = gatewayUrl(url, delayMs);
      await using sim = await startSimulator({ behaviour: { latencyMs: 5 } });
      const store = await openPostgresStore(url);
      const gateways: GatewayProcess[] = [];
      try {
        const opening = 1_500;
        const caller = await createCaller(store, {
          name: "small",
          creditsMicros: opening,
        });
        const env = {
          ...sim.env(),
          GATEWAY_STORE: through.url,
          OPENAI_API_KEYS: "sk-pg-1,sk-pg-2",
        };
        gateways.push(
          ...await Promise.all([0, 1, 2].map(() => spawnGateway(env))),
        );
        const load = fire(gateways, caller.key, 100);
        await delay(40);
        gateways[0].child.kill("SIGKILL");
        const first = await load;
        await gateways[0].stop();
        gateways[0] = await spawnGateway(env);
        const second = await fire(gateways, caller.key, 100);
        const statuses = [...first, ...second];
        assert.ok(statuses.includes(402), "the balance ran out");
        for (const gateway of gateways) await gateway.stop();

        const ledger = await listLedger(store, caller.id);
        const charges = ledger.filter((e) => e.kind === "charge");
        const balance = await readBalance(store, caller.id);
        // The killed process's lease is still out; the balance counts it.
        assert.equal(ledgerSum(ledger), balance);
        assert.ok(balance >= 0, `balance ${balance}`);
        assert.ok(-ledgerSum(charges) <= opening);
        // Every served call the living processes answered is charged; the
        // killed one may have answered calls whose write-behind charge died
        // with it (the operator's loss, never the caller's).
        assert.ok(charges.length <= statuses.filter((s) => s === 200).length);
        // The sweep returns the dead process's lease: the balance is unchanged.
        await sweepExpiredLeases(store, Date.now() + 16 * 60_000);
        assert.deepEqual(await listLeases(store, caller.id), []);
        assert.equal(await readBalance(store, caller.id), balance);
      } finally {
        await Promise.all(gateways.map((g) => g.stop()));
        await store.end();
      }
    },
  });
}

for (const delayMs of DELAYS) {
  Deno.test({
    name: named(
      "three gateway processes on one PostgreSQL let through exactly a caller's rpm and never pass its spend cap under 200 concurrent calls",
      delayMs,
    ),
    ignore,
    async fn() {
      await using pg = await startPostgres();
      const url = await pg.createDatabase("limits");
      using through = gatewayUrl(url, delayMs);
      await using sim = await startSimulator();
      const store = await openPostgresStore(url);
      const gateways: GatewayProcess[] = [];
      try {
        const rpmCaller = await createCaller(store, {
          name: "rpm",
          creditsMicros: usdToMicros(100),
          limits: { rpm: 37 },
        });
        const spendCaller = await createCaller(store, {
          name: "spend",
          creditsMicros: usdToMicros(100),
          limits: { spend: { amount: 0.002, period: "day" } },
        });
        const env = {
          ...sim.env(),
          GATEWAY_STORE: through.url,
          OPENAI_API_KEYS: "sk-lim-1,sk-lim-2",
        };
        gateways.push(
          ...await Promise.all([0, 1, 2].map(() => spawnGateway(env))),
        );
        const intoMinute = Date.now() % 60_000;
        if (intoMinute > 45_000) await delay(61_000 - intoMinute);
        const rpm = await fire(gateways, rpmCaller.key, 200);
        assert.equal(rpm.filter((s) => s === 200).length, 37);
        assert.equal(rpm.filter((s) => s === 429).length, 163);

        const spend = await fire(gateways, spendCaller.key, 200);
        const served = spend.filter((s) => s === 200).length;
        assert.ok(served > 0 && served < 200, `${served} served`);
        assert.equal(spend.filter((s) => s === 402).length, 200 - served);
        for (const gateway of gateways) {
          assert.equal((await gateway.stop()).code, 0);
        }
        const ledger = await listLedger(store, spendCaller.id);
        const charges = ledger.filter((e) => e.kind === "charge");
        assert.equal(charges.length, served);
        assert.ok(-ledgerSum(charges) <= usdToMicros(0.002));
      } finally {
        await Promise.all(gateways.map((g) => g.stop()));
        await store.end();
      }
    },
  });
}

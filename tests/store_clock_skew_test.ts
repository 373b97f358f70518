/**
 * Two gateway hosts on one PostgreSQL whose clocks disagree by 20 minutes
 * (an injected offset in the second process, `GATEWAY_CLOCK_OFFSET_MS`):
 * time-based state keeps to the database's clock, so a caller's `rpm`
 * holds across both, and a lease one host spends is not swept by the other
 * (which would hand its money out twice: a $0.50 key ended at -$0.46).
 */
import assert from "node:assert/strict";
import { createCaller } from "../gateway/state/callers.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { createBilling } from "../gateway/state/credits/billing.ts";
import {
  listLeases,
  listLedger,
  readBalance,
} from "../gateway/state/credits/ledger.ts";
import { sweepExpiredLeases } from "../gateway/state/credits/sweep.ts";
import { storeClock } from "../gateway/state/store/mod.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import { openPostgresStore } from "../gateway/state/store/postgres.ts";
import { delay, postJson, spawnGateway } from "./_gateway_e2e.ts";
import { POSTGRES_MISSING, reportSkip, startPostgres } from "./_postgres.ts";

reportSkip();
const SKEW_MS = 20 * 60_000;

Deno.test({
  name:
    "the PostgreSQL store keeps to the database's clock whatever this process's says",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    await using pg = await startPostgres();
    const url = await pg.createDatabase("clock");
    const store = await openPostgresStore(url, {
      now: () => Date.now() + SKEW_MS,
    });
    try {
      const database = await store.clockMs();
      assert.ok(
        Math.abs(store.now() - database) < 1_000,
        `store clock ${store.now()}, database ${database}`,
      );
    } finally {
      await store.end();
    }
  },
});

Deno.test({
  name:
    "a caller's rpm holds across two gateways on one PostgreSQL whose clocks are 20 minutes apart",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    await using pg = await startPostgres();
    await using sim = await startSimulator();
    const url = await pg.createDatabase("skew");
    const store = await openPostgresStore(url);
    const caller = await createCaller(store, {
      name: "skewed",
      creditsMicros: usdToMicros(5),
      limits: { rpm: 5 },
    });
    const env = {
      ...sim.env(),
      GATEWAY_STORE: url,
      GATEWAY_JOURNAL_DIR: "off",
      OPENAI_API_KEYS: "sk-skew-0123456789abcdefghij",
    };
    const a = await spawnGateway(env);
    const b = await spawnGateway({
      ...env,
      GATEWAY_CLOCK_OFFSET_MS: String(SKEW_MS),
    });
    try {
      // Ten calls well inside one of the database's minutes.
      while (new Date(await store.clockMs()).getUTCSeconds() > 40) {
        await delay(1_000);
      }
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) {
        const gateway = i % 2 === 0 ? a : b;
        const response = await postJson(
          `${gateway.url}/v1/chat/completions`,
          caller.key,
          {
            model: "gpt-4o-mini",
            messages: [{ role: "user", content: "hi" }],
            max_tokens: 8,
          },
        );
        await response.body?.cancel();
        statuses.push(response.status);
      }
      assert.equal(
        statuses.filter((status) => status === 200).length,
        5,
        `statuses ${statuses.join(", ")}`,
      );
      assert.equal(statuses.filter((status) => status === 429).length, 5);
    } finally {
      await a.stop();
      await b.stop();
      await store.end();
    }
  },
});

Deno.test({
  name:
    "a lease one host spends is not swept by a host whose clock is 20 minutes ahead, so a $0.50 key is never spent twice",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    await using pg = await startPostgres();
    const url = await pg.createDatabase("lease_skew");
    const a = await openPostgresStore(url);
    const b = await openPostgresStore(url, {
      now: () => Date.now() + SKEW_MS,
    });
    try {
      const caller = await createCaller(a, {
        name: "half-dollar",
        creditsMicros: usdToMicros(0.5),
      });
      const billingA = createBilling(a, { now: storeClock(a) });
      const billingB = createBilling(b, { now: storeClock(b) });
      const held = await billingA.reserve(caller.id, usdToMicros(0.4));
      assert.ok(held.ok);
      // Host B's sweep, on the clock it keeps time-based state by: the
      // lease expires in 15 minutes of the database's time, not 20 ago.
      await sweepExpiredLeases(b, storeClock(b)());
      assert.equal((await listLeases(b, caller.id)).length, 1);
      const second = await billingB.reserve(caller.id, usdToMicros(0.4));
      assert.equal(second.ok, false, "the leased $0.40 is not lent again");
      await billingA.settle({
        reservation: held.reservation,
        costMicros: usdToMicros(0.4),
        usage: { inputTokens: 10, outputTokens: 10, cachedInputTokens: 0 },
        trace: {
          requestId: "req_skew",
          traceId: "t_skew",
          callerId: caller.id,
          route: "chat",
          status: 200,
          stream: false,
          inputTokens: 10,
          outputTokens: 10,
          cachedTokens: 0,
          costMicros: usdToMicros(0.4),
          latencyMs: 1,
          time: Date.now(),
        },
      });
      await Promise.all([billingA.flush(), billingB.flush()]);
      const balance = await readBalance(a, caller.id);
      assert.equal(balance, usdToMicros(0.1));
      const ledger = await listLedger(a, caller.id);
      assert.equal(
        ledger.reduce((sum, entry) => sum + entry.amountMicros, 0),
        balance,
      );
    } finally {
      await a.end();
      await b.end();
    }
  },
});

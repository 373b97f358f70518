/**
 * The database going away under a running gateway, and coming back (the
 * nearest a test gets to a failover on one machine: the server stops with
 * its connections cut, then starts again on the same address; or a proxy in
 * front of it loses every connection without telling the client):
 *
 * - the store waits for it: operations that need it wait for one probe loop
 *   to find it back, and are answered then, without an error; pooled
 *   connections left stale are replaced the same way;
 * - a gateway's call that needs the store waits for it and is answered
 *   once it is back; one its lease covers is answered at once; past
 *   `GATEWAY_STORE_WAIT_MS` a call is a 503 with `retry-after`; `/health`
 *   and the admin API answer at once meanwhile; the ledger stays exact.
 */
import assert from "node:assert/strict";
import { createCaller } from "../gateway/state/callers.ts";
import { createBilling } from "../gateway/state/credits/billing.ts";
import {
  listLeases,
  listLedger,
  readBalance,
} from "../gateway/state/credits/ledger.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import { openPostgresStore } from "../gateway/state/store/postgres.ts";
import { isStoreUnreachable } from "../gateway/state/store/outage.ts";
import { delay, ledgerSum, postJson, spawnGateway } from "./_gateway_e2e.ts";
import {
  POSTGRES_MISSING,
  reportSkip,
  startCutProxy,
  startPostgres,
} from "./_postgres.ts";

reportSkip();
const HELLO = [{ role: "user", content: "hello" }];
const ADMIN_TOKEN = "outage-admin-token-0123456789";

Deno.test({
  name:
    "stale pooled connections after the database's connections are lost are replaced without an error, for reads and for a reservation's commit",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    await using pg = await startPostgres();
    const url = await pg.createDatabase("stale");
    const proxy = startCutProxy(pg.port);
    const store = await openPostgresStore(
      url.replace(`:${pg.port}/`, `:${proxy.port}/`),
    );
    try {
      const caller = await createCaller(store, {
        name: "stale",
        creditsMicros: usdToMicros(1),
      });
      // Ten queries at once: the pool opens its ten connections.
      await Promise.all(Array.from({ length: 10 }, () => store.get(["warm"])));
      const before = proxy.accepted;
      proxy.cut();
      const balances = await Promise.all(
        Array.from({ length: 10 }, () => readBalance(store, caller.id)),
      );
      assert.deepEqual(balances, Array(10).fill(usdToMicros(1)));
      assert.ok(proxy.accepted > before, "new connections replaced them");

      // A probe on a stale connection goes again at once, on another: the
      // pool's ten stale connections cost no back-off.
      proxy.cut();
      const billing = createBilling(store);
      const started = performance.now();
      const held = await billing.reserve(caller.id, 2_000);
      assert.ok(held.ok, "the reservation is granted");
      const took = performance.now() - started;
      assert.ok(took < 3_000, `reserved in ${took} ms`);
      await billing.settle({
        reservation: held.reservation,
        costMicros: 1_500,
        usage: { inputTokens: 10, outputTokens: 10, cachedInputTokens: 0 },
        trace: {
          requestId: "req_stale",
          traceId: "t_stale",
          callerId: caller.id,
          route: "chat",
          status: 200,
          stream: false,
          inputTokens: 10,
          outputTokens: 10,
          cachedTokens: 0,
          costMicros: 1_500,
          latencyMs: 1,
          time: Date.now(),
        },
      });
      await billing.flush();
      const ledger = await listLedger(store, caller.id);
      assert.equal(ledger.filter((e) => e.kind === "charge").length, 1);
      assert.equal(await readBalance(store, caller.id), ledgerSum(ledger));
      assert.equal(ledgerSum(ledger), usdToMicros(1) - 1_500);
      assert.deepEqual(await listLeases(store, caller.id), []);
    } finally {
      await store.end();
      proxy.close();
    }
  },
});

Deno.test({
  name:
    "while the database is down, fifty waiting reads cost it one probe at a time, and each is answered once it is back",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    await using pg = await startPostgres();
    const url = await pg.createDatabase("probe");
    const proxy = startCutProxy(pg.port);
    const store = await openPostgresStore(
      url.replace(`:${pg.port}/`, `:${proxy.port}/`),
      { waitMs: 20_000 },
    );
    try {
      await store.set(["k"], "v");
      await pg.down();
      // The first read finds the database away: the outage begins.
      const first = store.get<string>(["k"]);
      while (store.outage.reachable) await delay(10);
      const before = proxy.accepted;
      const started = performance.now();
      const reads = Promise.all(
        Array.from({ length: 50 }, () => store.get<string>(["k"])),
      );
      await delay(2_000);
      // One probe at a time, 50, 100, 200... up to 1 000 ms apart: the
      // fifty waiting reads send nothing.
      const attempts = proxy.accepted - before;
      assert.ok(attempts <= 10, `${attempts} connections in 2 s`);
      assert.equal(store.outage.reachable, false);
      await pg.up();
      const values = await Promise.all([first, ...await reads]);
      assert.deepEqual(values.map((entry) => entry.value), Array(51).fill("v"));
      assert.ok(performance.now() - started >= 2_000);
      assert.equal(store.outage.reachable, true);
    } finally {
      await store.end();
      proxy.close();
    }
  },
});

Deno.test({
  name:
    "a database that stops answering without closing anything fails reads and commits at the wait's bound, not never",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    await using pg = await startPostgres();
    const url = await pg.createDatabase("silent");
    const proxy = startCutProxy(pg.port);
    const store = await openPostgresStore(
      url.replace(`:${pg.port}/`, `:${proxy.port}/`),
      { waitMs: 1_500 },
    );
    try {
      await store.set(["k"], "v");
      proxy.freeze();
      for (
        const operation of [
          () => store.get(["k"]),
          () => store.set(["k"], "w"),
        ]
      ) {
        const started = performance.now();
        const error = await operation().then(() => undefined, (e) => e);
        const took = performance.now() - started;
        assert.ok(error instanceof Error, "it fails");
        assert.ok(isStoreUnreachable(error), String(error));
        assert.ok(took < 3_000, `failed after ${took} ms`);
      }
      assert.equal(store.outage.reachable, false);
    } finally {
      proxy.close();
      await store.end();
    }
  },
});

Deno.test({
  name:
    "a gateway on PostgreSQL makes a call that needs the database wait for it and answers it once it is back, answers a leased caller at once, and past GATEWAY_STORE_WAIT_MS answers 503 with retry-after; /health and admin answer at once",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    await using pg = await startPostgres();
    const url = await pg.createDatabase("outage");
    await using sim = await startSimulator();
    let store = await openPostgresStore(url);
    const leased = await createCaller(store, {
      name: "leased",
      creditsMicros: usdToMicros(10),
    });
    const fresh = await createCaller(store, {
      name: "fresh",
      creditsMicros: usdToMicros(10),
    });
    await store.end();
    const gateway = await spawnGateway({
      ...sim.env(),
      GATEWAY_STORE: url,
      GATEWAY_STORE_WAIT_MS: "4000",
      GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
      OPENAI_API_KEYS: "sk-outage-1",
    });
    const call = async (key: string) => {
      const started = performance.now();
      const response = await postJson(
        `${gateway.url}/v1/chat/completions`,
        key,
        { model: "gpt-4o-mini", messages: HELLO, max_tokens: 16 },
      );
      await response.body?.cancel();
      return {
        status: response.status,
        retryAfter: response.headers.get("retry-after"),
        ms: performance.now() - started,
      };
    };
    const timed = async (path: string, headers: Record<string, string>) => {
      const started = performance.now();
      const response = await fetch(`${gateway.url}${path}`, { headers });
      return {
        status: response.status,
        body: await response.json(),
        retryAfter: response.headers.get("retry-after"),
        ms: performance.now() - started,
      };
    };
    let answered = 0;
    try {
      for (let i = 0; i < 3; i++) {
        assert.equal((await call(leased.key)).status, 200);
        answered++;
      }
      await delay(1_500); // the lease goes back when the caller is idle
      await pg.down();
      // The lease is gone: this call needs a commit, and waits for it.
      const waiting = call(leased.key);
      await delay(500);
      const health = await timed("/health", {});
      assert.equal(health.status, 200);
      assert.equal(health.body.ok, true);
      assert.equal(health.body.store.reachable, false);
      assert.ok(health.ms < 1_000, `/health took ${health.ms} ms`);
      const admin = await timed("/admin/keys", {
        authorization: `Bearer ${ADMIN_TOKEN}`,
      });
      assert.equal(admin.status, 503);
      assert.equal(admin.body.error.code, "store_unavailable");
      assert.equal(admin.retryAfter, "5");
      assert.ok(admin.ms < 1_000, `admin took ${admin.ms} ms`);
      await delay(1_000);
      await pg.up();
      const waited = await waiting;
      assert.equal(waited.status, 200, "answered once the database is back");
      assert.ok(waited.ms >= 1_400, `waited ${waited.ms} ms`);
      answered++;

      // The lease this caller now holds covers its next calls: answered at
      // once while the database is away; a caller never seen must wait,
      // and past the bound is refused with retry-after.
      await pg.down();
      const refused = call(fresh.key);
      for (let i = 0; i < 3; i++) {
        const covered = await call(leased.key);
        assert.equal(covered.status, 200);
        assert.ok(covered.ms < 2_000, `a leased call took ${covered.ms} ms`);
        answered++;
      }
      const late = await refused;
      assert.equal(late.status, 503);
      assert.equal(late.retryAfter, "5");
      assert.ok(late.ms >= 3_500 && late.ms < 8_000, `refused at ${late.ms}`);
      const gone = await timed("/health", {});
      assert.equal(gone.status, 503);
      assert.equal(gone.body.ok, false);
      await pg.up();
      let back = 0;
      for (let i = 0; i < 40 && back !== 200; i++) {
        back = (await call(fresh.key)).status;
        if (back !== 200) await delay(250);
      }
      assert.equal(back, 200, "served again once the database is back");
      answered++;
      assert.equal((await gateway.stop()).code, 0);
      store = await openPostgresStore(url);
      let charges = 0;
      for (const caller of [leased, fresh]) {
        const ledger = await listLedger(store, caller.id);
        charges += ledger.filter((e) => e.kind === "charge").length;
        assert.equal(ledgerSum(ledger), await readBalance(store, caller.id));
        assert.deepEqual(await listLeases(store, caller.id), []);
      }
      assert.equal(charges, answered, "every answered call charged once");
      await store.end();
    } finally {
      await gateway.stop();
    }
  },
});

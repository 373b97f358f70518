/**
 * The database going away under a running gateway, and coming back (the
 * nearest a test gets to a failover on one machine: the server stops with
 * its connections cut, then starts again on the same address): while it is
 * away calls fail with a 5xx and nobody is charged for them; once it is back
 * the same process serves and charges again without a restart, and the
 * ledger still sums to the balance.
 */
import assert from "node:assert/strict";
import { createCaller } from "../gateway/state/callers.ts";
import { listLedger, readBalance } from "../gateway/state/credits/ledger.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import { openPostgresStore } from "../gateway/state/store/postgres.ts";
import { delay, ledgerSum, postJson, spawnGateway } from "./_gateway_e2e.ts";
import { POSTGRES_MISSING, reportSkip, startPostgres } from "./_postgres.ts";

reportSkip();
const HELLO = [{ role: "user", content: "hello" }];

Deno.test({
  name:
    "a gateway on PostgreSQL fails calls with a 5xx while the database is down and serves again once it is back, the ledger exact",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    await using pg = await startPostgres();
    const url = await pg.createDatabase("outage");
    await using sim = await startSimulator();
    let store = await openPostgresStore(url);
    const caller = await createCaller(store, {
      name: "outage",
      creditsMicros: usdToMicros(10),
    });
    await store.end();
    const gateway = await spawnGateway({
      ...sim.env(),
      GATEWAY_STORE: url,
      OPENAI_API_KEYS: "sk-outage-1",
    });
    const call = async () => {
      const response = await postJson(
        `${gateway.url}/v1/chat/completions`,
        caller.key,
        { model: "gpt-4o-mini", messages: HELLO, max_tokens: 16 },
      );
      await response.body?.cancel();
      return response.status;
    };
    try {
      for (let i = 0; i < 3; i++) assert.equal(await call(), 200);
      await delay(1_500); // the lease goes back when the caller is idle
      await pg.down();
      await delay(1_100); // the key cache
      const away = await call();
      assert.ok(away >= 500, `status ${away} while the database is down`);
      await pg.up();
      let back = 0;
      for (let i = 0; i < 40 && back !== 200; i++) {
        back = await call();
        if (back !== 200) await delay(250);
      }
      assert.equal(back, 200, "served again once the database is back");
      for (let i = 0; i < 3; i++) assert.equal(await call(), 200);
      assert.equal((await gateway.stop()).code, 0);
      store = await openPostgresStore(url);
      const ledger = await listLedger(store, caller.id);
      const charges = ledger.filter((e) => e.kind === "charge");
      // Seven calls were served (three before, the first back, three after);
      // a write-behind charge is lost only when its settle meets the outage,
      // and none of these did.
      assert.equal(charges.length, 7);
      assert.equal(ledgerSum(ledger), await readBalance(store, caller.id));
      await store.end();
    } finally {
      await gateway.stop();
    }
  },
});

/**
 * Two gateway hosts on one PostgreSQL whose clocks disagree by 20 minutes
 * (an injected offset in the second process, `GATEWAY_CLOCK_OFFSET_MS`):
 * time-based state keeps to the database's clock, so a caller's `rpm`
 * holds across both.
 */
import assert from "node:assert/strict";
import { createCaller } from "../gateway/state/callers.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
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

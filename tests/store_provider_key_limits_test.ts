/**
 * A provider key's RPM across three gateway processes, on both stores (a KV
 * file and PostgreSQL): with `OPENAI_RPM=60` and one key, waves of concurrent
 * calls spread over the three processes within one calendar minute reach
 * the upstream at most 60 times (the stated bound: `rpm` a calendar minute
 * for the key as a whole), and at least 60 less two slices a process
 * (what processes may claim and leave unused).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createCaller } from "../gateway/state/callers.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import { openPostgresStore } from "../gateway/state/store/postgres.ts";
import {
  delay,
  type GatewayProcess,
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
const RPM = 60;
const PROCESSES = 3;
/** A slice is ceil(rpm / 32) requests; a process strands at most two. */
const STRANDED = PROCESSES * 2 * Math.ceil(RPM / 32);
const HELLO = [{ role: "user", content: "hello" }];

async function threeGatewaysOneKey(
  store: { env: Record<string, string>; kv: Deno.Kv },
): Promise<void> {
  await using sim = await startSimulator();
  const caller = await createCaller(store.kv, {
    name: "many",
    creditsMicros: usdToMicros(100),
  });
  const gateways: GatewayProcess[] = [];
  try {
    const env = {
      ...sim.env(),
      ...store.env,
      OPENAI_API_KEYS: "sk-one-limited-key",
      OPENAI_RPM: String(RPM),
    };
    gateways.push(
      ...await Promise.all(
        Array.from({ length: PROCESSES }, () => spawnGateway(env)),
      ),
    );
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 40_000) await delay(60_500 - intoMinute);
    const minute = Math.floor(Date.now() / 60_000);
    const statuses: number[] = [];
    // Waves, so that calls refused while a process claims its next slice
    // are followed by calls that find it.
    for (let wave = 0; wave < 16; wave++) {
      statuses.push(
        ...await Promise.all(Array.from({ length: 24 }, async (_, i) => {
          const response = await postJson(
            `${gateways[i % PROCESSES].url}/v1/chat/completions`,
            caller.key,
            { model: "gpt-4o-mini", messages: HELLO, max_tokens: 16 },
          );
          await response.body?.cancel();
          return response.status;
        })),
      );
      await delay(250);
    }
    assert.equal(Math.floor(Date.now() / 60_000), minute, "one minute");
    const upstream = sim.requests.filter((r) => r.provider === "openai")
      .length;
    const served = statuses.filter((s) => s === 200).length;
    console.log(
      `provider key at ${RPM} RPM, ${PROCESSES} processes, ${statuses.length} calls: upstream saw ${upstream}, ${served} served, ${
        statuses.filter((s) => s === 429).length
      } refused with 429`,
    );
    assert.equal(upstream, served);
    assert.ok(upstream <= RPM, `upstream saw ${upstream} > ${RPM}`);
    assert.ok(upstream >= RPM - STRANDED, `only ${upstream} served`);
    assert.deepEqual(statuses.filter((s) => s !== 200 && s !== 429), []);
  } finally {
    for (const gateway of gateways) {
      assert.equal((await gateway.stop()).code, 0);
    }
  }
}

Deno.test("three gateway processes on one KV file send a provider key at most its RPM", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = join(dir, "gateway.kv");
  const kv = await Deno.openKv(kvPath);
  try {
    await threeGatewaysOneKey({ env: { GATEWAY_KV_PATH: kvPath }, kv });
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "three gateway processes on one PostgreSQL send a provider key at most its RPM",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    await using pg = await startPostgres();
    const url = await pg.createDatabase("keyrpm");
    const kv = await openPostgresStore(url);
    try {
      await threeGatewaysOneKey({ env: { GATEWAY_STORE: url }, kv });
    } finally {
      await kv.end();
    }
  },
});

Deno.test({
  name:
    "three gateway processes 2 ms from one PostgreSQL send a provider key at most its RPM",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    await using pg = await startPostgres();
    const url = await pg.createDatabase("keyrpmdelay");
    const proxy = startDelayProxy(pg.port, 2);
    const kv = await openPostgresStore(url);
    try {
      await threeGatewaysOneKey({
        env: {
          GATEWAY_STORE: url.replace(`:${pg.port}/`, `:${proxy.port}/`),
        },
        kv,
      });
    } finally {
      await kv.end();
      proxy.close();
    }
  },
});

async function cooldownShared(
  store: { env: Record<string, string>; kv: Deno.Kv },
): Promise<void> {
  const [a, b] = ["sk-shared-cooldown-key-a", "sk-shared-cooldown-key-b"];
  await using sim = await startSimulator();
  // The first request on key a, from whichever process, gets a 429 asking
  // for 30 s; every other request is answered.
  sim.enqueue({
    match: { key: a },
    behaviour: { status: 429, retryAfter: 30 },
  });
  const caller = await createCaller(store.kv, {
    name: "cooling",
    creditsMicros: usdToMicros(100),
  });
  const gateways: GatewayProcess[] = [];
  try {
    const env = {
      ...sim.env(),
      ...store.env,
      OPENAI_API_KEYS: `${a},${b}`,
    };
    gateways.push(
      ...await Promise.all(
        Array.from({ length: PROCESSES }, () => spawnGateway(env)),
      ),
    );
    const onA = () => sim.requests.filter((r) => r.key === a).length;
    let refusedAt = 0;
    let lateOnA = 0;
    const started = Date.now();
    while (Date.now() - started < 10_000) {
      const statuses = await Promise.all(gateways.map(async (gateway) => {
        const response = await postJson(
          `${gateway.url}/v1/chat/completions`,
          caller.key,
          { model: "gpt-4o-mini", messages: HELLO, max_tokens: 16 },
        );
        await response.body?.cancel();
        return response.status;
      }));
      assert.deepEqual(statuses, [200, 200, 200]);
      if (!refusedAt && onA() > 0) refusedAt = Date.now();
      if (refusedAt && Date.now() - refusedAt > 2_500) {
        if (lateOnA === 0) lateOnA = onA();
        else if (Date.now() - refusedAt > 4_000) break;
      }
      await delay(50);
    }
    assert.ok(refusedAt > 0, "key a was used");
    // From 2.5 s after the 429 on, no process sends key a: each read the
    // cool-down the one that met it stored (without sharing, the two others
    // would go on using key a, which answers them).
    assert.equal(onA(), lateOnA, "key a was used after its cool-down spread");
  } finally {
    for (const gateway of gateways) await gateway.stop();
  }
}

Deno.test("a provider key cooling down after a 429 in one process cools down in the others (KV file)", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = join(dir, "gateway.kv");
  const kv = await Deno.openKv(kvPath);
  try {
    await cooldownShared({ env: { GATEWAY_KV_PATH: kvPath }, kv });
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "a provider key cooling down after a 429 in one process cools down in the others (PostgreSQL)",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    await using pg = await startPostgres();
    const url = await pg.createDatabase("cooldown");
    const kv = await openPostgresStore(url);
    try {
      await cooldownShared({ env: { GATEWAY_STORE: url }, kv });
    } finally {
      await kv.end();
    }
  },
});

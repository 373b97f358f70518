/**
 * Three gateway processes (`gateway/main.ts`) on one KV file, in front of one
 * simulator, under concurrent load from one caller: one exact ledger, the
 * simulator's usage × price equal to what was charged, clean SIGTERM exits,
 * and no provider key in any process's log.
 */
import assert from "node:assert/strict";
import { usageReport } from "../gateway/state/usage_report.ts";
import { join } from "node:path";
import { createCaller } from "../gateway/state/callers.ts";
import {
  listLeases,
  listLedger,
  readBalance,
} from "../gateway/state/credits/ledger.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { providerKeyId } from "../gateway/upstream/key_pool.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import { listTraces } from "../gateway/state/traces.ts";
import { callBody, callPath, readSse } from "./_gateway_routes.ts";
import {
  expectedCost,
  type GatewayProcess,
  ledgerSum,
  postJson,
  type SimUsage,
  spawnGateway,
} from "./_gateway_e2e.ts";

const PROCESSES = 3;
const CALLS_PER_PROCESS = 60;
const CONCURRENCY = 10;

/** Usage the simulator reports, by provider key. */
const USAGE: Record<string, SimUsage> = {
  "sk-mp-openai-1": { inputTokens: 500, cachedTokens: 100, outputTokens: 60 },
  "sk-mp-openai-2": { inputTokens: 420, cachedTokens: 0, outputTokens: 75 },
  "sk-mp-anthropic-1": {
    inputTokens: 700,
    cachedTokens: 300,
    outputTokens: 40,
  },
  "sk-mp-anthropic-2": { inputTokens: 650, cachedTokens: 0, outputTokens: 55 },
};
/** Refused by the simulator with 401: each process takes it out of its pool. */
const REVOKED_KEY = "sk-mp-openai-revoked";

Deno.test("three gateway processes on one KV file keep one exact ledger that matches the simulator's usage × price", async () => {
  const dir = await Deno.makeTempDir();
  const sim = await startSimulator({
    keys: {
      ...Object.fromEntries(
        Object.entries(USAGE).map(([key, usage]) => [key, { usage }]),
      ),
      [REVOKED_KEY]: { status: 401 },
    },
  });
  const gateways: GatewayProcess[] = [];
  try {
    const kvPath = join(dir, "gateway.kv");
    const opening = usdToMicros(20);
    const setup = await Deno.openKv(kvPath);
    const caller = await createCaller(setup, {
      name: "shared",
      creditsMicros: opening,
    });
    setup.close();

    const env = {
      ...sim.env(),
      GATEWAY_KV_PATH: kvPath,
      OPENAI_API_KEYS: `${REVOKED_KEY},sk-mp-openai-1,sk-mp-openai-2`,
      ANTHROPIC_API_KEYS: "sk-mp-anthropic-1,sk-mp-anthropic-2",
    };
    gateways.push(
      ...await Promise.all(
        Array.from({ length: PROCESSES }, () => spawnGateway(env)),
      ),
    );

    const calls = gateways.flatMap((gateway) =>
      Array.from({ length: CALLS_PER_PROCESS }, (_, i) => async () => {
        const [route, modelId] = i % 2 === 0
          ? ["chat", "gpt-4o"] as const
          : ["messages", "claude-haiku-4-5"] as const;
        const stream = i % 3 === 0;
        const response = await postJson(
          gateway.url + callPath(route, modelId, stream),
          caller.key,
          callBody(route, modelId, stream, `call ${i}`),
        );
        assert.equal(response.status, 200, await response.clone().text());
        if (stream) await readSse(response);
        else await response.body?.cancel();
      })
    );
    const queue = [...calls];
    await Promise.all(
      Array.from({ length: CONCURRENCY * PROCESSES }, async () => {
        for (let call = queue.shift(); call; call = queue.shift()) await call();
      }),
    );

    const exits = await Promise.all(gateways.map((gateway) => gateway.stop()));
    for (const { code, stderr } of exits) assert.equal(code, 0, stderr);

    // What the simulator generated, priced here.
    const answered = sim.requests.filter((request) => request.status === 200);
    assert.equal(answered.length, PROCESSES * CALLS_PER_PROCESS);
    const generated = answered.reduce((sum, request) => {
      const modelId = request.provider === "openai"
        ? "gpt-4o"
        : "claude-haiku-4-5";
      return sum + expectedCost(USAGE[request.key!], modelId);
    }, 0);
    // Each process takes the refused key out at its first 401; calls that
    // leased it concurrently before that 401 still met it once each.
    const refused = sim.requests.filter((request) =>
      request.key === REVOKED_KEY
    ).length;
    assert.ok(
      refused >= PROCESSES && refused <= PROCESSES * CONCURRENCY,
      `the refused key was used ${refused} times`,
    );

    const kv = await Deno.openKv(kvPath);
    try {
      const ledger = await listLedger(kv, caller.id);
      const charges = ledger.filter((entry) => entry.kind === "charge");
      assert.equal(charges.length, PROCESSES * CALLS_PER_PROCESS);
      assert.equal(
        new Set(charges.map((entry) => entry.requestId)).size,
        charges.length,
      );
      const finalBalance = await readBalance(kv, caller.id);
      assert.equal(ledgerSum(ledger), finalBalance);
      assert.equal(opening - finalBalance, -ledgerSum(charges));
      assert.equal(-ledgerSum(charges), generated);
      assert.deepEqual(
        await listLeases(kv, caller.id),
        [],
        "a lease was left holding money",
      );
      assert.equal(
        (await listTraces(kv, caller.id, { limit: 1000 })).length,
        charges.length,
      );
      // The usage aggregates the three processes added to: one picture,
      // equal to the ledger, at every bucket size.
      for (const range of ["1h", "24h", "30d"]) {
        const report = await usageReport(kv, range, { callerId: caller.id });
        assert.equal(report.totals.requests, charges.length, range);
        assert.equal(
          Math.round(report.totals.costUsd * 1e6),
          -ledgerSum(charges),
          range,
        );
        assert.equal(
          report.totals.inputTokens,
          charges.reduce((n, c) => n + (c.inputTokens ?? 0), 0),
          range,
        );
      }
    } finally {
      kv.close();
    }

    const revokedId = providerKeyId("openai", REVOKED_KEY);
    for (const { stderr } of exits) {
      assert.ok(stderr.includes(revokedId), stderr);
      for (const key of [REVOKED_KEY, ...Object.keys(USAGE)]) {
        assert.ok(!stderr.includes(key), `"${key}" in a log: ${stderr}`);
      }
    }
  } finally {
    await Promise.all(gateways.map((gateway) => gateway.stop()));
    await sim.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("three gateway processes on one KV file never let one caller spend past the balance", async () => {
  const dir = await Deno.makeTempDir();
  const usage = { inputTokens: 50, cachedTokens: 0, outputTokens: 200 };
  // A slow upstream keeps every reservation open while the others are taken.
  const sim = await startSimulator({ behaviour: { latencyMs: 500, usage } });
  const gateways: GatewayProcess[] = [];
  try {
    const kvPath = join(dir, "gateway.kv");
    // About 15 reservations of gpt-4o with max_tokens 1000 (~$0.01 each).
    const opening = 150_000;
    const setup = await Deno.openKv(kvPath);
    const caller = await createCaller(setup, {
      name: "tight",
      creditsMicros: opening,
    });
    setup.close();
    const env = {
      ...sim.env(),
      GATEWAY_KV_PATH: kvPath,
      OPENAI_API_KEYS: "sk-mp-tight-1,sk-mp-tight-2",
    };
    gateways.push(
      ...await Promise.all(
        Array.from({ length: PROCESSES }, () => spawnGateway(env)),
      ),
    );
    const body = {
      model: "gpt-4o",
      max_tokens: 1_000,
      messages: [{ role: "user", content: "count to three" }],
    };
    const statuses = await Promise.all(
      gateways.flatMap((gateway) =>
        Array.from({ length: 20 }, async () => {
          const response = await postJson(
            `${gateway.url}/chat/completions`,
            caller.key,
            body,
          );
          const text = await response.text();
          if (response.status !== 200) {
            assert.equal(response.status, 402, text);
            assert.match(JSON.parse(text).error.message, /credits/i);
          }
          return response.status;
        })
      ),
    );
    const exits = await Promise.all(gateways.map((gateway) => gateway.stop()));
    for (const { code, stderr } of exits) assert.equal(code, 0, stderr);

    const succeeded = statuses.filter((status) => status === 200).length;
    assert.ok(succeeded > 0 && succeeded < statuses.length, `${succeeded}`);
    assert.equal(sim.requests.length, succeeded);
    const kv = await Deno.openKv(kvPath);
    try {
      const ledger = await listLedger(kv, caller.id);
      const charges = ledger.filter((entry) => entry.kind === "charge");
      assert.equal(charges.length, succeeded);
      const spent = -ledgerSum(charges);
      assert.equal(spent, succeeded * expectedCost(usage, "gpt-4o"));
      assert.ok(spent <= opening);
      const finalBalance = await readBalance(kv, caller.id);
      assert.equal(opening - finalBalance, spent);
      assert.equal(ledgerSum(ledger), finalBalance);
    } finally {
      kv.close();
    }
  } finally {
    await Promise.all(gateways.map((gateway) => gateway.stop()));
    await sim.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * Caller limits: refusals in the route's convention that say which limit
 * and when it frees up, nothing forwarded and nothing charged; and exactness
 * across three gateway processes on one KV under 200 concurrent calls.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createCaller, setCallerLimits } from "../gateway/state/callers.ts";
import { listLedger, readBalance } from "../gateway/state/credits/ledger.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import {
  type GatewayProcess,
  ledgerSum,
  postJson,
  spawnGateway,
} from "./_gateway_e2e.ts";
import { startHarness } from "./_gateway_harness.ts";

const HELLO = [{ role: "user", content: "hello" }];

Deno.test("each limit refuses with its status, says when it frees up, forwards nothing and charges nothing", async () => {
  await using h = await startHarness();
  const call = (model = "gpt-4o-mini", route = "/v1/chat/completions") =>
    h.post(route, { model, messages: HELLO, max_tokens: 16 });

  // Requests per minute.
  await setCallerLimits(h.kv, h.caller.id, { rpm: 2 });
  await new Promise((resolve) => setTimeout(resolve, 1_100)); // the key cache
  for (let i = 0; i < 2; i++) {
    const ok = await call();
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
  }
  const forwarded = h.sim.requests.length;
  const rate = await call();
  assert.equal(rate.status, 429);
  const retryAfter = Number(rate.headers.get("retry-after"));
  assert.ok(retryAfter >= 1 && retryAfter <= 60);
  assert.match((await rate.json()).error.message, /2 requests per minute/);
  assert.equal(h.sim.requests.length, forwarded);

  // Tokens per minute: this call may use more than the limit.
  await setCallerLimits(h.kv, h.caller.id, { tpm: 10 });
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  const tokens = await call();
  assert.equal(tokens.status, 429);
  assert.match((await tokens.json()).error.message, /10 tokens per minute/);

  // Spend per period, in Anthropic's convention on /messages.
  await setCallerLimits(h.kv, h.caller.id, {
    spend: { amount: 0.000001, period: "day" },
  });
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  const spent = await h.post("/v1/messages", {
    model: "claude-haiku-4-5",
    max_tokens: 16,
    messages: HELLO,
  });
  assert.equal(spent.status, 402);
  const body = await spent.json();
  assert.equal(body.type, "error");
  assert.match(body.error.message, /per day is reached.*resets at \d{4}-/);

  // The model allowlist, and expiry.
  await setCallerLimits(h.kv, h.caller.id, { models: ["gpt-4o-mini"] });
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  const model = await call("gpt-4o");
  assert.equal(model.status, 403);
  assert.match((await model.json()).error.message, /may call: gpt-4o-mini/);
  await setCallerLimits(h.kv, h.caller.id, {
    expiresAt: new Date(Date.now() - 1000).toISOString(),
  });
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  const expired = await call();
  assert.equal(expired.status, 401);
  assert.match((await expired.json()).error.message, /expired/);

  assert.equal(h.sim.requests.length, forwarded);
  const charges = (await listLedger(h.kv, h.caller.id)).filter((e) =>
    e.kind === "charge"
  );
  assert.equal(charges.length, 2, "only the two admitted calls are charged");
});

Deno.test("three gateway processes on one KV let through exactly a key's requests per minute and spend cap under 200 concurrent calls", async () => {
  const dir = await Deno.makeTempDir();
  const sim = await startSimulator();
  const gateways: GatewayProcess[] = [];
  try {
    const kvPath = join(dir, "gateway.kv");
    const kv = await Deno.openKv(kvPath);
    const rpmCaller = await createCaller(kv, {
      name: "rpm",
      creditsMicros: usdToMicros(100),
      limits: { rpm: 37 },
    });
    const spendCaller = await createCaller(kv, {
      name: "spend",
      creditsMicros: usdToMicros(100),
      limits: { spend: { amount: 0.002, period: "day" } },
    });
    const env: Record<string, string> = {
      ...sim.env(),
      GATEWAY_KV_PATH: kvPath,
      OPENAI_API_KEYS: "sk-lim-1,sk-lim-2",
    };
    for (let i = 0; i < 3; i++) gateways.push(await spawnGateway(env));
    const fire = (key: string, n: number) =>
      Promise.all(Array.from({ length: n }, async (_, i) => {
        const response = await postJson(
          `${gateways[i % 3].url}/v1/chat/completions`,
          key,
          { model: "gpt-4o-mini", messages: HELLO, max_tokens: 64 },
        );
        await response.body?.cancel();
        return response.status;
      }));
    // The same minute for all 200: start early in one.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 45_000) {
      await new Promise((resolve) => setTimeout(resolve, 61_000 - intoMinute));
    }
    const rpm = await fire(rpmCaller.key, 200);
    assert.equal(rpm.filter((s) => s === 200).length, 37);
    assert.equal(rpm.filter((s) => s === 429).length, 163);

    const spend = await fire(spendCaller.key, 200);
    const served = spend.filter((s) => s === 200).length;
    // Each call holds about 45 µUSD: the 2 000 µUSD cap admits some, not all.
    assert.ok(served > 0 && served < 200, `${served} served`);
    assert.equal(spend.filter((s) => s === 402).length, 200 - served);
    for (const gateway of gateways) {
      assert.equal((await gateway.stop()).code, 0);
    }
    // Spent, charges exactly as recorded, never past the cap.
    const ledger = await listLedger(kv, spendCaller.id);
    const charged = -ledgerSum(ledger.filter((e) => e.kind === "charge"));
    assert.equal(ledger.filter((e) => e.kind === "charge").length, served);
    assert.ok(charged <= usdToMicros(0.002), `${charged} µUSD charged`);
    assert.equal(
      await readBalance(kv, spendCaller.id),
      usdToMicros(100) - charged,
    );
    const rpmCharges = (await listLedger(kv, rpmCaller.id)).filter((e) =>
      e.kind === "charge"
    );
    assert.equal(rpmCharges.length, 37);
    kv.close();
  } finally {
    for (const gateway of gateways) await gateway.stop();
    await sim.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a killed gateway process does not reset a key's counts: its successor on the same KV refuses past the limit", async () => {
  const dir = await Deno.makeTempDir();
  const sim = await startSimulator();
  const gateways: GatewayProcess[] = [];
  try {
    const kvPath = join(dir, "gateway.kv");
    const kv = await Deno.openKv(kvPath);
    const caller = await createCaller(kv, {
      name: "restarted",
      creditsMicros: usdToMicros(10),
      limits: { rpm: 4 },
    });
    kv.close();
    const env = {
      ...sim.env(),
      GATEWAY_KV_PATH: kvPath,
      OPENAI_API_KEYS: "sk-restart",
    };
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 40_000) {
      await new Promise((resolve) => setTimeout(resolve, 61_000 - intoMinute));
    }
    const call = async (gateway: GatewayProcess) => {
      const response = await postJson(
        `${gateway.url}/v1/chat/completions`,
        caller.key,
        { model: "gpt-4o-mini", messages: HELLO, max_tokens: 16 },
      );
      await response.body?.cancel();
      return response.status;
    };
    const first = await spawnGateway(env);
    gateways.push(first);
    assert.deepEqual([await call(first), await call(first)], [200, 200]);
    first.child.kill("SIGKILL");
    await first.child.status;
    const second = await spawnGateway(env);
    gateways.push(second);
    assert.deepEqual(
      [await call(second), await call(second), await call(second)],
      [200, 200, 429],
    );
  } finally {
    for (const gateway of gateways) await gateway.stop();
    await sim.close();
    await Deno.remove(dir, { recursive: true });
  }
});

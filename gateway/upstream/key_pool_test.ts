import assert from "node:assert/strict";
import { MemoryKeyPool, providerKeyId } from "./key_pool.ts";
import { refusalBlame, refusedCooldownMs } from "./key_refusals.ts";
import { MIN_SCRUBBED_KEY_LENGTH, scrubKey } from "./scrub.ts";
import type { KeyCooled, KeyOutcome, ProviderKey } from "./key_pool.ts";

/** The caller and request a test's outcomes come from. */
const FROM = { requestId: "req_test", callerId: "ck_test" };

function clock(start = 1_700_000_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

function keyOf(result: ReturnType<MemoryKeyPool["acquire"]>): ProviderKey {
  assert.ok(result.ok, "expected a key");
  return result.key;
}

Deno.test("providerKeyId() names a key without revealing it", () => {
  const id = providerKeyId("openai", "sk-secret-value");
  assert.match(id, /^openai:[0-9a-f]{8}$/);
  assert.ok(!id.includes("secret"));
  assert.equal(id, providerKeyId("openai", "sk-secret-value"));
});

Deno.test("acquire() spreads calls over the least-used keys", () => {
  const t = clock();
  const pool = new MemoryKeyPool(
    { openai: { keys: ["a", "b", "c"] } },
    {
      defaultCooldownMs: 1000,
      now: t.now,
    },
  );
  const used = new Map<string, number>();
  for (let i = 0; i < 30; i++) {
    const key = keyOf(pool.acquire("openai", 10));
    used.set(key.secret, (used.get(key.secret) ?? 0) + 1);
    pool.release(key, { kind: "answered", tokens: 10 });
  }
  assert.deepEqual([...used.values()], [10, 10, 10]);
});

Deno.test("acquire() keeps each key within its RPM and says when one frees up", () => {
  const t = clock();
  const pool = new MemoryKeyPool(
    { xai: { keys: ["a", "b"], rpm: 2 } },
    {
      defaultCooldownMs: 1000,
      now: t.now,
    },
  );
  for (let i = 0; i < 4; i++) {
    pool.release(keyOf(pool.acquire("xai", 1)), {
      kind: "answered",
      tokens: 1,
    });
  }
  const refused = pool.acquire("xai", 1);
  assert.equal(refused.ok, false);
  assert.ok(
    !refused.ok && refused.retryAfterMs > 0 && refused.retryAfterMs <= 60_000,
  );
  t.advance(60_000);
  assert.ok(pool.acquire("xai", 1).ok);
});

Deno.test("acquire() keeps each key within its TPM", () => {
  const t = clock();
  const pool = new MemoryKeyPool({
    openai: { keys: ["a"], tpm: 1000 },
  }, {
    defaultCooldownMs: 1000,
    now: t.now,
  });
  const key = keyOf(pool.acquire("openai", 600));
  pool.release(key, { kind: "answered", tokens: 900 });
  assert.equal(pool.acquire("openai", 200).ok, false);
  assert.ok(pool.acquire("openai", 100).ok);
});

Deno.test("release() of a 429 cools a key down for its retry-after", () => {
  const t = clock();
  const pool = new MemoryKeyPool({ anthropic: { keys: ["a", "b"] } }, {
    defaultCooldownMs: 30_000,
    now: t.now,
  });
  const first = keyOf(pool.acquire("anthropic", 1));
  pool.release(first, { kind: "rateLimited", retryAfterMs: 5_000, ...FROM });
  for (let i = 0; i < 5; i++) {
    const key = keyOf(pool.acquire("anthropic", 1));
    assert.notEqual(key.keyId, first.keyId);
    pool.release(key, { kind: "answered", tokens: 1 });
  }
  const second = keyOf(pool.acquire("anthropic", 1));
  pool.release(second, { kind: "rateLimited", ...FROM });
  const none = pool.acquire("anthropic", 1);
  assert.deepEqual(none, { ok: false, retryAfterMs: 5_000 });
  t.advance(5_000);
  assert.equal(keyOf(pool.acquire("anthropic", 1)).keyId, first.keyId);
});

Deno.test("release() of a 401 cools the key down for a time that doubles, then lets one call probe it", () => {
  let now = 0;
  const refused: string[] = [];
  const pool = new MemoryKeyPool({ gemini: { keys: ["a", "b"] } }, {
    defaultCooldownMs: 1000,
    refusedCooldownMs: 10_000,
    maxRefusedCooldownMs: 30_000,
    now: () => now,
    onRefused: (_provider, keyId, status, cooldownMs) =>
      refused.push(`${keyId} ${status} ${cooldownMs}`),
  });
  const dead = keyOf(pool.acquire("gemini", 1));
  assert.equal(
    pool.release(dead, {
      kind: "refused",
      status: 401,
      requestId: "req_1",
      callerId: "ck_1",
    }),
    true,
  );
  assert.deepEqual(refused, [`${dead.keyId} 401 10000`]);
  // Cooling: every call goes to the other key.
  for (let i = 0; i < 3; i++) {
    const next = keyOf(pool.acquire("gemini", 1));
    assert.notEqual(next.keyId, dead.keyId);
    pool.release(next, { kind: "answered", tokens: 1 });
  }
  const health = () => pool.health().find((k) => k.keyId === dead.keyId)!;
  assert.equal(health().state, "refused");
  assert.equal(health().coolUntil, 10_000);
  // The cool-down over, one call probes it while the others go elsewhere.
  now = 10_001;
  const keys = [
    keyOf(pool.acquire("gemini", 1)),
    keyOf(pool.acquire("gemini", 1)),
  ];
  const probe = keys.find((k) => k.keyId === dead.keyId)!;
  assert.ok(probe, "the refused key is probed");
  assert.equal(health().state, "probing");
  const third = keyOf(pool.acquire("gemini", 1));
  assert.notEqual(third.keyId, dead.keyId, "one probe at a time");
  // Still refused: the cool-down doubles, up to the maximum.
  pool.release(probe, {
    kind: "refused",
    status: 401,
    requestId: "req_2",
    callerId: "ck_2",
  });
  assert.equal(health().coolUntil, 10_001 + 20_000);
  // Third refusal in a row: 40 s, held to the 30 s maximum.
  pool.release(keys.find((k) => k !== probe)!, {
    kind: "answered",
    tokens: 1,
  });
  pool.release(third, { kind: "answered", tokens: 1 });
  now = 30_002;
  const other = keys.find((k) => k !== probe)!.keyId;
  const again = keyOf(pool.acquire("gemini", 1, new Set([other])));
  assert.equal(again.keyId, dead.keyId);
  pool.release(again, {
    kind: "refused",
    status: 401,
    requestId: "req_3",
    callerId: "ck_3",
  });
  assert.equal(health().coolUntil, 30_002 + 30_000);
  assert.deepEqual(refused.map((line) => line.split(" ")[2]), [
    "10000",
    "20000",
    "30000",
  ]);
});

Deno.test("release() of an answer makes a probed key healthy again", () => {
  let now = 0;
  const pool = new MemoryKeyPool({ xai: { keys: ["a"] } }, {
    defaultCooldownMs: 1000,
    refusedCooldownMs: 5_000,
    now: () => now,
  });
  pool.release(keyOf(pool.acquire("xai", 1)), {
    kind: "refused",
    status: 401,
    requestId: "req_1",
    callerId: "req_1",
  });
  assert.equal(pool.acquire("xai", 1).ok, false);
  now = 5_001;
  const probe = keyOf(pool.acquire("xai", 1));
  pool.release(probe, { kind: "answered", tokens: 1 });
  assert.equal(pool.health()[0].state, "healthy");
  assert.equal(pool.health()[0].refusals, 0);
  // Healthy again: the next refusal starts from the first cool-down.
  pool.release(keyOf(pool.acquire("xai", 1)), {
    kind: "refused",
    status: 401,
    requestId: "req_2",
    callerId: "req_2",
  });
  assert.equal(pool.health()[0].coolUntil, 5_001 + 5_000);
});

Deno.test("release() of a refusal blames a 403 on the request until 403s come from several different callers", () => {
  const pool = new MemoryKeyPool({ openrouter: { keys: ["a"] } }, {
    defaultCooldownMs: 1000,
  });
  const take = () => keyOf(pool.acquire("openrouter", 1));
  const forbidden = (callerId: string, requestId: string) =>
    pool.release(take(), { kind: "refused", status: 403, requestId, callerId });
  // One caller's flagged requests, as many as it likes: never the key's fault.
  for (let i = 0; i < 10; i++) {
    assert.equal(forbidden("ck_attacker", `req_${i}`), false);
  }
  assert.equal(pool.health()[0].state, "healthy");
  // An answer in between clears the count.
  assert.equal(forbidden("ck_a", "req_a"), false);
  pool.release(take(), { kind: "answered", tokens: 0 });
  assert.equal(forbidden("ck_b", "req_b"), false);
  assert.equal(forbidden("ck_c", "req_c"), false);
  assert.equal(forbidden("ck_c", "req_c2"), false);
  // Different callers all refused on this key: now it is the key.
  assert.equal(forbidden("ck_d", "req_d"), true);
  assert.equal(pool.health()[0].state, "refused");
});

Deno.test("release() of a 429 cools a key no longer than the caller bound, whatever its retry-after, and names the caller", () => {
  const t = clock();
  const cooled: KeyCooled[] = [];
  const pool = new MemoryKeyPool({ anthropic: { keys: ["a"] } }, {
    defaultCooldownMs: 30_000,
    maxCallerCooldownMs: 60_000,
    onCooled: (event) => cooled.push(event),
    now: t.now,
  });
  pool.release(keyOf(pool.acquire("anthropic", 1)), {
    kind: "rateLimited",
    retryAfterMs: 3_600_000,
    requestId: "req_big",
    callerId: "ck_attacker",
  });
  assert.deepEqual(pool.acquire("anthropic", 1), {
    ok: false,
    retryAfterMs: 60_000,
  });
  assert.deepEqual(cooled, [{
    provider: "anthropic",
    keyId: providerKeyId("anthropic", "a"),
    cooldownMs: 60_000,
    callerId: "ck_attacker",
    requestId: "req_big",
  }]);
  t.advance(60_000);
  assert.ok(pool.acquire("anthropic", 1).ok, "usable again after the bound");
});

Deno.test("acquire() skips excluded keys and reports no key at all as -1", () => {
  const pool = new MemoryKeyPool({
    openai: { keys: ["a"] },
    xai: { keys: [] },
  }, {
    defaultCooldownMs: 1000,
  });
  const key = keyOf(pool.acquire("openai", 1));
  assert.deepEqual(pool.acquire("openai", 1, new Set([key.keyId])), {
    ok: false,
    retryAfterMs: -1,
  });
  assert.deepEqual(pool.acquire("xai", 1), { ok: false, retryAfterMs: -1 });
});

Deno.test("release() gives each loan back once: a second release changes nothing", () => {
  const t = clock();
  const pool = new MemoryKeyPool({ openai: { keys: ["a", "b"] } }, {
    defaultCooldownMs: 10_000,
    now: t.now,
  });
  const first = keyOf(pool.acquire("openai", 1));
  const second = keyOf(pool.acquire("openai", 1));
  assert.deepEqual(pool.health().map((k) => k.inFlight), [1, 1]);
  pool.release(first, { kind: "answered", tokens: 1 });
  pool.release(first, { kind: "answered", tokens: 1 });
  pool.release(first, { kind: "rateLimited", retryAfterMs: 60_000, ...FROM });
  // The other key's call is still counted, and the first key is not cooling.
  assert.deepEqual(pool.health().map((k) => k.inFlight), [0, 1]);
  assert.equal(pool.health()[0].state, "healthy");
  pool.release(second, { kind: "failed" });
  assert.deepEqual(pool.health().map((k) => k.inFlight), [0, 0]);
});

Deno.test("release() offers a probed key again after its probe, whatever the probe's outcome", () => {
  const outcomes: KeyOutcome[] = [
    { kind: "failed" },
    { kind: "rateLimited", retryAfterMs: 1_000, ...FROM },
    { kind: "refused", status: 403, ...FROM },
    { kind: "answered", tokens: 3 },
  ];
  for (const outcome of outcomes) {
    let now = 0;
    const pool = new MemoryKeyPool({ xai: { keys: ["a"] } }, {
      defaultCooldownMs: 1_000,
      refusedCooldownMs: 5_000,
      now: () => now,
    });
    pool.release(keyOf(pool.acquire("xai", 1)), {
      kind: "refused",
      status: 401,
      requestId: "req_1",
      callerId: "req_1",
    });
    now = 5_001;
    const probe = keyOf(pool.acquire("xai", 1));
    assert.equal(pool.health()[0].state, "probing", outcome.kind);
    pool.release(probe, outcome);
    assert.notEqual(pool.health()[0].state, "probing", outcome.kind);
    assert.equal(pool.health()[0].inFlight, 0, outcome.kind);
    now = 7_000; // past a 429's cool-down
    assert.ok(pool.acquire("xai", 1).ok, `offered again after ${outcome.kind}`);
  }
});

Deno.test("refusalBlame() blames a 401 on the key, and a 403 on the request until several callers got one", () => {
  assert.equal(refusalBlame(401, 0), "key");
  assert.equal(refusalBlame(403, 1), "request");
  assert.equal(refusalBlame(403, 2), "request");
  assert.equal(refusalBlame(403, 3), "key");
});

Deno.test("refusedCooldownMs() doubles with each refusal in a row, up to the maximum", () => {
  assert.deepEqual(
    [1, 2, 3, 4].map((n) => refusedCooldownMs(n, 10_000, 30_000)),
    [10_000, 20_000, 30_000, 30_000],
  );
});

Deno.test("scrubKey() names a real-length key by its id and never rewrites text for a shorter one", () => {
  const real = {
    provider: "openai" as const,
    keyId: "openai:1a2b3c4d",
    secret: "sk-proj-" + "x".repeat(MIN_SCRUBBED_KEY_LENGTH),
  };
  assert.equal(
    scrubKey(`Incorrect API key provided: ${real.secret}.`, real),
    "Incorrect API key provided: [key openai:1a2b3c4d].",
  );
  // The README's simulator key: ordinary words stay whole.
  const sim = { ...real, secret: "sim" };
  assert.equal(
    scrubKey("a simple simulation, tool call_sim_1", sim),
    "a simple simulation, tool call_sim_1",
  );
});

Deno.test("the first call of a new minute finds its key's shared slice still being claimed: pendingClaims() says so, and once it lands the key is lent", async () => {
  using kv = await Deno.openKv(":memory:");
  let now = Date.UTC(2026, 10, 24, 10, 0, 30);
  const pool = new MemoryKeyPool(
    { openai: { keys: ["a"], rpm: 600 } },
    { defaultCooldownMs: 1000, now: () => now, store: kv },
  );
  await pool.ready();
  keyOf(pool.acquire("openai", 10));
  await pool.ready(); // the top-up a lend may start
  assert.equal(pool.pendingClaims(), undefined, "nothing under way");
  // Idle past the minute's end: nothing claimed the next minute ahead.
  now = Date.UTC(2026, 10, 24, 10, 1, 0) + 10;
  const first = pool.acquire("openai", 10);
  assert.equal(first.ok, false);
  const claims = pool.pendingClaims();
  assert.ok(claims, "the new minute's claim is under way");
  await claims;
  keyOf(pool.acquire("openai", 10));
  await pool.ready();
});

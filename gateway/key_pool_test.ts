import assert from "node:assert/strict";
import { MemoryKeyPool, providerKeyId } from "./key_pool.ts";
import type { ProviderKey } from "./types.ts";

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
    pool.recordUsage(key, 10);
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
    pool.recordUsage(keyOf(pool.acquire("xai", 1)), 1);
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
  pool.recordUsage(key, 900);
  assert.equal(pool.acquire("openai", 200).ok, false);
  assert.ok(pool.acquire("openai", 100).ok);
});

Deno.test("rateLimited() cools a key down for its retry-after", () => {
  const t = clock();
  const pool = new MemoryKeyPool({ anthropic: { keys: ["a", "b"] } }, {
    defaultCooldownMs: 30_000,
    now: t.now,
  });
  const first = keyOf(pool.acquire("anthropic", 1));
  pool.rateLimited(first, 5_000);
  for (let i = 0; i < 5; i++) {
    const key = keyOf(pool.acquire("anthropic", 1));
    assert.notEqual(key.keyId, first.keyId);
    pool.recordUsage(key, 1);
  }
  const second = keyOf(pool.acquire("anthropic", 1));
  pool.rateLimited(second);
  const none = pool.acquire("anthropic", 1);
  assert.deepEqual(none, { ok: false, retryAfterMs: 5_000 });
  t.advance(5_000);
  assert.equal(keyOf(pool.acquire("anthropic", 1)).keyId, first.keyId);
});

Deno.test("refused() with a 401 cools the key down for a time that doubles, then lets one call probe it", () => {
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
  assert.equal(pool.refused(dead, 401, "req_1"), true);
  assert.deepEqual(refused, [`${dead.keyId} 401 10000`]);
  // Cooling: every call goes to the other key.
  for (let i = 0; i < 3; i++) {
    const next = keyOf(pool.acquire("gemini", 1));
    assert.notEqual(next.keyId, dead.keyId);
    pool.recordUsage(next, 1);
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
  pool.refused(probe, 401, "req_2");
  assert.equal(health().coolUntil, 10_001 + 20_000);
  // Third refusal in a row: 40 s, held to the 30 s maximum.
  pool.recordUsage(keys.find((k) => k !== probe)!, 1);
  pool.recordUsage(third, 1);
  now = 30_002;
  const other = keys.find((k) => k !== probe)!.keyId;
  const again = keyOf(pool.acquire("gemini", 1, new Set([other])));
  assert.equal(again.keyId, dead.keyId);
  pool.refused(again, 401, "req_3");
  assert.equal(health().coolUntil, 30_002 + 30_000);
  assert.deepEqual(refused.map((line) => line.split(" ")[2]), [
    "10000",
    "20000",
    "30000",
  ]);
});

Deno.test("answered() makes a probed key healthy again", () => {
  let now = 0;
  const pool = new MemoryKeyPool({ xai: { keys: ["a"] } }, {
    defaultCooldownMs: 1000,
    refusedCooldownMs: 5_000,
    now: () => now,
  });
  pool.refused(keyOf(pool.acquire("xai", 1)), 401, "req_1");
  assert.equal(pool.acquire("xai", 1).ok, false);
  now = 5_001;
  const probe = keyOf(pool.acquire("xai", 1));
  pool.answered(probe);
  pool.recordUsage(probe, 1);
  assert.equal(pool.health()[0].state, "healthy");
  assert.equal(pool.health()[0].refusals, 0);
  // Healthy again: the next refusal starts from the first cool-down.
  pool.refused(keyOf(pool.acquire("xai", 1)), 401, "req_2");
  assert.equal(pool.health()[0].coolUntil, 5_001 + 5_000);
});

Deno.test("refused() blames a 403 on the request until 403s come from several different requests", () => {
  const pool = new MemoryKeyPool({ openrouter: { keys: ["a"] } }, {
    defaultCooldownMs: 1000,
  });
  const take = () => keyOf(pool.acquire("openrouter", 1));
  // One flagged request, tried again and again: never the key's fault.
  for (let i = 0; i < 5; i++) {
    assert.equal(pool.refused(take(), 403, "req_flagged"), false);
  }
  assert.equal(pool.health()[0].state, "healthy");
  // An answer in between clears the count.
  assert.equal(pool.refused(take(), 403, "req_a"), false);
  pool.answered(take());
  assert.equal(pool.refused(take(), 403, "req_b"), false);
  assert.equal(pool.refused(take(), 403, "req_c"), false);
  // Different requests all refused on this key: now it is the key.
  assert.equal(pool.refused(take(), 403, "req_d"), true);
  assert.equal(pool.health()[0].state, "refused");
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

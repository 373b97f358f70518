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

Deno.test("revoke() takes a key out of the pool and reports it by id", () => {
  const revoked: string[] = [];
  const pool = new MemoryKeyPool({ gemini: { keys: ["a", "b"] } }, {
    defaultCooldownMs: 1000,
    onRevoke: (_provider, keyId, status) => revoked.push(`${keyId} ${status}`),
  });
  const key = keyOf(pool.acquire("gemini", 1));
  pool.revoke(key, 401);
  assert.deepEqual(revoked, [`${key.keyId} 401`]);
  assert.equal(pool.healthyKeys("gemini"), 1);
  const exclude = new Set<string>();
  for (let i = 0; i < 3; i++) {
    const next = keyOf(pool.acquire("gemini", 1, exclude));
    assert.notEqual(next.keyId, key.keyId);
    pool.recordUsage(next, 1);
  }
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

import assert from "node:assert/strict";
import {
  CALLER_KEY_PREFIX,
  createCaller,
  createCallerAuthenticator,
  getCaller,
  hashCallerKey,
  listCallers,
  revokeCaller,
} from "./callers.ts";

async function withKv(fn: (kv: Deno.Kv) => Promise<void>): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  try {
    await fn(kv);
  } finally {
    kv.close();
  }
}

/** Counts `get` calls on a KV, to see what the authenticator's cache saves. */
function countingGets(kv: Deno.Kv): { kv: Deno.Kv; gets: () => number } {
  let gets = 0;
  const proxy = new Proxy(kv, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (property === "get") {
        return (...args: Parameters<Deno.Kv["get"]>) => {
          gets++;
          return target.get(...args);
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { kv: proxy, gets: () => gets };
}

Deno.test("createCaller() returns a long random key that authenticates as the caller", async () => {
  await withKv(async (kv) => {
    const created = await createCaller(kv, {
      name: " alice ",
      creditsMicros: 2_000_000,
    });
    assert.ok(created.key.startsWith(CALLER_KEY_PREFIX));
    assert.equal(created.key.length, CALLER_KEY_PREFIX.length + 52);
    assert.equal(created.name, "alice");
    assert.equal(created.balanceMicros, 2_000_000);
    const other = await createCaller(kv, { name: "bob", creditsMicros: 0 });
    assert.notEqual(other.key, created.key);
    assert.notEqual(other.id, created.id);

    const auth = createCallerAuthenticator(kv);
    assert.deepEqual(await auth.authenticate(created.key), {
      id: created.id,
      name: "alice",
    });
    assert.equal(await auth.authenticate(created.key + "x"), null);
    assert.equal(await auth.authenticate("sk-not-ours"), null);
  });
});

Deno.test("createCaller() stores the key only as a SHA-256 hash", async () => {
  await withKv(async (kv) => {
    const created = await createCaller(kv, {
      name: "secret",
      creditsMicros: 1,
    });
    const randomPart = created.key.slice(CALLER_KEY_PREFIX.length);
    let sawHash = false;
    for await (const entry of kv.list({ prefix: [] })) {
      const stored = JSON.stringify([entry.key, entry.value]);
      assert.ok(
        !stored.includes(randomPart),
        `key found under ${JSON.stringify(entry.key)}`,
      );
      sawHash ||= stored.includes(await hashCallerKey(created.key));
    }
    assert.ok(sawHash);
  });
});

Deno.test("createCaller() rejects an empty name and fractional credits", async () => {
  await withKv(async (kv) => {
    await assert.rejects(
      createCaller(kv, { name: "  ", creditsMicros: 1 }),
      RangeError,
    );
    await assert.rejects(
      createCaller(kv, { name: "x", creditsMicros: 0.5 }),
      RangeError,
    );
    assert.deepEqual(await listCallers(kv), []);
  });
});

Deno.test("listCallers() and getCaller() show callers without secrets or hashes", async () => {
  await withKv(async (kv) => {
    const first = await createCaller(kv, {
      name: "one",
      creditsMicros: 10,
      now: 1,
    });
    const second = await createCaller(kv, {
      name: "two",
      creditsMicros: 20,
      now: 2,
    });
    const listed = await listCallers(kv);
    assert.deepEqual(listed, [
      { id: first.id, name: "one", balanceMicros: 10, createdAt: 1 },
      { id: second.id, name: "two", balanceMicros: 20, createdAt: 2 },
    ]);
    assert.deepEqual(await getCaller(kv, second.id), listed[1]);
    assert.equal(await getCaller(kv, "ck_missing"), null);
  });
});

Deno.test("a revoked key stops authenticating once the one-second cache lapses", async () => {
  await withKv(async (kv) => {
    let now = 0;
    const created = await createCaller(kv, { name: "gone", creditsMicros: 0 });
    const auth = createCallerAuthenticator(kv, { now: () => now });
    assert.ok(await auth.authenticate(created.key));
    assert.equal(await revokeCaller(kv, created.id), true);
    assert.equal(await revokeCaller(kv, created.id), false);
    now = 999;
    assert.ok(
      await auth.authenticate(created.key),
      "still cached within the second",
    );
    now = 1_000;
    assert.equal(await auth.authenticate(created.key), null);
    assert.equal(await getCaller(kv, created.id), null);
    // A fresh authenticator (another process) never sees it.
    assert.equal(
      await createCallerAuthenticator(kv).authenticate(created.key),
      null,
    );
  });
});

Deno.test("the authenticator caches unknown keys too, in a bounded cache", async () => {
  await withKv(async (plainKv) => {
    const { kv, gets } = countingGets(plainKv);
    let now = 0;
    const auth = createCallerAuthenticator(kv, {
      now: () => now,
      maxCacheEntries: 2,
    });
    const unknown = CALLER_KEY_PREFIX + "unknown";
    assert.equal(await auth.authenticate(unknown), null);
    assert.equal(await auth.authenticate(unknown), null);
    assert.equal(gets(), 1);
    // Two other keys push the first out of a two-entry cache.
    await auth.authenticate(CALLER_KEY_PREFIX + "a");
    await auth.authenticate(CALLER_KEY_PREFIX + "b");
    assert.equal(gets(), 3);
    await auth.authenticate(unknown);
    assert.equal(gets(), 4);
    now = 2_000;
    await auth.authenticate(unknown);
    assert.equal(gets(), 5);
  });
});

Deno.test("createCallerAuthenticator() refuses a cache longer than one second", async () => {
  await withKv((kv) => {
    assert.throws(
      () => createCallerAuthenticator(kv, { cacheTtlMs: 1_001 }),
      RangeError,
    );
    return Promise.resolve();
  });
});

/**
 * The PostgreSQL store against a real PostgreSQL: it answers the gateway's
 * KV operations as Deno KV does (the same script run on both gives the same
 * entries), its checks refuse a stale commit, concurrent commits from two
 * pools lose no update, and several stores opening one empty database at
 * once migrate it once.
 */
import assert from "node:assert/strict";
import { openPostgresStore } from "../gateway/state/store/postgres.ts";
import { decodeKey, encodeKey } from "../gateway/state/store/key_codec.ts";
import { POSTGRES_MISSING, reportSkip, startPostgres } from "./_postgres.ts";

reportSkip();
const ignore = POSTGRES_MISSING !== undefined;

async function script(kv: Deno.Kv): Promise<unknown[]> {
  const seen: unknown[] = [];
  await kv.set(["a", "x"], { n: 1, s: "é\u0000z", u: undefined });
  await kv.set(["a", "y"], 2);
  await kv.set(["a", "y", 1], "nested");
  await kv.set(["b", -1.5], "neg");
  await kv.set(["b", 0], "zero");
  await kv.set(["b", 7], "seven");
  await kv.set(["b", 1e12], "big");
  await kv.atomic().sum(["u"], 5n).sum(["u"], 7n).commit();
  await kv.atomic().max(["m"], 3n).min(["m"], 2n).commit();
  const x = await kv.get(["a", "x"]);
  seen.push(x.value);
  const stale = x.versionstamp!;
  seen.push((await kv.atomic().check(x).set(["a", "x"], 9).commit()).ok);
  seen.push(
    (await kv.atomic().check({ key: ["a", "x"], versionstamp: stale }).set([
      "a",
      "x",
    ], 10).commit()).ok,
  );
  seen.push(
    (await kv.atomic().check({ key: ["new"], versionstamp: null }).set(
      ["new"],
      1,
    ).commit()).ok,
  );
  seen.push(
    (await kv.atomic().check({ key: ["new"], versionstamp: null }).set(
      ["new"],
      2,
    ).commit()).ok,
  );
  await new Promise((resolve) => setTimeout(resolve, 20));
  const list = async (
    selector: Deno.KvListSelector,
    options?: Deno.KvListOptions,
  ) => {
    const out: unknown[] = [];
    for await (const entry of kv.list(selector, options)) {
      out.push([entry.key, entry.value]);
    }
    return out;
  };
  seen.push(await list({ prefix: ["a"] }));
  seen.push(await list({ prefix: ["b"] }, { reverse: true, limit: 3 }));
  seen.push(await list({ start: ["b", 0], end: ["b", 100] }));
  seen.push(await list({ prefix: [] }, { limit: 2 }));
  const [u, m, missing] = await kv.getMany<[Deno.KvU64, Deno.KvU64, null]>([
    ["u"],
    ["m"],
    ["nope"],
  ]);
  seen.push(u.value?.value, m.value?.value, missing.value);
  await kv.delete(["a", "y"]);
  seen.push((await kv.get(["a", "y"])).versionstamp);
  return seen;
}

Deno.test("encodeKey() sorts keys as Deno KV does and decodes back", () => {
  const keys: Deno.KvKey[] = [
    [new Uint8Array([0, 1])],
    ["a"],
    ["a", 1],
    ["a\u0000"],
    ["b"],
    [-5n],
    [3n],
    [-Infinity],
    [-2],
    [0],
    [0.5],
    [3],
    [false],
    [true],
  ];
  const hex = (key: Deno.KvKey) =>
    Array.from(encodeKey(key), (b) => b.toString(16).padStart(2, "0")).join("");
  const sorted = [...keys].sort((a, b) => hex(a) < hex(b) ? -1 : 1);
  assert.deepStrictEqual(sorted, keys);
  for (const key of keys) {
    assert.deepStrictEqual(decodeKey(encodeKey(key)), key);
  }
});

Deno.test({
  name: "the PostgreSQL store answers the same script as Deno KV",
  ignore,
  async fn() {
    await using pg = await startPostgres();
    const store = await openPostgresStore(await pg.createDatabase("script"));
    const kv = await Deno.openKv(":memory:");
    try {
      assert.deepStrictEqual(await script(store), await script(kv));
      // Deno KV deletes an expired key some time later; this store hides it
      // at once and deletes it in the background.
      await store.set(["t"], "gone", { expireIn: 1 });
      await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal((await store.get(["t"])).value, null);
      assert.equal(await store.deleteExpired(), 1);
    } finally {
      kv.close();
      await store.end();
    }
  },
});

Deno.test({
  name:
    "two PostgreSQL stores counting one value with checked commits lose no update",
  ignore,
  async fn() {
    await using pg = await startPostgres();
    const url = await pg.createDatabase("race");
    const [one, two] = await Promise.all([
      openPostgresStore(url),
      openPostgresStore(url),
      openPostgresStore(url),
    ]).then(async (stores) => {
      await stores[2].end();
      return stores;
    });
    try {
      const increment = async (kv: Deno.Kv) => {
        for (let attempt = 0; attempt < 500; attempt++) {
          const current = await kv.get<number>(["n"]);
          const ok = await kv.atomic().check(current).set(
            ["n"],
            (current.value ?? 0) + 1,
          ).commit();
          if (ok.ok) return;
        }
        throw new Error("Never committed");
      };
      await Promise.all(
        Array.from({ length: 100 }, (_, i) => increment(i % 2 ? one : two)),
      );
      assert.deepStrictEqual((await one.get(["n"])).value, 100);
      assert.equal(await one.isEmpty(), false);
    } finally {
      await Promise.all([one.end(), two.end()]);
    }
  },
});

Deno.test({
  name: "a PostgreSQL store refuses a schema newer than its code",
  ignore,
  async fn() {
    await using pg = await startPostgres();
    const url = await pg.createDatabase("newer");
    const store = await openPostgresStore(url);
    await store.end();
    const postgres = (await import("postgres")).default;
    const sql = postgres(url, { onnotice: () => {} });
    await sql`INSERT INTO gateway_schema (version) VALUES (99)`;
    await sql.end();
    await assert.rejects(
      () => openPostgresStore(url),
      /newer than this gateway/,
    );
  },
});

Deno.test("a gateway whose PostgreSQL cannot be reached stops with one line that names it without its password", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("../gateway/main.ts", import.meta.url).pathname,
    ],
    env: {
      GATEWAY_STORE: "postgres://gw:hunter2-secret@127.0.0.1:1/gateway",
      PORT: "0",
      HOST: "127.0.0.1",
      NO_COLOR: "1",
    },
    stdout: "null",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr).trim();
  assert.equal(output.code, 1);
  assert.equal(stderr.split("\n").length, 1, stderr);
  assert.match(
    stderr,
    /Cannot open the store \(GATEWAY_STORE\) at PostgreSQL 127\.0\.0\.1:1\/gateway/,
  );
  assert.doesNotMatch(stderr, /hunter2/);
});

Deno.test({
  name:
    "the expiry sweep never deletes a row a commit made live while the sweep ran",
  ignore,
  async fn() {
    await using pg = await startPostgres();
    const url = await pg.createDatabase("sweep");
    const store = await openPostgresStore(url);
    const postgres = (await import("postgres")).default;
    const { serialize } = await import("node:v8");
    const { toHex } = await import("../gateway/state/store/key_codec.ts");
    const sql = postgres(url, { onnotice: () => {}, max: 1 });
    try {
      await store.set(["lease", "c1"], "old", { expireIn: 1 });
      await new Promise((resolve) => setTimeout(resolve, 10));
      // Another gateway renews the lease; its commit holds the row while the
      // sweep, which read the row as expired, waits for it.
      const ops = {
        c: [],
        m: [{
          t: "set",
          k: toHex(encodeKey(["lease", "c1"])),
          v: toHex(new Uint8Array(serialize("renewed"))),
          x: Date.now() + 60_000,
        }],
      };
      let sweeping: Promise<number> | undefined;
      await sql.begin(async (tx) => {
        await tx`SELECT gateway_kv_commit(${
          JSON.stringify(ops)
        }::text::jsonb, ${Date.now()})`;
        sweeping = store.deleteExpired();
        await new Promise((resolve) => setTimeout(resolve, 300));
      });
      assert.equal(await sweeping, 0);
      assert.equal((await store.get(["lease", "c1"])).value, "renewed");
    } finally {
      await sql.end();
      await store.end();
    }
  },
});

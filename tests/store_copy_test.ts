/**
 * `deno task store copy` on a KV file with traffic history: a gateway
 * process served calls (charges, traces, usage, limit counters), an admin
 * topped a caller up; after the copy every balance and ledger sum is the
 * same in PostgreSQL, a gateway on PostgreSQL serves the same caller keys
 * with their limits, and a second copy into the now non-empty database is
 * refused.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createCaller, listCallers } from "../gateway/state/callers.ts";
import {
  listLeases,
  listLedger,
  readBalance,
  topUp,
} from "../gateway/state/credits/ledger.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import { openPostgresStore } from "../gateway/state/store/postgres.ts";
import { listTraces } from "../gateway/state/traces.ts";
import { delay, ledgerSum, postJson, spawnGateway } from "./_gateway_e2e.ts";
import { unleasedKey } from "../gateway/state/kv_keys.ts";
import { POSTGRES_MISSING, reportSkip, startPostgres } from "./_postgres.ts";

reportSkip();
const CLI = new URL("../gateway/cli/store.ts", import.meta.url).pathname;
const HELLO = [{ role: "user", content: "hello" }];

async function copy(
  ...args: string[]
): Promise<{ code: number; out: string; err: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, "copy", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return {
    code: output.code,
    out: text(output.stdout),
    err: text(output.stderr),
  };
}

Deno.test({
  name:
    "store copy moves a KV file with traffic history to PostgreSQL: balances, ledgers, traces, keys and limits intact; a non-empty target is refused",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    const dir = await Deno.makeTempDir();
    await using pg = await startPostgres();
    await using sim = await startSimulator();
    const kvPath = join(dir, "gateway.kv");
    const kv = await Deno.openKv(kvPath);
    try {
      const plain = await createCaller(kv, {
        name: "plain",
        creditsMicros: usdToMicros(1),
      });
      const limited = await createCaller(kv, {
        name: "limited",
        creditsMicros: usdToMicros(1),
        limits: { rpm: 5, models: ["gpt-4o-mini"] },
      });
      const env = {
        ...sim.env(),
        GATEWAY_KV_PATH: kvPath,
        OPENAI_API_KEYS: "sk-copy-1",
      };
      const before = await spawnGateway(env);
      for (const caller of [plain, limited, plain, limited, plain]) {
        const response = await postJson(
          `${before.url}/v1/chat/completions`,
          caller.key,
          { model: "gpt-4o-mini", messages: HELLO, max_tokens: 32 },
        );
        assert.equal(response.status, 200);
        await response.body?.cancel();
      }
      assert.equal((await before.stop()).code, 0);
      await topUp(kv, plain.id, 2_500);

      const url = await pg.createDatabase("copied");
      const wrong = await copy(join(dir, "missing.kv"), url);
      assert.equal(wrong.code, 1);
      assert.match(wrong.err, /No KV file/);

      const copied = await copy(kvPath, url);
      assert.equal(copied.code, 0, copied.err);
      assert.match(
        copied.out,
        /^Copied \d+ records .* 2 callers' ledgers and balances equal/,
      );

      const store = await openPostgresStore(url);
      try {
        assert.deepEqual(
          (await listCallers(store)).map((c) => c.id).sort(),
          (await listCallers(kv)).map((c) => c.id).sort(),
        );
        for (const caller of [plain, limited]) {
          const balance = await readBalance(kv, caller.id);
          assert.equal(await readBalance(store, caller.id), balance);
          const ledger = await listLedger(store, caller.id);
          assert.deepEqual(ledger, await listLedger(kv, caller.id));
          assert.equal(ledgerSum(ledger), balance);
          assert.deepEqual(
            await listTraces(store, caller.id),
            await listTraces(kv, caller.id),
          );
        }
        assert.deepEqual(await listLeases(store, plain.id), []);

        // The same keys work on a gateway over PostgreSQL, with their limits.
        const after = await spawnGateway({
          ...env,
          GATEWAY_KV_PATH: join(dir, "unused.kv"),
          GATEWAY_STORE: url,
        });
        try {
          const ok = await postJson(
            `${after.url}/v1/chat/completions`,
            plain.key,
            { model: "gpt-4o-mini", messages: HELLO, max_tokens: 32 },
          );
          assert.equal(ok.status, 200);
          await ok.body?.cancel();
          const refused = await postJson(
            `${after.url}/v1/chat/completions`,
            limited.key,
            { model: "gpt-4o", messages: HELLO, max_tokens: 32 },
          );
          assert.equal(refused.status, 403);
          await refused.body?.cancel();
        } finally {
          assert.equal((await after.stop()).code, 0);
        }
        const charges = (await listLedger(store, plain.id)).filter((e) =>
          e.kind === "charge"
        );
        assert.equal(charges.length, 4, "three before the move, one after");
        assert.equal(
          ledgerSum(await listLedger(store, plain.id)),
          await readBalance(store, plain.id),
        );
      } finally {
        await store.end();
      }

      const again = await copy(kvPath, url);
      assert.equal(again.code, 1);
      assert.match(again.err, /not empty: refusing to overwrite/);
    } finally {
      kv.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "store copy is refused while a gateway has the KV open, replays a killed gateway's journal into the copy, and refuses a source whose ledger and balance disagree",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    const dir = await Deno.makeTempDir();
    await using pg = await startPostgres();
    await using sim = await startSimulator();
    const kvPath = join(dir, "gateway.kv");
    try {
      let caller;
      {
        using kv = await Deno.openKv(kvPath);
        caller = await createCaller(kv, {
          name: "busy",
          creditsMicros: usdToMicros(1),
        });
      }
      const gateway = await spawnGateway({
        ...sim.env(),
        GATEWAY_KV_PATH: kvPath,
        OPENAI_API_KEYS: "sk-copy-busy-0123456789abcdef",
      });
      let answered = 0;
      for (let i = 0; i < 5; i++) {
        const response = await postJson(
          `${gateway.url}/v1/chat/completions`,
          caller.key,
          { model: "gpt-4o-mini", messages: HELLO, max_tokens: 16 },
        );
        assert.equal(response.status, 200);
        answered += Math.round(
          Number(response.headers.get("x-gateway-cost")) * 1e6,
        );
        await response.body?.cancel();
      }
      const busy = await copy(kvPath, await pg.createDatabase("busy"));
      assert.equal(busy.code, 1);
      assert.match(busy.err, /A gateway has this KV open/);

      // Killed: its journal is dead, replayed into the source, then copied.
      gateway.child.kill("SIGKILL");
      await gateway.child.status;
      await delay(100);
      const url = await pg.createDatabase("after_kill");
      const copied = await copy(kvPath, url);
      assert.equal(copied.code, 0, copied.err);
      const store = await openPostgresStore(url);
      try {
        const ledger = await listLedger(store, caller.id);
        assert.equal(ledgerSum(ledger), usdToMicros(1) - answered);
        assert.equal(await readBalance(store, caller.id), ledgerSum(ledger));
        assert.deepEqual(await listLeases(store, caller.id), []);
      } finally {
        await store.end();
      }

      // Money that does not add up in the source is not copied.
      {
        using kv = await Deno.openKv(kvPath);
        const unleased = await kv.get<number>(unleasedKey(caller.id));
        await kv.set(unleasedKey(caller.id), (unleased.value ?? 0) + 1);
      }
      const bad = await copy(kvPath, await pg.createDatabase("bad"));
      assert.equal(bad.code, 1);
      assert.match(bad.err, /does not add up/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

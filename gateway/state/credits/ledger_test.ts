import assert from "node:assert/strict";
import { createCaller } from "../callers.ts";
import { unleasedKey } from "../kv_keys.ts";
import { createBilling } from "./billing.ts";
import {
  addOpeningBalanceWrites,
  BalanceRangeError,
  listLeases,
  listLedger,
  readBalance,
  readUnleased,
  topUp,
} from "./ledger.ts";
import { MAX_BALANCE_MICROS } from "./money.ts";

async function withKv(fn: (kv: Deno.Kv) => Promise<void>): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  try {
    await fn(kv);
  } finally {
    kv.close();
  }
}

function sumOf(entries: { amountMicros: number }[]): number {
  return entries.reduce((sum, entry) => sum + entry.amountMicros, 0);
}

Deno.test("topUp() adds and removes credits, each a ledger entry, and the balance is their sum", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, {
      name: "a",
      creditsMicros: 1_000_000,
      now: 1_000,
    });
    assert.equal(await topUp(kv, caller.id, 250_000, 2_000), 1_250_000);
    assert.equal(await topUp(kv, caller.id, -50_000, 3_000), 1_200_000);
    assert.equal(await readBalance(kv, caller.id), 1_200_000);
    assert.equal(await readUnleased(kv, caller.id), 1_200_000);
    const ledger = await listLedger(kv, caller.id);
    assert.deepEqual(
      ledger.map((entry) => [entry.kind, entry.amountMicros, entry.time]),
      [
        ["topup", -50_000, 3_000],
        ["topup", 250_000, 2_000],
        ["topup", 1_000_000, 1_000],
      ],
    );
    assert.equal(sumOf(ledger), 1_200_000);
    assert.equal((await listLedger(kv, caller.id, { limit: 1 })).length, 1);
  });
});

Deno.test("topUp() refuses a removal below zero, a balance past the maximum, a fractional amount and an unknown caller, changing nothing", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, { name: "a", creditsMicros: 100 });
    await assert.rejects(
      topUp(kv, caller.id, -101),
      (error: unknown) =>
        error instanceof BalanceRangeError &&
        error.message ===
          `Cannot remove "101" micro-USD from caller "${caller.id}": the unleased credits are "100"`,
    );
    await assert.rejects(
      topUp(kv, caller.id, MAX_BALANCE_MICROS),
      BalanceRangeError,
    );
    await assert.rejects(topUp(kv, caller.id, 1.5), BalanceRangeError);
    await assert.rejects(topUp(kv, "ck_missing", 1), Deno.errors.NotFound);
    assert.equal(await readBalance(kv, caller.id), 100);
    assert.equal((await listLedger(kv, caller.id)).length, 1);
  });
});

Deno.test("concurrent top-ups all land exactly once (conflicting commits are retried)", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, { name: "a", creditsMicros: 0 });
    const balances = await Promise.all(
      Array.from({ length: 30 }, () => topUp(kv, caller.id, 1_000)),
    );
    assert.equal(await readBalance(kv, caller.id), 30_000);
    // Each commit saw the one before it: every balance from 1 000 to 30 000 once.
    assert.deepEqual(
      balances.toSorted((a, b) => a - b),
      Array.from({ length: 30 }, (_, i) => (i + 1) * 1_000),
    );
    const ledger = await listLedger(kv, caller.id);
    assert.equal(ledger.length, 30);
    assert.equal(sumOf(ledger), 30_000);
  });
});

Deno.test("readBalance() counts a lease's money once: unleased credits plus what leases hold", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, { name: "a", creditsMicros: 10_000 });
    const billing = createBilling(kv, { leaseAheadCalls: 0 });
    const held = await billing.reserve(caller.id, 4_000);
    assert.ok(held.ok);
    const leases = await listLeases(kv, caller.id);
    assert.equal(leases.length, 1);
    assert.equal(leases[0].amountMicros, 4_000);
    assert.equal(await readUnleased(kv, caller.id), 6_000);
    assert.equal(await readBalance(kv, caller.id), 10_000);
    // A lease holds money taken from the unleased credits, not a top-up:
    // a removal can take only what is unleased.
    await assert.rejects(topUp(kv, caller.id, -6_001), BalanceRangeError);
    assert.equal(await topUp(kv, caller.id, -6_000), 4_000);
    await billing.flush();
  });
});

Deno.test("addOpeningBalanceWrites() opens a balance once: a second opening of the same caller does not commit", async () => {
  await withKv(async (kv) => {
    const first = await addOpeningBalanceWrites(kv.atomic(), "ck_new", 500, 1)
      .commit();
    assert.ok(first.ok);
    const second = await addOpeningBalanceWrites(kv.atomic(), "ck_new", 9, 2)
      .commit();
    assert.equal(second.ok, false);
    assert.equal((await kv.get(unleasedKey("ck_new"))).value, 500);
    const ledger = await listLedger(kv, "ck_new");
    assert.deepEqual(ledger.map((entry) => entry.amountMicros), [500]);
    // Opening credits of zero write no ledger entry.
    await addOpeningBalanceWrites(kv.atomic(), "ck_zero", 0, 1).commit();
    assert.equal((await listLedger(kv, "ck_zero")).length, 0);
    assert.throws(
      () => addOpeningBalanceWrites(kv.atomic(), "ck_bad", -1, 1),
      RangeError,
    );
  });
});

import assert from "node:assert/strict";
import { createCaller } from "../callers.ts";
import { createBilling } from "./billing.ts";
import {
  type JournalCharge,
  pendingCharges,
  replayJournals,
  SettleJournal,
} from "./journal.ts";
import { listLeases, readBalance, readUnleased } from "./ledger.ts";
import { usdToMicros } from "./money.ts";

function chargeOf(
  callerId: string,
  chargeId: string,
  extra: Partial<JournalCharge> = {},
): JournalCharge {
  return {
    chargeId,
    callerId,
    reservationId: `rs_${chargeId}`,
    costMicros: 1_500,
    usage: { inputTokens: 10, outputTokens: 5, cachedInputTokens: 0 },
    trace: {
      requestId: `req_${chargeId}`,
      traceId: `t_${chargeId}`,
      callerId,
      route: "chat",
      status: 200,
      stream: false,
      inputTokens: 10,
      outputTokens: 5,
      cachedTokens: 0,
      costMicros: 1_500,
      latencyMs: 3,
      time: Date.now(),
    },
    time: Date.now(),
    ...extra,
  };
}

/** Makes a journal look like a dead process's: nobody touched it for ten minutes. */
async function age(path: string) {
  const old = new Date(Date.now() - 600_000);
  await Deno.utime(path, old, old);
}

/** The sum of a caller's ledger entries. */
async function ledgerSum(kv: Deno.Kv, callerId: string): Promise<number> {
  let sum = 0;
  for await (
    const entry of kv.list<{ amountMicros: number }>({
      prefix: ["ledger", callerId],
    })
  ) sum += entry.value.amountMicros;
  return sum;
}

Deno.test("pendingCharges() keeps the charges not marked done and skips a line cut short", () => {
  const a = chargeOf("ck_1", "c1");
  const b = chargeOf("ck_1", "c2");
  const text = [
    JSON.stringify({ charge: a }),
    JSON.stringify({ charge: b }),
    JSON.stringify({ done: "c1" }),
    JSON.stringify({ charge: chargeOf("ck_1", "c3") }).slice(0, 40),
  ].join("\n");
  assert.deepEqual(pendingCharges(text).map((c) => c.chargeId), ["c2"]);
});

Deno.test("SettleJournal writes each charge before it commits, and its file goes once nothing is pending", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const journal = await SettleJournal.open(dir);
    journal.record(chargeOf("ck_1", "c1"));
    journal.record(chargeOf("ck_1", "c2"));
    journal.done("c1");
    assert.equal(journal.pending, 1);
    // Written through already: a process killed now leaves this behind.
    const text = await Deno.readTextFile(journal.path);
    assert.deepEqual(pendingCharges(text).map((c) => c.chargeId), ["c2"]);
    journal.done("c2");
    journal.close();
    assert.deepEqual(await Array.fromAsync(Deno.readDir(dir)), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("replayJournals() charges a dead process's pending charges once, gives its lease back, and leaves living journals alone", async () => {
  const dir = await Deno.makeTempDir();
  using kv = await Deno.openKv(":memory:");
  try {
    const caller = await createCaller(kv, {
      name: "a",
      creditsMicros: usdToMicros(1),
    });
    // A process took a lease and answered two calls, then died before
    // their charges committed: the lease is still out, the charges are only
    // in its journal.
    const dead = createBilling(kv, { leaseIdleMs: 3_600_000 });
    const held = await dead.reserve(caller.id, 10_000);
    assert.ok(held.ok);
    const [lease] = await listLeases(kv, caller.id);
    assert.ok(lease.amountMicros >= 10_000);
    const journal = await SettleJournal.open(dir);
    journal.record(chargeOf(caller.id, "c1", { leaseId: lease.id }));
    journal.record(chargeOf(caller.id, "c2", { leaseId: lease.id }));
    // The same charge again in a second journal: charged once.
    const copy = await SettleJournal.open(dir);
    copy.record(chargeOf(caller.id, "c2", { leaseId: lease.id }));
    // A living process's journal: touched just now.
    const living = await SettleJournal.open(dir);
    living.record(chargeOf(caller.id, "c3"));

    await age(journal.path);
    await age(copy.path);
    const result = await replayJournals(kv, dir);
    assert.deepEqual(result, {
      journals: 2,
      charged: 2,
      alreadyCharged: 1,
      leasesReturned: 1,
    });
    assert.deepEqual(await listLeases(kv, caller.id), []);
    const balance = await readBalance(kv, caller.id);
    assert.equal(balance, usdToMicros(1) - 3_000);
    assert.equal(await readUnleased(kv, caller.id), balance);
    assert.equal(await ledgerSum(kv, caller.id), balance);
    // A second replay finds nothing more to do.
    assert.equal((await replayJournals(kv, dir)).charged, 0);
    const left = (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name);
    assert.deepEqual(left, [living.path.slice(dir.length + 1)]);
    journal.close();
    copy.close();
    living.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

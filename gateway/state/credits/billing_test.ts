import assert from "node:assert/strict";
import { createCaller } from "../callers.ts";
import { listTraces } from "../traces.ts";
import type { Reservation, Settlement } from "./reservation.ts";
import type { TraceRecord } from "../traces.ts";
import { createBilling } from "./billing.ts";
import {
  BalanceRangeError,
  listLeases,
  listLedger,
  readBalance,
  readUnleased,
  topUp,
} from "./ledger.ts";
import { MAX_BALANCE_MICROS } from "./money.ts";
import { sweepExpiredLeases } from "./sweep.ts";

function traceFor(callerId: string, requestId: string): TraceRecord {
  return {
    requestId,
    traceId: `trace-${requestId}`,
    callerId,
    model: "gpt-4o",
    route: "chat",
    provider: "openai",
    status: 200,
    stream: false,
    inputTokens: 10,
    outputTokens: 20,
    cachedTokens: 0,
    costMicros: 0,
    latencyMs: 5,
    time: Date.now(),
  };
}

function settlementFor(
  reservation: Reservation,
  cost: number,
  requestId: string,
): Settlement {
  return {
    reservation,
    costMicros: cost,
    usage: { inputTokens: 10, outputTokens: 20, cachedInputTokens: 0 },
    trace: traceFor(reservation.callerId, requestId),
  };
}

async function ledgerSum(kv: Deno.Kv, callerId: string): Promise<number> {
  const entries = await listLedger(kv, callerId);
  return entries.reduce((sum, entry) => sum + entry.amountMicros, 0);
}

async function withKv(fn: (kv: Deno.Kv) => Promise<void>): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  try {
    await fn(kv);
  } finally {
    kv.close();
  }
}

Deno.test("reserve() lets exactly the reservations that fit succeed among 100 concurrent ones", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, {
      name: "busy",
      creditsMicros: 10_500,
    });
    const billing = createBilling(kv);
    const results = await Promise.all(
      Array.from({ length: 100 }, () => billing.reserve(caller.id, 1_000)),
    );
    assert.equal(results.filter((result) => result.ok).length, 10);
    assert.equal(await readUnleased(kv, caller.id), 500);
    const refused = results.filter((result) => !result.ok);
    assert.ok(refused.every((result) => result.availableMicros === 500));
  });
});

Deno.test("reserve() never lets two billing instances on one KV spend past the balance", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, {
      name: "shared",
      creditsMicros: 10_000,
    });
    const first = createBilling(kv);
    const second = createBilling(kv);
    const results = await Promise.all(
      Array.from(
        { length: 60 },
        (_, i) => (i % 2 === 0 ? first : second).reserve(caller.id, 1_000),
      ),
    );
    assert.equal(results.filter((result) => result.ok).length, 10);
    assert.equal(await readUnleased(kv, caller.id), 0);
  });
});

Deno.test("reserve() refuses an unknown caller without writing anything", async () => {
  await withKv(async (kv) => {
    const result = await createBilling(kv).reserve("ck_missing", 1);
    assert.deepEqual(result, { ok: false, availableMicros: 0 });
    assert.equal((await Array.fromAsync(kv.list({ prefix: [] }))).length, 0);
  });
});

Deno.test("settle() returns the unspent part of the reservation and records the charge and trace", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, {
      name: "alice",
      creditsMicros: 100_000,
    });
    const billing = createBilling(kv);
    const held = await billing.reserve(caller.id, 5_000);
    assert.ok(held.ok);
    assert.equal(held.availableMicros, 95_000);
    const settled = await billing.settle(
      settlementFor(held.reservation, 1_234, "req_1"),
    );
    assert.deepEqual(settled, { availableMicros: 98_766 });
    assert.equal(await billing.balance(caller.id), 98_766);

    const [charge, opening] = await listLedger(kv, caller.id);
    assert.equal(opening.kind, "topup");
    assert.equal(charge.kind, "charge");
    assert.equal(charge.amountMicros, -1_234);
    assert.equal(charge.requestId, "req_1");
    assert.equal(charge.model, "gpt-4o");
    assert.equal(charge.provider, "openai");
    assert.equal(charge.outputTokens, 20);

    const [trace] = await listTraces(kv, caller.id);
    assert.equal(trace.requestId, "req_1");
    assert.equal(trace.costMicros, 1_234);
    assert.equal(await readBalance(kv, caller.id), 98_766);
  });
});

Deno.test("settle() and settleSoon() record in the trace the token classes the charge priced", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, {
      name: "alice",
      creditsMicros: 100_000,
    });
    const billing = createBilling(kv);
    const usage = {
      inputTokens: 16_559,
      outputTokens: 734,
      cachedInputTokens: 12_004,
      cacheWriteTokens: 337,
      cacheWrite1hTokens: 3_000,
      reasoningTokens: 100,
    };
    const charged = {
      input: 1_218,
      cacheRead: 12_004,
      cacheWrite5m: 337,
      cacheWrite1h: 3_000,
      output: 734,
      reasoning: 100,
    };
    for (
      const [requestId, soon] of [["req_now", false], [
        "req_soon",
        true,
      ]] as const
    ) {
      const held = await billing.reserve(caller.id, 20_000);
      assert.ok(held.ok);
      const settlement = {
        ...settlementFor(held.reservation, 11_000, requestId),
        usage,
      };
      if (soon) billing.settleSoon(settlement);
      else await billing.settle(settlement);
    }
    await billing.flush();
    const traces = await listTraces(kv, caller.id);
    assert.equal(traces.length, 2);
    for (const trace of traces) assert.deepEqual(trace.charged, charged);
  });
});

Deno.test("settle() refuses to close a reservation twice", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, {
      name: "twice",
      creditsMicros: 10_000,
    });
    const billing = createBilling(kv);
    const held = await billing.reserve(caller.id, 5_000);
    assert.ok(held.ok);
    await billing.settle(settlementFor(held.reservation, 1_000, "req_1"));
    await assert.rejects(
      billing.settle(settlementFor(held.reservation, 1_000, "req_1")),
      /already settled/,
    );
    await assert.rejects(
      billing.settle(
        settlementFor(
          { id: "rs_nope", callerId: caller.id, amountMicros: 1 },
          0,
          "req_2",
        ),
      ),
      /unknown/,
    );
    assert.equal(await readUnleased(kv, caller.id), 9_000);
  });
});

Deno.test("settle() charges the full cost above the reservation, and a caller in debt is refused", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, {
      name: "over",
      creditsMicros: 3_000,
    });
    const billing = createBilling(kv);
    const held = await billing.reserve(caller.id, 1_000);
    assert.ok(held.ok);
    const settled = await billing.settle(
      settlementFor(held.reservation, 5_000, "req_1"),
    );
    assert.equal(settled.availableMicros, -2_000);
    const [charge] = await listLedger(kv, caller.id, { limit: 1 });
    assert.equal(charge.amountMicros, -5_000);
    assert.equal(await readBalance(kv, caller.id), -2_000);
    assert.equal(await ledgerSum(kv, caller.id), -2_000);
    const refused = await billing.reserve(caller.id, 1);
    assert.deepEqual(refused, { ok: false, availableMicros: -2_000 });
    await topUp(kv, caller.id, 2_500);
    assert.ok((await billing.reserve(caller.id, 500)).ok);
    await billing.flush();
  });
});

Deno.test("sweepExpiredLeases() releases a reservation its crashed process left open", async () => {
  await withKv(async (kv) => {
    let now = 1_000_000;
    const caller = await createCaller(kv, {
      name: "crash",
      creditsMicros: 10_000,
    });
    const billing = createBilling(kv, {
      leaseTtlMs: 60_000,
      now: () => now,
    });
    const held = await billing.reserve(caller.id, 4_000);
    assert.ok(held.ok);

    assert.deepEqual(await sweepExpiredLeases(kv, now + 60_000), {
      released: 0,
      releasedMicros: 0,
    });
    assert.equal(await readUnleased(kv, caller.id), 6_000);

    now += 60_001;
    assert.deepEqual(await sweepExpiredLeases(kv, now), {
      released: 1,
      releasedMicros: 4_000,
    });
    assert.equal(await readUnleased(kv, caller.id), 10_000);
    assert.deepEqual(await sweepExpiredLeases(kv, now), {
      released: 0,
      releasedMicros: 0,
    });
    // The reservation's money was held by its lease: the lease is what went back.
    assert.deepEqual(await listLeases(kv, caller.id), []);

    // The process was only slow: its late settle still pays the real cost, once.
    await billing.settle(settlementFor(held.reservation, 1_500, "req_late"));
    assert.equal(await readUnleased(kv, caller.id), 8_500);
    assert.equal(await ledgerSum(kv, caller.id), 8_500);
  });
});

Deno.test("sweepExpiredLeases() racing settle() never returns the money twice", async () => {
  await withKv(async (kv) => {
    let now = 0;
    const caller = await createCaller(kv, {
      name: "race",
      creditsMicros: 1_000_000,
    });
    const billing = createBilling(kv, { leaseTtlMs: 10, now: () => now });
    const reservations: Reservation[] = [];
    for (let i = 0; i < 20; i++) {
      const held = await billing.reserve(caller.id, 10_000);
      assert.ok(held.ok);
      reservations.push(held.reservation);
    }
    now = 100;
    await Promise.all([
      sweepExpiredLeases(kv, now),
      ...reservations.map((reservation, i) =>
        billing.settle(settlementFor(reservation, 700, `req_${i}`))
      ),
      sweepExpiredLeases(kv, now),
    ]);
    // Whichever won, the lease (renewed by the settles, or swept) is
    // returned by flush(); only then is the KV balance the whole balance.
    await billing.flush();
    assert.equal(await readUnleased(kv, caller.id), 1_000_000 - 20 * 700);
    assert.equal(await ledgerSum(kv, caller.id), 1_000_000 - 20 * 700);
  });
});

Deno.test("topUp() adds and removes credits as ledger entries, never below zero", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, { name: "bob", creditsMicros: 0 });
    assert.equal((await listLedger(kv, caller.id)).length, 0);
    assert.equal(await topUp(kv, caller.id, 5_000), 5_000);
    assert.equal(await topUp(kv, caller.id, -2_000), 3_000);
    await assert.rejects(topUp(kv, caller.id, 1.5), BalanceRangeError);
    await assert.rejects(topUp(kv, caller.id, -3_001), BalanceRangeError);
    // The balance stays where micro-USD are exact.
    await assert.rejects(
      topUp(kv, caller.id, MAX_BALANCE_MICROS),
      BalanceRangeError,
    );
    await assert.rejects(topUp(kv, "ck_missing", 1), Deno.errors.NotFound);
    const entries = await listLedger(kv, caller.id);
    assert.deepEqual(entries.map((entry) => entry.amountMicros), [
      -2_000,
      5_000,
    ]);
    assert.equal(await readUnleased(kv, caller.id), 3_000);
  });
});

Deno.test("the ledger sums exactly to the balance change over mixed concurrent work", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, {
      name: "mixed",
      creditsMicros: 50_000,
    });
    const billing = createBilling(kv);
    let reserved = 0;
    const work = Array.from({ length: 40 }, async (_, i) => {
      if (i % 10 === 0) return void await topUp(kv, caller.id, 1_000 + i);
      const held = await billing.reserve(caller.id, 3_000);
      if (!held.ok) return;
      reserved++;
      await billing.settle(
        settlementFor(held.reservation, (i * 997) % 3_001, `req_${i}`),
      );
    });
    await Promise.all(work);
    // The ledger matches the KV balance once the lease is returned.
    await billing.flush();
    const entries = await listLedger(kv, caller.id);
    const now = await readUnleased(kv, caller.id);
    assert.ok(now >= 0);
    assert.equal(
      entries.reduce((sum, entry) => sum + entry.amountMicros, 0),
      now,
    );
    const charges = entries.filter((entry) => entry.kind === "charge");
    assert.equal(charges.length, reserved);
    assert.ok(reserved > 10);
  });
});

Deno.test("reserve() grants concurrent reserves of mixed sizes exactly as one-at-a-time commits would", async () => {
  await withKv(async (kv) => {
    const opening = 50_000;
    const caller = await createCaller(kv, {
      name: "batched",
      creditsMicros: opening,
    });
    const billing = createBilling(kv);
    // 200 requests: more than one batch holds, sizes that leave gaps the
    // smaller ones behind a refused big one can still fill.
    const amounts = Array.from(
      { length: 200 },
      (_, i) => [700, 3_100, 90][i % 3],
    );
    const results = await Promise.all(
      amounts.map((amount) => billing.reserve(caller.id, amount)),
    );
    let expected = opening;
    results.forEach((result, i) => {
      const fits = amounts[i] <= expected;
      if (fits) expected -= amounts[i];
      assert.equal(result.ok, fits, `request ${i}`);
      assert.equal(result.availableMicros, expected, `request ${i}`);
    });
    assert.equal(await readUnleased(kv, caller.id), expected);
    const granted = results.filter((result) => result.ok);
    assert.equal(
      new Set(granted.map((result) => result.ok && result.reservation.id))
        .size,
      granted.length,
    );
  });
});

Deno.test("settleSoon() reports the balance at once, balance() sees it and flush() commits every charge", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, {
      name: "behind",
      creditsMicros: 100_000,
    });
    const billing = createBilling(kv);
    const held = await Promise.all(
      Array.from({ length: 30 }, () => billing.reserve(caller.id, 2_000)),
    );
    assert.equal(held.filter((result) => result.ok).length, 30);
    const reported = held.map((result, i) => {
      assert.ok(result.ok);
      return billing.settleSoon(
        settlementFor(result.reservation, 100 + i, `req_${i}`),
      ).availableMicros;
    });
    // Each settle returns its 2 000 hold and pays 100 + i, in order.
    let expected = 100_000 - 30 * 2_000;
    reported.forEach((availableMicros, i) => {
      expected += 2_000 - (100 + i);
      assert.equal(availableMicros, expected, `settle ${i}`);
    });
    assert.equal(await billing.balance(caller.id), expected);
    await billing.flush();
    assert.equal(await readUnleased(kv, caller.id), expected);
    const charges = (await listLedger(kv, caller.id)).filter((entry) =>
      entry.kind === "charge"
    );
    assert.equal(charges.length, 30);
    assert.equal(await ledgerSum(kv, caller.id), expected);
    assert.equal((await listTraces(kv, caller.id, { limit: 100 })).length, 30);
  });
});

Deno.test("settleSoon() of a reservation it cannot close logs it and leaves the money untouched", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, {
      name: "lost",
      creditsMicros: 10_000,
    });
    const logged: Record<string, unknown>[] = [];
    const billing = createBilling(kv, { log: (record) => logged.push(record) });
    const held = await billing.reserve(caller.id, 4_000);
    assert.ok(held.ok);
    billing.settleSoon(settlementFor(held.reservation, 1_000, "req_1"));
    billing.settleSoon(settlementFor(held.reservation, 1_000, "req_again"));
    billing.settleSoon(
      settlementFor(
        { id: "rs_unknown", callerId: caller.id, amountMicros: 500 },
        500,
        "req_unknown",
      ),
    );
    await billing.flush();
    assert.equal(logged.length, 2);
    assert.match(String(logged[0].message), /already settled/);
    assert.equal(logged[0].requestId, "req_again");
    assert.match(String(logged[1].message), /unknown/);
    assert.equal(await readUnleased(kv, caller.id), 9_000);
    assert.equal(await ledgerSum(kv, caller.id), 9_000);
    // A later settleSoon starts from the committed balance, not the failed ones.
    const next = await billing.reserve(caller.id, 1_000);
    assert.ok(next.ok);
    assert.equal(
      billing.settleSoon(settlementFor(next.reservation, 250, "req_2"))
        .availableMicros,
      8_750,
    );
    await billing.flush();
    assert.equal(await readUnleased(kv, caller.id), 8_750);
  });
});

Deno.test("settle() spreads concurrent settles too large for one atomic over several commits", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, {
      name: "bulky",
      creditsMicros: 1_000_000,
    });
    const billing = createBilling(kv);
    const held = await Promise.all(
      Array.from({ length: 40 }, () => billing.reserve(caller.id, 1_000)),
    );
    // Each settle writes its 40 KB trace: 40 of them are about 1.6 MB, twice
    // what one atomic may write.
    const bulky = "x".repeat(40_000);
    await Promise.all(held.map((result, i) => {
      assert.ok(result.ok);
      const settlement = settlementFor(result.reservation, 10, `req_${i}`);
      return billing.settle({
        ...settlement,
        trace: { ...settlement.trace, error: bulky },
      });
    }));
    await billing.flush();
    assert.equal(await readUnleased(kv, caller.id), 1_000_000 - 40 * 10);
    assert.equal(await ledgerSum(kv, caller.id), 1_000_000 - 40 * 10);
  });
});

Deno.test("a reservation whose write-behind settle never ran is released by the sweep", async () => {
  await withKv(async (kv) => {
    let now = 1_000;
    const caller = await createCaller(kv, {
      name: "crashed",
      creditsMicros: 10_000,
    });
    // A process that answered the call, then died before its settle committed.
    const crashed = createBilling(kv, {
      leaseTtlMs: 1_000,
      now: () => now,
    });
    const held = await crashed.reserve(caller.id, 3_000);
    assert.ok(held.ok);
    now += 1_001;
    assert.deepEqual(await sweepExpiredLeases(kv, now), {
      released: 1,
      releasedMicros: 3_000,
    });
    assert.equal(await readUnleased(kv, caller.id), 10_000);
    assert.equal(await ledgerSum(kv, caller.id), 10_000);
  });
});

/** A KV that counts commits, to tell which operations reach KV. */
function countingKv(kv: Deno.Kv): { kv: Deno.Kv; commits: () => number } {
  let commits = 0;
  const proxy = new Proxy(kv, {
    get(target, property) {
      if (property === "atomic") {
        return () => {
          const op = target.atomic();
          const commit = op.commit.bind(op);
          op.commit = () => {
            commits++;
            return commit();
          };
          return op;
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { kv: proxy, commits: () => commits };
}

Deno.test("reserve() takes reservations the lease covers in memory, without a KV commit", async () => {
  await withKv(async (raw) => {
    const caller = await createCaller(raw, {
      name: "leased",
      creditsMicros: 1_000_000,
    });
    const { kv, commits } = countingKv(raw);
    const billing = createBilling(kv, { leaseAheadCalls: 8 });
    const first = await billing.reserve(caller.id, 1_000);
    assert.ok(first.ok);
    // One commit moved the call's 1 000 and 8 calls ahead into the lease.
    assert.equal(commits(), 1);
    const [lease] = await listLeases(raw, caller.id);
    assert.equal(lease.amountMicros, 9_000);
    assert.equal(await readUnleased(raw, caller.id), 991_000);
    for (let i = 0; i < 3; i++) {
      const held = await billing.reserve(caller.id, 1_000);
      assert.ok(held.ok);
      assert.equal(held.availableMicros, 1_000_000 - (i + 2) * 1_000);
    }
    assert.equal(commits(), 1);
    // Reservations are still the caller's money until they settle.
    assert.equal(await billing.balance(caller.id), 1_000_000);
    assert.equal(commits(), 1);
    await billing.flush();
  });
});

Deno.test("reserve() grows a lease that falls short by one commit, taking the shortfall and calls ahead", async () => {
  await withKv(async (raw) => {
    const caller = await createCaller(raw, {
      name: "growing",
      creditsMicros: 1_000_000,
    });
    const { kv, commits } = countingKv(raw);
    const billing = createBilling(kv, { leaseAheadCalls: 2 });
    assert.ok((await billing.reserve(caller.id, 1_000)).ok);
    assert.equal((await listLeases(raw, caller.id))[0].amountMicros, 3_000);
    // 2 000 free in the lease; the call needs 5 000: 3 000 short, plus two
    // calls of 5 000 ahead.
    const big = await billing.reserve(caller.id, 5_000);
    assert.ok(big.ok);
    assert.equal(big.availableMicros, 994_000);
    assert.equal(commits(), 2);
    assert.equal((await listLeases(raw, caller.id))[0].amountMicros, 16_000);
    assert.equal(await readUnleased(raw, caller.id), 984_000);
    // flush() returns the unreserved part; the lease keeps the two
    // reservations' 6 000 until they settle.
    await billing.flush();
    assert.equal((await listLeases(raw, caller.id))[0].amountMicros, 6_000);
    assert.equal(await readUnleased(raw, caller.id), 994_000);
  });
});

Deno.test("a lease takes nothing ahead when the balance covers few calls, so other processes can spend the rest", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, {
      name: "small",
      creditsMicros: 10_000,
    });
    const billing = createBilling(kv);
    assert.ok((await billing.reserve(caller.id, 3_000)).ok);
    // A quarter of the 7 000 left is less than one call: the lease is exact.
    assert.equal((await listLeases(kv, caller.id))[0].amountMicros, 3_000);
    assert.equal(await readUnleased(kv, caller.id), 7_000);
    await billing.flush();
  });
});

Deno.test("an idle caller's lease goes back to the balance and the ledger matches it", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, {
      name: "idle",
      creditsMicros: 1_000_000,
    });
    const billing = createBilling(kv, { leaseIdleMs: 50 });
    const held = await billing.reserve(caller.id, 5_000);
    assert.ok(held.ok);
    billing.settleSoon(settlementFor(held.reservation, 1_200, "req_idle"));
    assert.equal((await listLeases(kv, caller.id)).length, 1);
    const deadline = Date.now() + 2_000;
    while ((await listLeases(kv, caller.id)).length > 0) {
      assert.ok(Date.now() < deadline, "the idle lease was not returned");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(await readUnleased(kv, caller.id), 998_800);
    assert.equal(await ledgerSum(kv, caller.id), 998_800);
    await billing.flush();
  });
});

Deno.test("sweepExpiredLeases() returns only the expired lease of a crashed process, and a late settle charges once", async () => {
  await withKv(async (kv) => {
    let now = 0;
    const caller = await createCaller(kv, {
      name: "two",
      creditsMicros: 100_000,
    });
    const options = { leaseTtlMs: 1_000, now: () => now };
    const crashed = createBilling(kv, options);
    const alive = createBilling(kv, options);
    const lost = await crashed.reserve(caller.id, 4_000);
    assert.ok(lost.ok);
    const [crashedLease] = await listLeases(kv, caller.id);
    now = 900;
    assert.ok((await alive.reserve(caller.id, 4_000)).ok);
    now = 1_001;
    assert.deepEqual(await sweepExpiredLeases(kv, now), {
      released: 1,
      releasedMicros: crashedLease.amountMicros,
    });
    const open = await listLeases(kv, caller.id);
    assert.equal(open.length, 1);
    assert.notEqual(open[0].id, crashedLease.id);
    const before = await readUnleased(kv, caller.id);
    // The process was only slow: its settle finds the lease gone and
    // charges the balance, once.
    await crashed.settle(settlementFor(lost.reservation, 1_500, "req_late"));
    assert.equal(await readUnleased(kv, caller.id), before - 1_500);
    await assert.rejects(
      crashed.settle(settlementFor(lost.reservation, 1_500, "req_again")),
      /already settled/,
    );
    await crashed.flush();
    await alive.flush();
    // The alive process's reservation still holds its 4 000.
    assert.equal(await readUnleased(kv, caller.id), 100_000 - 1_500 - 4_000);
    assert.equal(await ledgerSum(kv, caller.id), 100_000 - 1_500);
  });
});

Deno.test("two billing instances leasing one small balance never overspend, and every call it covers succeeds once leases return", async () => {
  await withKv(async (kv) => {
    const caller = await createCaller(kv, {
      name: "contended",
      creditsMicros: 20_000,
    });
    const instances = [
      createBilling(kv, { leaseAheadCalls: 4 }),
      createBilling(kv, { leaseAheadCalls: 4 }),
    ];
    let succeeded = 0;
    let request = 0;
    for (let round = 0; round < 50; round++) {
      const results = await Promise.all(
        instances.flatMap((billing) =>
          Array.from({ length: 3 }, async () => {
            const held = await billing.reserve(caller.id, 1_000);
            if (!held.ok) return false;
            await billing.settle(
              settlementFor(held.reservation, 1_000, `req_${request++}`),
            );
            return true;
          })
        ),
      );
      succeeded += results.filter(Boolean).length;
      if (!results.some(Boolean)) {
        // Refused everywhere: give back what the leases hold, then try once more.
        await Promise.all(instances.map((billing) => billing.flush()));
        if (await readUnleased(kv, caller.id) < 1_000) break;
      }
    }
    assert.equal(succeeded, 20);
    await Promise.all(instances.map((billing) => billing.flush()));
    assert.equal(await readUnleased(kv, caller.id), 0);
    assert.equal(await ledgerSum(kv, caller.id), 0);
    assert.deepEqual(await listLeases(kv, caller.id), []);
  });
});

Deno.test("the ledger sums exactly to the balance once flush() returns the leases of several instances", async () => {
  await withKv(async (kv) => {
    const opening = 200_000;
    const caller = await createCaller(kv, {
      name: "exact",
      creditsMicros: opening,
    });
    const instances = [createBilling(kv), createBilling(kv)];
    let charged = 0;
    let toppedUp = 0;
    await Promise.all(Array.from({ length: 120 }, async (_, i) => {
      if (i % 20 === 0) {
        await topUp(kv, caller.id, 5_000);
        toppedUp += 5_000;
        return;
      }
      const billing = instances[i % 2];
      const held = await billing.reserve(caller.id, 2_000 + (i % 7) * 100);
      if (!held.ok) return;
      const cost = (i * 613) % 2_500;
      charged += cost;
      const settlement = settlementFor(held.reservation, cost, `req_${i}`);
      if (i % 3 === 0) await billing.settle(settlement);
      else billing.settleSoon(settlement);
    }));
    await Promise.all(instances.map((billing) => billing.flush()));
    assert.deepEqual(await listLeases(kv, caller.id), []);
    const final = await readUnleased(kv, caller.id);
    assert.equal(await ledgerSum(kv, caller.id), final);
    // Some costs were above their reservation; none took the balance below zero.
    assert.ok(final >= 0);
    assert.ok(opening + toppedUp - final <= charged);
  });
});

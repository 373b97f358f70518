import assert from "node:assert/strict";
import { leaseKey, unleasedKey } from "../kv_keys.ts";
import { listTraces, type TraceRecord } from "../traces.ts";
import {
  type CommitContext,
  CommitOutcomeUnknownError,
  runBatch,
} from "./_commit.ts";
import {
  type Job,
  type Lane,
  newLane,
  type Outcome,
  settleBytes,
} from "./_lane.ts";
import {
  type LeaseRecord,
  listLeases,
  listLedger,
  readBalance,
} from "./ledger.ts";
import type { Reservation, ReserveResult } from "./reservation.ts";

const CALLER = "ck_a";
const NOW = 1_700_000_000_000;

/** A KV that can run something before a commit, or fail it, and counts lost commits. */
interface InstrumentedKv extends Deno.Kv {
  /** Runs before the next commit; returning an error throws it instead of committing. */
  beforeCommit?: () => Promise<Error | void>;
  /** Thrown after the next commit was applied: its answer lost. */
  lostAnswer?: Error;
  commits: number;
  lostCommits: number;
}

function instrumented(kv: Deno.Kv): InstrumentedKv {
  const state = { commits: 0, lostCommits: 0 } as {
    commits: number;
    lostCommits: number;
    beforeCommit?: () => Promise<Error | void>;
    lostAnswer?: Error;
  };
  const atomic = () => {
    const op = kv.atomic();
    const commit = op.commit.bind(op);
    op.commit = async () => {
      state.commits++;
      const before = state.beforeCommit;
      state.beforeCommit = undefined;
      const error = await before?.();
      if (error) throw error;
      const result = await commit();
      if (!result.ok) state.lostCommits++;
      const lost = state.lostAnswer;
      state.lostAnswer = undefined;
      if (lost) throw lost;
      return result;
    };
    return op;
  };
  return new Proxy(kv, {
    get(target, property) {
      if (property === "atomic") return atomic;
      if (property in state) return state[property as keyof typeof state];
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
    set(_target, property, value) {
      (state as Record<string, unknown>)[property as string] = value;
      return true;
    },
  }) as InstrumentedKv;
}

function contextFor(kv: Deno.Kv): CommitContext & { closed: string[] } {
  let next = 0;
  const closed: string[] = [];
  return {
    kv,
    sizing: { aheadCalls: 0, aheadShare: 0.25 },
    leaseTtlMs: 60_000,
    now: () => NOW,
    renewDue: () => false,
    openReservation: (callerId, _leaseId, amountMicros): Reservation => ({
      id: `rs_${++next}`,
      callerId,
      amountMicros,
    }),
    closeReservation: (id) => closed.push(id),
    closed,
  };
}

/** Runs one batch of one job and returns the job's outcome. */
async function runOne<T>(
  context: CommitContext,
  lane: Lane,
  job: (done: (outcome: Outcome<T>) => void) => Job,
): Promise<Outcome<T>> {
  const { promise, resolve } = Promise.withResolvers<Outcome<T>>();
  await runBatch(context, CALLER, lane, [job(resolve)]);
  return await promise;
}

function reserveJob(amountMicros: number) {
  return (done: (outcome: Outcome<ReserveResult>) => void): Job => ({
    kind: "reserve",
    amountMicros,
    done,
  });
}

function traceOf(requestId: string): TraceRecord {
  return {
    requestId,
    traceId: "t1",
    callerId: CALLER,
    route: "chat",
    status: 200,
    stream: false,
    inputTokens: 10,
    outputTokens: 20,
    cachedTokens: 0,
    costMicros: 0,
    latencyMs: 5,
    time: NOW,
  };
}

async function withKv(fn: (kv: InstrumentedKv) => Promise<void>) {
  const kv = await Deno.openKv(":memory:");
  try {
    await fn(instrumented(kv));
  } finally {
    kv.close();
  }
}

Deno.test("runBatch() leases what a reserve lacks, then a settle charges its exact cost with its ledger entry and trace in one commit", async () => {
  await withKv(async (kv) => {
    await kv.set(unleasedKey(CALLER), 10_000);
    const context = contextFor(kv);
    const lane = newLane();

    const reserved = await runOne(context, lane, reserveJob(3_000));
    assert.ok(reserved.ok && reserved.value.ok);
    const reservation = reserved.value.reservation;
    assert.equal(reservation.amountMicros, 3_000);
    assert.equal(lane.lease?.record.amountMicros, 3_000);
    assert.equal(lane.heldMicros, 3_000);
    assert.equal((await kv.get(unleasedKey(CALLER))).value, 7_000);
    assert.equal(await readBalance(kv, CALLER), 10_000);

    // What Billing's claim does before it queues the settle: the hold's
    // unspent part goes back to the lease, the rest earmarks the charge.
    const costMicros = 1_234;
    lane.heldMicros -= reservation.amountMicros - costMicros;
    const leaseId = lane.lease!.record.id;
    const open = {
      id: reservation.id,
      callerId: CALLER,
      leaseId,
      amountMicros: costMicros,
      settling: true,
    };
    const trace = traceOf("req_1");
    const settled = await runOne<{ availableMicros: number }>(
      context,
      lane,
      (done) => ({
        kind: "settle",
        settlement: {
          reservation,
          costMicros,
          usage: { inputTokens: 10, outputTokens: 20, cachedInputTokens: 0 },
          trace,
        },
        open,
        bytes: settleBytes(trace),
        done,
      }),
    );
    assert.ok(settled.ok);
    assert.equal(settled.value.availableMicros, 10_000 - costMicros);
    assert.deepEqual(context.closed, [reservation.id]);
    assert.equal(lane.heldMicros, 0);
    assert.equal(await readBalance(kv, CALLER), 10_000 - costMicros);
    // Nothing is held any more and no lease is taken ahead: the lease's
    // free part went back to the unleased credits in the same commit.
    assert.equal(lane.lease, undefined);
    assert.equal(
      (await kv.get<LeaseRecord>(leaseKey(CALLER, leaseId))).value,
      null,
    );
    assert.equal(
      (await kv.get(unleasedKey(CALLER))).value,
      10_000 - costMicros,
    );
    const [charge] = await listLedger(kv, CALLER);
    assert.equal(charge.kind, "charge");
    assert.equal(charge.amountMicros, -costMicros);
    assert.equal(charge.reservationId, reservation.id);
    const [stored] = await listTraces(kv, CALLER);
    assert.equal(stored.requestId, "req_1");
    assert.equal(stored.costMicros, costMicros);
  });
});

Deno.test("runBatch() retries a commit that lost to another writer and plans again from what it reads", async () => {
  await withKv(async (kv) => {
    await kv.set(unleasedKey(CALLER), 5_000);
    const lane = newLane();
    // Another process tops the caller up between this batch's read and its
    // commit: the commit's check fails.
    kv.beforeCommit = async () => {
      await kv.set(unleasedKey(CALLER), 6_000);
    };
    const reserved = await runOne(contextFor(kv), lane, reserveJob(3_000));
    assert.equal(kv.lostCommits, 1);
    assert.ok(reserved.ok && reserved.value.ok);
    // Planned again from 6 000, not 5 000: the top-up is not lost.
    assert.equal((await kv.get(unleasedKey(CALLER))).value, 3_000);
    assert.equal(lane.lease?.record.amountMicros, 3_000);
    assert.equal(await readBalance(kv, CALLER), 6_000);
  });
});

Deno.test("runBatch() retries a commit refused with SQLite's busy error", async () => {
  await withKv(async (kv) => {
    await kv.set(unleasedKey(CALLER), 5_000);
    kv.beforeCommit = () => Promise.resolve(new Error("database is locked"));
    const reserved = await runOne(contextFor(kv), newLane(), reserveJob(100));
    assert.ok(reserved.ok && reserved.value.ok);
    assert.equal(kv.commits, 2);
    assert.equal((await kv.get(unleasedKey(CALLER))).value, 4_900);
  });
});

Deno.test("runBatch() commits a reserve again after a commit whose answer was lost before it was applied: granted once", async () => {
  await withKv(async (kv) => {
    await kv.set(unleasedKey(CALLER), 5_000);
    const lane = newLane();
    kv.beforeCommit = () => Promise.resolve(new Error("socket hang up"));
    const reserved = await runOne(contextFor(kv), lane, reserveJob(100));
    assert.equal(kv.commits, 2);
    assert.ok(reserved.ok && reserved.value.ok);
    assert.equal((await kv.get(unleasedKey(CALLER))).value, 4_900);
    assert.equal((await listLeases(kv, CALLER)).length, 1);
    assert.equal(lane.creatingLeaseId, undefined);
  });
});

Deno.test("runBatch() finds the lease a reserve's commit created when its answer was lost after it was applied, and leases nothing twice", async () => {
  await withKv(async (kv) => {
    await kv.set(unleasedKey(CALLER), 5_000);
    const lane = newLane();
    const leases: string[] = [];
    const context = {
      ...contextFor(kv),
      onLease: (_callerId: string, leaseId: string) => leases.push(leaseId),
    };
    kv.lostAnswer = new Error("socket hang up");
    const reserved = await runOne(context, lane, reserveJob(100));
    assert.ok(reserved.ok && reserved.value.ok);
    const stored = await listLeases(kv, CALLER);
    assert.equal(stored.length, 1, JSON.stringify(stored));
    assert.equal(stored[0].amountMicros, 100);
    assert.equal(lane.lease?.record.id, stored[0].id);
    assert.deepEqual(leases, [stored[0].id]);
    assert.equal((await kv.get(unleasedKey(CALLER))).value, 4_900);
    assert.equal(await readBalance(kv, CALLER), 5_000);
  });
});

Deno.test("runBatch() does not repeat a settle whose commit's answer was lost: its outcome is final and the lane is unchanged", async () => {
  await withKv(async (kv) => {
    await kv.set(unleasedKey(CALLER), 5_000);
    const lane = newLane();
    const context = contextFor(kv);
    const reserved = await runOne(context, lane, reserveJob(100));
    assert.ok(reserved.ok && reserved.value.ok);
    const { reservation } = reserved.value;
    const commits = kv.commits;
    const held = lane.heldMicros;
    const lease = lane.lease;
    kv.beforeCommit = () => Promise.resolve(new Error("socket hang up"));
    const trace = traceOf("req_lost");
    const settled = await runOne(context, lane, (done) => ({
      kind: "settle",
      settlement: {
        reservation,
        costMicros: 100,
        usage: { inputTokens: 10, outputTokens: 20, cachedInputTokens: 0 },
        trace,
      },
      open: {
        id: reservation.id,
        callerId: CALLER,
        leaseId: lease!.record.id,
        amountMicros: 100,
        settling: true,
      },
      bytes: settleBytes(trace),
      done,
    }));
    assert.equal(kv.commits, commits + 1);
    assert.ok(!settled.ok);
    assert.equal(settled.final, true);
    assert.ok(settled.error instanceof CommitOutcomeUnknownError);
    assert.match(String(settled.error), /socket hang up/);
    assert.equal(lane.lease, lease);
    assert.equal(lane.heldMicros, held);
    assert.equal(lane.blockedMicros, 0);
  });
});

/**
 * One commit of a caller's queued operations: read the unleased credits (and,
 * on a retry, the lease), plan the batch with the pure `planBatch`, write what
 * changed with a check on what was read, and apply the plan to the lane once
 * committed. Private to `credits/`.
 *
 * @module
 */
import { monotonicId, randomId } from "../../_ids.ts";
import { commitWithRetry, isBusy } from "../_kv_retry.ts";
import { leaseKey, ledgerKey, unleasedKey } from "../kv_keys.ts";
import { addTraceWrites } from "../traces.ts";
import { UsageSums } from "../usage_buckets.ts";
import type { Reservation, ReserveResult, Settlement } from "./reservation.ts";
import {
  availableMicros,
  type HeldLease,
  isLimitError,
  type Job,
  type Lane,
  type Outcome,
  type SettleJob,
} from "./_lane.ts";
import {
  type LaneOperation,
  type LaneOutcome,
  type LaneView,
  type LeaseSizing,
  planBatch,
} from "./lease.ts";
import type { LeaseRecord, LedgerEntry } from "./ledger.ts";
import { neverReachedStore } from "../store/outage.ts";

/**
 * How many times a batch without settles is committed again after a commit
 * whose answer was lost; each time the store is read again first (the
 * store waits for the database to be back).
 */
const UNKNOWN_OUTCOME_ATTEMPTS = 5;

/** What a commit needs from the billing shell. */
export interface CommitContext {
  /** The gateway's KV. */
  kv: Deno.Kv;
  /** How far ahead leases grow. */
  sizing: LeaseSizing;
  /** A lease's lifetime, renewed by every commit that changes it, ms. */
  leaseTtlMs: number;
  /** How long traces are kept, ms. */
  traceRetentionMs?: number;
  /** Add usage aggregates to each settle's commit (default true). */
  usageAggregates?: boolean;
  /** The clock, epoch ms. */
  now(): number;
  /** Whether a lease must be renewed before it serves another reservation. */
  renewDue(lease: HeldLease): boolean;
  /** Records a reservation granted from the lease `leaseId`. */
  openReservation(
    callerId: string,
    leaseId: string,
    amountMicros: number,
  ): Reservation;
  /** Forgets a reservation whose settle committed. */
  closeReservation(id: string): void;
  /** Told how long each commit took, seconds. */
  onCommit?: (seconds: number) => void;
  /** Told of each lease this process created, once its commit succeeded (the journal names it, for a replay to give it back). */
  onLease?: (callerId: string, leaseId: string) => void;
}

/**
 * Commits one batch of a caller's jobs (retrying conflicts, splitting a batch
 * too large for one atomic) and hands each job its outcome.
 *
 * @param context The shell's KV, clock, sizing and reservation book.
 * @param callerId The caller.
 * @param lane The caller's lane.
 * @param batch The jobs, in order.
 */
export async function runBatch(
  context: CommitContext,
  callerId: string,
  lane: Lane,
  batch: Job[],
): Promise<void> {
  let attempts = 0;
  let outcomes: Outcome<unknown>[];
  const commit = () =>
    commitWithRetry(
      `${batch.length} billing operations of caller "${callerId}"`,
      () => attemptBatch(context, callerId, lane, batch, attempts++ === 0),
    );
  try {
    outcomes = await repeatUnlessSettling(batch, commit);
  } catch (error) {
    if (batch.length > 1 && isLimitError(error)) {
      const half = Math.ceil(batch.length / 2);
      await runBatch(context, callerId, lane, batch.slice(0, half));
      await runBatch(context, callerId, lane, batch.slice(half));
      return;
    }
    // A commit whose answer was lost may have been applied: its settles are
    // not tried again, so no call is ever charged twice.
    const final = error instanceof CommitOutcomeUnknownError;
    outcomes = batch.map(() => ({ ok: false, error, final }));
  }
  batch.forEach((job, i) =>
    (job.done as (outcome: Outcome<unknown>) => void)(outcomes[i])
  );
}

/**
 * Runs `commit`, and again (up to {@linkcode UNKNOWN_OUTCOME_ATTEMPTS} in
 * all) after a commit whose answer was lost when the batch has no settle.
 * Reserves, growth and returns only move money between the unleased credits
 * and the lease, under checks on both: whether a lost commit was applied is
 * found by reading them again (the lease it may have created included,
 * `Lane.creatingLeaseId`), so repeating it is safe, and a call waiting for
 * its reservation gets it once the store is back rather than a 5xx. A
 * settle is never repeated here (`KvBilling` looks its ledger entry up).
 */
async function repeatUnlessSettling<T>(
  batch: readonly Job[],
  commit: () => Promise<T>,
): Promise<T> {
  for (let attempt = 1;; attempt++) {
    try {
      return await commit();
    } catch (error) {
      if (
        !(error instanceof CommitOutcomeUnknownError) ||
        batch.some((job) => job.kind === "settle") ||
        attempt >= UNKNOWN_OUTCOME_ATTEMPTS
      ) throw error;
    }
  }
}

/**
 * One read-plan-commit round for a batch: reads the unleased credits (and,
 * on a retry, the lease), plans the batch with `planBatch`, writes what
 * changed with a check on what it read, and applies the plan to the lane
 * once committed. A batch the lease covers commits nothing. Returns `null`
 * when the commit lost to another writer.
 */
async function attemptBatch(
  context: CommitContext,
  callerId: string,
  lane: Lane,
  batch: readonly Job[],
  trusted: boolean,
): Promise<Outcome<unknown>[] | null> {
  // Not trusted (a retry): the lease is read again, or the one a commit
  // whose answer was lost may have created.
  const leaseId = trusted
    ? undefined
    : lane.lease?.record.id ?? lane.creatingLeaseId;
  const [unleased, leaseRead] = await Promise.all([
    context.kv.get<number>(unleasedKey(callerId)),
    leaseId ? context.kv.get<LeaseRecord>(leaseKey(callerId, leaseId)) : null,
  ]);
  if (leaseRead) {
    const created = !lane.lease && leaseRead.value !== null;
    // Swept meanwhile: its money, holds included, is in the unleased credits.
    lane.lease = leaseRead.value === null
      ? undefined
      : { record: leaseRead.value, versionstamp: leaseRead.versionstamp! };
    if (!lane.lease) lane.heldMicros = 0;
    if (created) {
      lane.creatingLeaseId = undefined;
      context.onLease?.(callerId, leaseRead.value!.id);
    }
  }
  const lease = lane.lease;
  const view: LaneView = {
    unleased: unleased.value ?? 0,
    leased: lease?.record.amountMicros ?? 0,
    held: lane.heldMicros,
    callMicros: lane.callMicros,
  };
  const plan = planBatch(
    view,
    batch.map((job) => laneOperation(job, lease?.record.id)),
    context.sizing,
  );

  const op = context.kv.atomic();
  const now = context.now();
  const leaseChanges = plan.next.leased !== view.leased ||
    (lease !== undefined && context.renewDue(lease));
  const next = leaseChanges
    ? addLeaseWrites(op, callerId, lease, plan.next.leased, {
      now,
      ttlMs: context.leaseTtlMs,
      // Kept until a commit is known to have created it or not.
      newId: () => lane.creatingLeaseId ??= randomId("ls_", 16),
    })
    : lease?.record;
  if (plan.next.unleased !== view.unleased) {
    op.check(unleased).set(unleasedKey(callerId), plan.next.unleased);
  }
  let writes = leaseChanges || plan.next.unleased !== view.unleased;
  const usage = context.usageAggregates === false ? undefined : new UsageSums();
  batch.forEach((job, i) => {
    if (job.kind !== "settle") return;
    writes = true;
    addSettleWrites(context, op, job, plan.outcomes[i], now, usage);
  });
  usage?.writeTo(op);
  let versionstamp = lease?.versionstamp ?? "";
  if (writes) {
    lane.blockedMicros += plan.outflowMicros;
    let committed: Deno.KvCommitResult | Deno.KvCommitError;
    const started = performance.now();
    try {
      committed = await op.commit();
      context.onCommit?.((performance.now() - started) / 1000);
    } catch (error) {
      throw mayHaveCommitted(error)
        ? new CommitOutcomeUnknownError(error)
        : error;
    } finally {
      lane.blockedMicros -= plan.outflowMicros;
    }
    if (!committed.ok) return null;
    versionstamp = committed.versionstamp;
  }

  if (next && next.id !== lease?.record.id) {
    context.onLease?.(callerId, next.id);
  }
  if (next?.id === lane.creatingLeaseId) lane.creatingLeaseId = undefined;
  // Committed: the lane follows, synchronously, so `#available` never
  // counts a committed settle twice.
  lane.lease = next ? { record: next, versionstamp } : undefined;
  lane.heldMicros += plan.next.held - view.held;
  lane.knownUnleasedMicros = plan.next.unleased;
  lane.callMicros = plan.next.callMicros;
  return batch.map((job, i) => {
    const outcome = plan.outcomes[i];
    if (job.kind === "reserve" && outcome.kind === "reserve") {
      const availableMicros = outcome.unheldMicros - lane.pendingChargeMicros;
      const result: ReserveResult = outcome.granted
        ? {
          ok: true,
          reservation: context.openReservation(
            callerId,
            next?.id ?? "",
            job.amountMicros,
          ),
          availableMicros,
        }
        : { ok: false, availableMicros };
      return { ok: true, value: result };
    }
    if (job.kind === "settle") {
      context.closeReservation(job.open.id);
      lane.pendingChargeMicros -= job.settlement.costMicros -
        job.open.amountMicros;
      return { ok: true, value: { availableMicros: availableMicros(lane) } };
    }
    return { ok: true, value: undefined };
  });
}

function addSettleWrites(
  context: CommitContext,
  op: Deno.AtomicOperation,
  job: SettleJob,
  outcome: LaneOutcome,
  time: number,
  sums: UsageSums | undefined,
): void {
  const { settlement, open } = job;
  const { trace, costMicros } = settlement;
  if (outcome.kind !== "settle") return;
  // A failed call that cost nothing moved no money: its trace records it,
  // and the ledger keeps to charges.
  if (chargesLedger(settlement)) {
    const entry = chargeEntry(
      settlement,
      open.callerId,
      settlement.chargeId ?? monotonicId(time),
      time,
    );
    op.set(ledgerKey(open.callerId, entry.id), entry);
  }
  const record = { ...trace, callerId: open.callerId, costMicros };
  addTraceWrites(op, record, { retentionMs: context.traceRetentionMs });
  sums?.add(record);
}

/**
 * Whether a settlement writes a ledger entry: a failed call that cost
 * nothing moved no money (its trace records it; the ledger keeps to charges).
 */
export function chargesLedger(
  settlement: Pick<Settlement, "costMicros" | "trace">,
): boolean {
  return settlement.costMicros > 0 || settlement.trace.status < 400;
}

/**
 * The ledger entry of a settlement's charge. Its id is the settlement's
 * `chargeId` (given once, before the answer went out, and journaled), so a
 * charge committed twice (a retry after a commit whose outcome was lost, a
 * journal replayed) is one key, found before it is written again.
 */
export function chargeEntry(
  settlement: Pick<Settlement, "costMicros" | "usage" | "trace"> & {
    reservation: Pick<Reservation, "id">;
  },
  callerId: string,
  id: string,
  time: number,
): LedgerEntry {
  const { usage, trace } = settlement;
  return {
    id,
    callerId,
    kind: "charge",
    amountMicros: -settlement.costMicros,
    time,
    requestId: trace.requestId,
    traceId: trace.traceId,
    reservationId: settlement.reservation.id,
    model: trace.model,
    route: trace.route,
    provider: trace.provider,
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    cachedTokens: usage.cachedInputTokens,
  };
}

function laneOperation(job: Job, leaseId: string | undefined): LaneOperation {
  switch (job.kind) {
    case "reserve":
      return { kind: "reserve", amountMicros: job.amountMicros };
    case "settle":
      return {
        kind: "settle",
        costMicros: job.settlement.costMicros,
        earmarkMicros: job.open.leaseId === leaseId ? job.open.amountMicros : 0,
      };
    default:
      return { kind: job.kind };
  }
}

/**
 * Adds the writes that set a caller's lease to `amountMicros` and renew its
 * expiry: creates it, updates it, or deletes it when it holds nothing.
 * Returns the record as it will be, or `undefined` when deleted.
 */
function addLeaseWrites(
  op: Deno.AtomicOperation,
  callerId: string,
  lease: HeldLease | undefined,
  amountMicros: number,
  { now, ttlMs, newId }: {
    now: number;
    ttlMs: number;
    newId: () => string;
  },
): LeaseRecord | undefined {
  if (lease) {
    op.check({
      key: leaseKey(callerId, lease.record.id),
      versionstamp: lease.versionstamp,
    });
    if (amountMicros === 0) {
      op.delete(leaseKey(callerId, lease.record.id));
      return undefined;
    }
  } else if (amountMicros === 0) return undefined;
  const record: LeaseRecord = lease
    ? { ...lease.record, amountMicros, expiresAt: now + ttlMs }
    : {
      id: newId(),
      callerId,
      amountMicros,
      createdAt: now,
      expiresAt: now + ttlMs,
    };
  if (!lease) {
    op.check({ key: leaseKey(callerId, record.id), versionstamp: null });
  }
  op.set(leaseKey(callerId, record.id), record);
  return record;
}

/**
 * A commit that failed after it may have reached the store (the connection
 * dropped while it ran): it may have been applied. Its settles are not
 * retried, since a retry of an applied one would charge its call twice.
 */
export class CommitOutcomeUnknownError extends Error {
  /**
   * Creates the error.
   *
   * @param cause What the commit threw.
   */
  constructor(cause: unknown) {
    super(
      `The store may have committed it, its answer was lost: ${cause}`,
      { cause },
    );
    this.name = "CommitOutcomeUnknownError";
  }
}

/**
 * Whether a commit that threw may have been applied: not when the store
 * refused it (busy, too large, an error PostgreSQL answered with, which
 * rolled it back) or the client never reached the store.
 */
function mayHaveCommitted(error: unknown): boolean {
  if (isBusy(error) || isLimitError(error)) return false;
  if (error instanceof Deno.errors.BadResource || neverReachedStore(error)) {
    return false;
  }
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return true;
  // A SQLSTATE: PostgreSQL answered with an error and rolled back.
  return !/^[0-9A-Z]{5}$/.test(code);
}

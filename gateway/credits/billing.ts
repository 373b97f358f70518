/**
 * {@linkcode Billing} over Deno KV: the I/O shell around the credit lease of
 * `lease.ts`. It keeps one lane per caller in this process (the lease as last
 * committed, the reservations taken from it, a queue of operations), takes
 * reservations the lease covers in memory, and commits everything else in
 * batches: the operations of one caller that waited while a commit ran share
 * the next commit (group commit). Settling is one commit: the charge to the
 * lease and the unleased credits, its ledger entry and the call's trace.
 *
 * On the request path there is at most one commit before forwarding (none
 * while the lease covers the call) and one after, which `settleSoon` takes
 * off the path (write-behind).
 *
 * @example Reserve, then settle
 * ```ts
 * import { createCaller } from "../callers.ts";
 * import { createBilling } from "./billing.ts";
 * import { usdToMicros } from "./money.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const caller = await createCaller(kv, { name: "demo", creditsMicros: usdToMicros(1) });
 * const billing = createBilling(kv);
 * const held = await billing.reserve(caller.id, 5_000);
 * if (held.ok) {
 *   const usage = { inputTokens: 10, outputTokens: 20, cachedInputTokens: 0 };
 *   await billing.settle({
 *     reservation: held.reservation, costMicros: 1_200, usage,
 *     trace: {
 *       requestId: "req_1", traceId: "t1", callerId: caller.id, route: "chat", status: 200,
 *       stream: false, inputTokens: 10, outputTokens: 20, cachedTokens: 0, costMicros: 1_200,
 *       latencyMs: 50, time: Date.now(),
 *     },
 *   });
 * }
 * await billing.flush();
 * kv.close();
 * ```
 *
 * @module
 */
import { monotonicId, randomId } from "../_ids.ts";
import { commitWithRetry } from "../_kv_retry.ts";
import { leaseKey, ledgerKey, unleasedKey } from "../kv_keys.ts";
import { addTraceWrites } from "../tracing.ts";
import type {
  Billing,
  ReserveResult,
  Settlement,
  TraceRecord,
} from "../types.ts";
import {
  aheadMicros,
  type LaneOperation,
  type LaneOutcome,
  type LaneView,
  type LeaseSizing,
  planBatch,
} from "./lease.ts";
import { type LeaseRecord, type LedgerEntry, readBalance } from "./ledger.ts";
import { assertMicros } from "./money.ts";

/** Options of {@linkcode createBilling}. */
export interface BillingOptions {
  /** How long a lease no commit renewed lasts before the sweep may return it, ms. */
  leaseTtlMs?: number;
  /** How long a caller's lease waits after their last reserve or settle before its free part goes back, ms. */
  leaseIdleMs?: number;
  /** How many calls of the latest reservation's size a lease takes ahead of demand; 0 takes only what a reservation lacks. */
  leaseAheadCalls?: number;
  /** How long trace records are kept, ms. */
  traceRetentionMs?: number;
  /** Clock, epoch ms; tests replace it. */
  now?: () => number;
  /** Where a write-behind settlement that finally failed is reported; defaults to a JSON line on stderr. */
  log?: (record: Record<string, unknown>) => void;
}

/** Default lifetime of a lease no commit renewed: 15 minutes. */
export const DEFAULT_LEASE_TTL_MS: number = 15 * 60 * 1000;

/** Default time a caller's lease waits after their last reserve or settle before it is returned: 1 second. */
export const DEFAULT_LEASE_IDLE_MS = 1_000;

/** Default number of calls of the latest reservation's size a lease takes ahead of demand. */
export const DEFAULT_LEASE_AHEAD_CALLS = 32;

// A lease takes ahead at most a quarter of the unleased credits: near the end
// of a small balance shared by a few processes, every lease takes exactly
// what its reservation lacks, and settles give the rest back.
const LEASE_AHEAD_SHARE = 0.25;

// Deno KV allows 100 checks, 1000 mutations and 819 200 bytes of mutations
// per atomic (Deno 2.9). A batch checks the unleased credits and the lease,
// writes at most four keys per settle (ledger entry, trace, trace index) and
// by a generous estimate of its bytes stays under 512 KiB; an atomic refused
// for its size anyway is split in halves.
const MAX_BATCH_OPERATIONS = 96;
const MAX_BATCH_BYTES = 512 * 1024;
const SETTLE_BYTES = 2_048;
/** Rounds a write-behind settlement gets before it is logged and dropped. */
const SETTLE_SOON_ROUNDS = 3;

/** A job's result: a value, or an error; `final` errors are not worth retrying. */
type Outcome<T> =
  | { ok: true; value: T }
  | { ok: false; error: unknown; final: boolean };

/** A reservation this process took from one of its leases, until its settle commits. */
interface OpenReservation {
  id: string;
  callerId: string;
  leaseId: string;
  /** What it holds of the lease; once claimed by a settle, the part of the cost the hold pays. */
  amountMicros: number;
  settling: boolean;
}

/** A lease as this process last committed or read it. */
interface HeldLease {
  record: LeaseRecord;
  versionstamp: string;
}

interface ReserveJob {
  kind: "reserve";
  amountMicros: number;
  done: (outcome: Outcome<ReserveResult>) => void;
}

interface SettleJob {
  kind: "settle";
  settlement: Settlement;
  open: OpenReservation;
  bytes: number;
  done: (outcome: Outcome<{ availableMicros: number }>) => void;
}

/** `grow` tops the lease up ahead of demand; `return` gives its free part back. */
interface LeaseJob {
  kind: "grow" | "return";
  done: (outcome: Outcome<unknown>) => void;
}

type Job = ReserveJob | SettleJob | LeaseJob;

/** One caller's money as this process sees it. */
interface Lane {
  jobs: Job[];
  /** Resolves when the queue is empty; set while it drains. */
  draining?: Promise<void>;
  lease?: HeldLease;
  /** The part of the lease open reservations and queued settles hold. */
  heldMicros: number;
  /** The part of the lease's free money a running commit moves out. */
  blockedMicros: number;
  /** The unleased credits after this process's latest commit for the caller. */
  knownUnleasedMicros: number;
  /** What queued settles will charge beyond their holds. */
  pendingChargeMicros: number;
  /** The latest reservation's amount. */
  callMicros: number;
  growing: boolean;
  lastActivity: number;
  idleTimer?: ReturnType<typeof setTimeout>;
}

/** Whether a job asks for money: reserves and growth go ahead of queued settles. */
function isDemand(job: Job): boolean {
  return job.kind === "reserve" || job.kind === "grow";
}

/** Takes the longest prefix of `jobs` that fits one atomic (at least one job), of one kind of demand. */
function takeBatch(jobs: Job[]): Job[] {
  const demand = isDemand(jobs[0]);
  let count = 0;
  let bytes = 0;
  while (count < jobs.length && count < MAX_BATCH_OPERATIONS) {
    const job = jobs[count];
    if (isDemand(job) !== demand) break;
    const next = job.kind === "settle" ? job.bytes : 0;
    if (count > 0 && bytes + next > MAX_BATCH_BYTES) break;
    bytes += next;
    count++;
  }
  return jobs.splice(0, count);
}

/** Whether KV refused an atomic for its size. */
function isLimitError(error: unknown): boolean {
  return error instanceof TypeError && /too (many|large)/i.test(error.message);
}

function unwrap<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.value;
  throw outcome.error;
}

class KvBilling implements Billing {
  readonly #kv: Deno.Kv;
  readonly #leaseTtlMs: number;
  readonly #leaseIdleMs: number;
  readonly #sizing: LeaseSizing;
  readonly #traceRetentionMs: number | undefined;
  readonly #now: () => number;
  readonly #log: (record: Record<string, unknown>) => void;
  readonly #lanes = new Map<string, Lane>();
  readonly #open = new Map<string, OpenReservation>();
  readonly #behind = new Set<Promise<void>>();

  constructor(kv: Deno.Kv, options: BillingOptions) {
    this.#kv = kv;
    this.#leaseTtlMs = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
    this.#leaseIdleMs = options.leaseIdleMs ?? DEFAULT_LEASE_IDLE_MS;
    this.#sizing = {
      aheadCalls: options.leaseAheadCalls ?? DEFAULT_LEASE_AHEAD_CALLS,
      aheadShare: LEASE_AHEAD_SHARE,
    };
    this.#traceRetentionMs = options.traceRetentionMs;
    this.#now = options.now ?? Date.now;
    this.#log = options.log ??
      ((record) => console.error(JSON.stringify(record)));
  }

  reserve(callerId: string, amountMicros: number): Promise<ReserveResult> {
    assertMicros("reservation amount", amountMicros);
    const lane = this.#lane(callerId);
    this.#touch(callerId, lane);
    // Reserves in memory do not wait for KV, so write-behind settles could
    // pile up faster than they commit: past a backlog of two full batches a
    // reserve waits its turn behind them instead.
    if (lane.jobs.length < 2 * MAX_BATCH_OPERATIONS) {
      const inMemory = this.#reserveInMemory(callerId, lane, amountMicros);
      if (inMemory) return Promise.resolve(inMemory);
    }
    return this.#submit<ReserveResult>(
      callerId,
      (done) => ({ kind: "reserve", amountMicros, done }),
    ).then(unwrap);
  }

  async settle(
    settlement: Settlement,
  ): Promise<{ availableMicros: number }> {
    assertMicros("cost", settlement.costMicros);
    const open = this.#claim(settlement);
    const outcome = await this.#submitSettle(settlement, open);
    if (!outcome.ok) this.#abandon(open, settlement);
    return unwrap(outcome);
  }

  settleSoon(settlement: Settlement): { availableMicros: number } {
    assertMicros("cost", settlement.costMicros);
    const lane = this.#lane(settlement.reservation.callerId);
    let open: OpenReservation;
    try {
      open = this.#claim(settlement);
    } catch (error) {
      this.#logLostSettle(settlement, error);
      return { availableMicros: this.#available(lane) };
    }
    const done = this.#settleBehind(settlement, open);
    this.#behind.add(done);
    done.finally(() => this.#behind.delete(done));
    return { availableMicros: this.#available(lane) };
  }

  async flush(): Promise<void> {
    await this.#idle();
    const returns: Promise<void>[] = [];
    for (const [callerId, lane] of this.#lanes) {
      clearTimeout(lane.idleTimer);
      lane.idleTimer = undefined;
      if (this.#free(lane) > 0) returns.push(this.#returnLease(callerId));
    }
    await Promise.all(returns);
    await this.#idle();
  }

  recordTrace(trace: TraceRecord): Promise<void> {
    return commitWithRetry(`trace "${trace.requestId}"`, async () => {
      const committed = await addTraceWrites(this.#kv.atomic(), trace, {
        retentionMs: this.#traceRetentionMs,
      }).commit();
      return committed.ok ? undefined : null;
    });
  }

  async balance(callerId: string): Promise<number> {
    // After this process's queued charges, so it sees every call it answered.
    const lane = this.#lanes.get(callerId);
    while (lane?.draining) await lane.draining;
    return await readBalance(this.#kv, callerId);
  }

  /** Waits until every queue is empty and every write-behind settle has finished. */
  async #idle(): Promise<void> {
    for (;;) {
      const waits = [...this.#behind];
      for (const lane of this.#lanes.values()) {
        if (lane.draining) waits.push(lane.draining);
      }
      if (waits.length === 0) return;
      await Promise.all(waits);
    }
  }

  #lane(callerId: string): Lane {
    let lane = this.#lanes.get(callerId);
    if (!lane) {
      lane = {
        jobs: [],
        heldMicros: 0,
        blockedMicros: 0,
        knownUnleasedMicros: 0,
        pendingChargeMicros: 0,
        callMicros: 0,
        growing: false,
        lastActivity: 0,
      };
      this.#lanes.set(callerId, lane);
    }
    return lane;
  }

  /** The lease's money no reservation holds and no running commit moves. */
  #free(lane: Lane): number {
    if (!lane.lease) return 0;
    return lane.lease.record.amountMicros - lane.heldMicros -
      lane.blockedMicros;
  }

  /** What this process could still reserve for the caller once its queued settles commit. */
  #available(lane: Lane): number {
    const leased = lane.lease?.record.amountMicros ?? 0;
    return lane.knownUnleasedMicros + leased - lane.heldMicros -
      lane.pendingChargeMicros;
  }

  /** Whether the lease must be renewed by a commit before it serves another reservation. */
  #renewDue(lease: HeldLease): boolean {
    return this.#now() > lease.record.expiresAt - this.#leaseTtlMs / 2;
  }

  /** A reservation from the lease in memory, or `undefined` when the lease cannot cover it. */
  #reserveInMemory(
    callerId: string,
    lane: Lane,
    amountMicros: number,
  ): ReserveResult | undefined {
    const lease = lane.lease;
    if (!lease || amountMicros > this.#free(lane) || this.#renewDue(lease)) {
      return undefined;
    }
    lane.heldMicros += amountMicros;
    lane.callMicros = amountMicros;
    const reservation = this.#openReservation(
      callerId,
      lease.record.id,
      amountMicros,
    );
    const ahead = aheadMicros(
      this.#sizing,
      amountMicros,
      lane.knownUnleasedMicros,
    );
    if (!lane.growing && this.#free(lane) < ahead / 2) {
      lane.growing = true;
      this.#submit(callerId, (done) => ({ kind: "grow", done })).then(
        (outcome) => {
          lane.growing = false;
          if (!outcome.ok) this.#logLeaseFailure(callerId, "grow", outcome);
        },
      );
    }
    return {
      ok: true,
      reservation,
      availableMicros: this.#available(lane),
    };
  }

  #openReservation(
    callerId: string,
    leaseId: string,
    amountMicros: number,
  ): { id: string; callerId: string; amountMicros: number } {
    const id = randomId("rs_", 16);
    this.#open.set(id, {
      id,
      callerId,
      leaseId,
      amountMicros,
      settling: false,
    });
    return { id, callerId, amountMicros };
  }

  /**
   * Marks the reservation as settling and gives the unspent part of its hold
   * back to the lease at once, so reserves can use it before the settle
   * commits.
   *
   * @throws {Error} When the reservation is unknown, another caller's, or settled already.
   */
  #claim(settlement: Settlement): OpenReservation {
    const { reservation, costMicros } = settlement;
    const cannot = `Cannot settle reservation "${reservation.id}"`;
    const open = this.#open.get(reservation.id);
    // Settled reservations are forgotten: settling one again finds nothing.
    if (!open) throw new Error(`${cannot}: it is unknown or already settled`);
    if (open.callerId !== reservation.callerId) {
      throw new Error(
        `${cannot}: it belongs to "${open.callerId}", not "${reservation.callerId}"`,
      );
    }
    if (open.settling) throw new Error(`${cannot}: it is already settled`);
    open.settling = true;
    const lane = this.#lane(open.callerId);
    this.#touch(open.callerId, lane);
    const earmark = Math.min(costMicros, open.amountMicros);
    if (lane.lease?.record.id === open.leaseId) {
      lane.heldMicros -= open.amountMicros - earmark;
    }
    open.amountMicros = earmark;
    lane.pendingChargeMicros += costMicros - earmark;
    return open;
  }

  /** A settle that will never commit: its hold goes back to the lease, uncharged (the operator loses the charge, never the caller). */
  #abandon(open: OpenReservation, settlement: Settlement): void {
    if (!this.#open.delete(open.id)) return;
    const lane = this.#lane(open.callerId);
    if (lane.lease?.record.id === open.leaseId) {
      lane.heldMicros -= open.amountMicros;
    }
    lane.pendingChargeMicros -= settlement.costMicros - open.amountMicros;
  }

  #touch(callerId: string, lane: Lane): void {
    lane.lastActivity = performance.now();
    if (lane.idleTimer === undefined) {
      this.#scheduleIdle(callerId, lane, this.#leaseIdleMs);
    }
  }

  #scheduleIdle(callerId: string, lane: Lane, delayMs: number): void {
    const timer = setTimeout(() => {
      lane.idleTimer = undefined;
      const quietMs = performance.now() - lane.lastActivity;
      if (quietMs < this.#leaseIdleMs) {
        this.#scheduleIdle(callerId, lane, this.#leaseIdleMs - quietMs);
      } else if (this.#free(lane) > 0) {
        this.#returnLease(callerId);
      }
    }, delayMs);
    // An idle caller's timer must not keep a process (or a test) alive.
    Deno.unrefTimer(timer);
    lane.idleTimer = timer;
  }

  async #returnLease(callerId: string): Promise<void> {
    const outcome = await this.#submit(
      callerId,
      (done) => ({ kind: "return", done }),
    );
    if (!outcome.ok) this.#logLeaseFailure(callerId, "return", outcome);
  }

  #logLeaseFailure(
    callerId: string,
    what: "grow" | "return",
    outcome: { error: unknown },
  ): void {
    // A KV closed under an idle timer: the lease stays until the sweep.
    if (outcome.error instanceof Deno.errors.BadResource) return;
    this.#log({
      level: "warn",
      message: `Lease ${what} failed: ${outcome.error}`,
      callerId,
    });
  }

  #logLostSettle(settlement: Settlement, error: unknown): void {
    this.#log({
      level: "error",
      message:
        `Settling reservation "${settlement.reservation.id}" failed; it is not charged: ${error}`,
      requestId: settlement.trace.requestId,
      callerId: settlement.reservation.callerId,
    });
  }

  async #settleBehind(
    settlement: Settlement,
    open: OpenReservation,
  ): Promise<void> {
    for (let round = 1;; round++) {
      const outcome = await this.#submitSettle(settlement, open);
      if (outcome.ok) return;
      if (outcome.final || round >= SETTLE_SOON_ROUNDS) {
        this.#abandon(open, settlement);
        this.#logLostSettle(settlement, outcome.error);
        return;
      }
    }
  }

  #submitSettle(
    settlement: Settlement,
    open: OpenReservation,
  ): Promise<Outcome<{ availableMicros: number }>> {
    const bytes = SETTLE_BYTES + 2 * JSON.stringify(settlement.trace).length;
    return this.#submit(
      open.callerId,
      (done) => ({ kind: "settle", settlement, open, bytes, done }),
    );
  }

  /**
   * Queues a job for the caller's next batch. Reserves and growth go ahead of
   * queued settles (behind earlier ones of their kind): a settle's unspent
   * hold is back in the lease already, so it only charges, and a call must
   * not wait for other calls' charges.
   */
  #submit<T>(
    callerId: string,
    job: (done: (outcome: Outcome<T>) => void) => Job,
  ): Promise<Outcome<T>> {
    const lane = this.#lane(callerId);
    const { promise, resolve } = Promise.withResolvers<Outcome<T>>();
    const queued = job(resolve);
    if (isDemand(queued)) {
      const at = lane.jobs.findIndex((other) => !isDemand(other));
      lane.jobs.splice(at === -1 ? lane.jobs.length : at, 0, queued);
    } else lane.jobs.push(queued);
    lane.draining ??= this.#drain(callerId, lane);
    return promise;
  }

  async #drain(callerId: string, lane: Lane): Promise<void> {
    // Let the jobs submitted in the same tick join the first batch.
    await null;
    while (lane.jobs.length > 0) {
      await this.#runBatch(callerId, lane, takeBatch(lane.jobs));
    }
    lane.draining = undefined;
  }

  async #runBatch(callerId: string, lane: Lane, batch: Job[]): Promise<void> {
    let attempts = 0;
    let outcomes: Outcome<unknown>[];
    try {
      outcomes = await commitWithRetry(
        `${batch.length} billing operations of caller "${callerId}"`,
        () => this.#attempt(callerId, lane, batch, attempts++ === 0),
      );
    } catch (error) {
      if (batch.length > 1 && isLimitError(error)) {
        const half = Math.ceil(batch.length / 2);
        await this.#runBatch(callerId, lane, batch.slice(0, half));
        await this.#runBatch(callerId, lane, batch.slice(half));
        return;
      }
      outcomes = batch.map(() => ({ ok: false, error, final: false }));
    }
    batch.forEach((job, i) =>
      (job.done as (outcome: Outcome<unknown>) => void)(outcomes[i])
    );
  }

  /**
   * One read-plan-commit round for a batch: reads the unleased credits (and,
   * on a retry, the lease), plans the batch with `planBatch`, writes what
   * changed with a check on what it read, and applies the plan to the lane
   * once committed. A batch the lease covers commits nothing. Returns `null`
   * when the commit lost to another writer.
   */
  async #attempt(
    callerId: string,
    lane: Lane,
    batch: readonly Job[],
    trusted: boolean,
  ): Promise<Outcome<unknown>[] | null> {
    const [unleased, leaseRead] = await Promise.all([
      this.#kv.get<number>(unleasedKey(callerId)),
      !trusted && lane.lease
        ? this.#kv.get<LeaseRecord>(leaseKey(callerId, lane.lease.record.id))
        : undefined,
    ]);
    if (leaseRead) {
      // Swept meanwhile: its money, holds included, is in the unleased credits.
      lane.lease = leaseRead.value === null
        ? undefined
        : { record: leaseRead.value, versionstamp: leaseRead.versionstamp! };
      if (!lane.lease) lane.heldMicros = 0;
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
      this.#sizing,
    );

    const op = this.#kv.atomic();
    const now = this.#now();
    const leaseChanges = plan.next.leased !== view.leased ||
      (lease !== undefined && this.#renewDue(lease));
    const next = leaseChanges
      ? addLeaseWrites(op, callerId, lease, plan.next.leased, {
        now,
        ttlMs: this.#leaseTtlMs,
      })
      : lease?.record;
    if (plan.next.unleased !== view.unleased) {
      op.check(unleased).set(unleasedKey(callerId), plan.next.unleased);
    }
    let writes = leaseChanges || plan.next.unleased !== view.unleased;
    batch.forEach((job, i) => {
      if (job.kind !== "settle") return;
      writes = true;
      this.#addSettleWrites(op, job, plan.outcomes[i], now);
    });
    let versionstamp = lease?.versionstamp ?? "";
    if (writes) {
      lane.blockedMicros += plan.outflowMicros;
      let committed: Deno.KvCommitResult | Deno.KvCommitError;
      try {
        committed = await op.commit();
      } finally {
        lane.blockedMicros -= plan.outflowMicros;
      }
      if (!committed.ok) return null;
      versionstamp = committed.versionstamp;
    }

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
            reservation: this.#openReservation(
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
        this.#open.delete(job.open.id);
        lane.pendingChargeMicros -= job.settlement.costMicros -
          job.open.amountMicros;
        return { ok: true, value: { availableMicros: this.#available(lane) } };
      }
      return { ok: true, value: undefined };
    });
  }

  #addSettleWrites(
    op: Deno.AtomicOperation,
    job: SettleJob,
    outcome: LaneOutcome,
    time: number,
  ): void {
    const { settlement, open } = job;
    const { usage, trace, costMicros } = settlement;
    if (outcome.kind !== "settle") return;
    // A failed call that cost nothing moved no money: its trace records it,
    // and the ledger keeps to charges.
    if (costMicros > 0 || trace.status < 400) {
      const entry: LedgerEntry = {
        id: monotonicId(time),
        callerId: open.callerId,
        kind: "charge",
        amountMicros: -costMicros,
        time,
        requestId: trace.requestId,
        traceId: trace.traceId,
        reservationId: open.id,
        model: trace.model,
        route: trace.route,
        provider: trace.provider,
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        cachedTokens: usage.cachedInputTokens,
      };
      op.set(ledgerKey(open.callerId, entry.id), entry);
    }
    addTraceWrites(op, { ...trace, callerId: open.callerId, costMicros }, {
      retentionMs: this.#traceRetentionMs,
    });
  }
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
  { now, ttlMs }: { now: number; ttlMs: number },
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
      id: randomId("ls_", 16),
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
 * Creates the KV-backed {@linkcode Billing} the gateway calls on every request.
 * Create one per process and share it. Call `flush()` before closing the KV,
 * so queued charges commit and unused leases go back.
 *
 * @param kv The gateway's KV.
 * @param options Lease lifetime, idle time and sizing, trace retention, clock, log sink.
 * @returns The billing store.
 */
export function createBilling(
  kv: Deno.Kv,
  options: BillingOptions = {},
): Billing {
  return new KvBilling(kv, options);
}

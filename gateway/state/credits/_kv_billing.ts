/**
 * The KV shell of `Billing` (`billing.ts` has its contract and creates it):
 * one lane per caller in this process, reservations the lease covers taken
 * in memory, everything else queued for the caller's next group commit,
 * write-behind settles given a few rounds, and idle leases given back.
 * Private to `credits/`.
 *
 * @module
 */
import { monotonicId } from "../../_ids.ts";
import { commitWithRetry } from "../_kv_retry.ts";
import {
  addTraceWrites,
  chargedTokens,
  type ChargedTraceRecord,
} from "../traces.ts";
import { UsageSums } from "../usage_buckets.ts";
import type { TraceRecord } from "../traces.ts";
import { GroupCommit } from "../store/group_commit.ts";
import {
  chargesLedger,
  type CommitContext,
  CommitOutcomeUnknownError,
  runBatch,
} from "./_commit.ts";
import type { SettleJournal } from "./journal.ts";
import { ledgerKey } from "../kv_keys.ts";
import {
  availableMicros,
  freeMicros,
  type HeldLease,
  isDemand,
  type Job,
  type Lane,
  MAX_BATCH_OPERATIONS,
  newLane,
  type OpenReservation,
  type Outcome,
  settleBytes,
  takeBatch,
  unwrap,
} from "./_lane.ts";
import { aheadMicros, type LeaseSizing } from "./lease.ts";
import { readBalance } from "./ledger.ts";
import { assertMicros } from "./money.ts";
import type { Reservation, ReserveResult, Settlement } from "./reservation.ts";
import { OpenReservations } from "./_reservations.ts";
import { storeReachable } from "../store/mod.ts";

/** The first wait before a failed settlement is tried again, ms; it doubles each round. */
const SETTLE_RETRY_MIN_MS = 50;

/** The longest wait between two rounds of a failed settlement, ms. */
const SETTLE_RETRY_MAX_MS = 5_000;

/**
 * How long a failed settlement is still tried once `flush()` began, ms:
 * past it, it stays in the journal (replayed by the next process) and the
 * shutdown goes on.
 */
const CLOSING_RETRY_MS = 5_000;

/** How many rounds of a failing settlement pass between two log lines about it. */
const LOG_EVERY_ROUNDS = 20;

// A lease takes ahead at most a quarter of the unleased credits: near the end
// of a small balance shared by a few processes, every lease takes exactly
// what its reservation lacks, and settles give the rest back.
const LEASE_AHEAD_SHARE = 0.25;

/**
 * {@linkcode KvBilling}'s settings, every default applied (`createBilling`
 * in `billing.ts` applies them; `BillingOptions` there documents each).
 */
export interface KvBillingSettings {
  leaseTtlMs: number;
  leaseIdleMs: number;
  leaseAheadCalls: number;
  traceRetentionMs?: number;
  usageAggregates?: boolean;
  now: () => number;
  log: (record: Record<string, unknown>) => void;
  onCommit?: (seconds: number) => void;
  journal?: SettleJournal;
}

/** `Billing` over Deno KV (see `billing.ts`, which creates it). */
export class KvBilling {
  readonly #kv: Deno.Kv;
  readonly #leaseTtlMs: number;
  readonly #leaseIdleMs: number;
  readonly #sizing: LeaseSizing;
  readonly #traceRetentionMs: number | undefined;
  readonly #usageAggregates: boolean;
  readonly #now: () => number;
  readonly #log: (record: Record<string, unknown>) => void;
  readonly #lanes = new Map<string, Lane>();
  readonly #reservations = new OpenReservations();
  readonly #behind = new Set<Promise<void>>();
  readonly #commits: CommitContext;
  readonly #engine: GroupCommit<Job>;
  readonly #journal: SettleJournal | undefined;
  /** When the `flush()` under way began (epoch ms): failed settlements are tried a little longer, then left to the journal. */
  #closingSince: number | undefined;

  constructor(kv: Deno.Kv, options: KvBillingSettings) {
    this.#kv = kv;
    this.#leaseTtlMs = options.leaseTtlMs;
    this.#leaseIdleMs = options.leaseIdleMs;
    this.#sizing = {
      aheadCalls: options.leaseAheadCalls,
      aheadShare: LEASE_AHEAD_SHARE,
    };
    this.#traceRetentionMs = options.traceRetentionMs;
    this.#usageAggregates = options.usageAggregates !== false;
    this.#now = options.now;
    this.#log = options.log;
    this.#journal = options.journal;
    this.#commits = {
      kv,
      sizing: this.#sizing,
      leaseTtlMs: this.#leaseTtlMs,
      traceRetentionMs: options.traceRetentionMs,
      usageAggregates: options.usageAggregates,
      now: this.#now,
      renewDue: (lease) => this.#renewDue(lease),
      openReservation: (callerId, leaseId, amountMicros) =>
        this.#openReservation(callerId, leaseId, amountMicros),
      closeReservation: (id) => this.#reservations.close(id),
      onCommit: options.onCommit,
      onLease: (callerId, leaseId) => options.journal?.lease(callerId, leaseId),
    };
    this.#engine = new GroupCommit<Job>({
      takeBatch,
      run: (callerId, batch) =>
        runBatch(this.#commits, callerId, this.#lane(callerId), batch),
      // Reserves and growth go ahead of queued settles (behind earlier ones
      // of their kind): a settle's unspent hold is back in the lease
      // already, so it only charges, and a call must not wait for other
      // calls' charges.
      insertAt: (jobs, job) => {
        if (!isDemand(job)) return jobs.length;
        const at = jobs.findIndex((other) => !isDemand(other));
        return at === -1 ? jobs.length : at;
      },
    });
  }

  reserve(callerId: string, amountMicros: number): Promise<ReserveResult> {
    assertMicros("reservation amount", amountMicros);
    const lane = this.#lane(callerId);
    this.#touch(callerId, lane);
    // Reserves in memory do not wait for KV, so write-behind settles could
    // pile up faster than they commit: past a backlog of two full batches a
    // reserve waits its turn behind them instead.
    if (this.#engine.queued(callerId) < 2 * MAX_BATCH_OPERATIONS) {
      const inMemory = this.#reserveInMemory(callerId, lane, amountMicros);
      if (inMemory) return Promise.resolve(inMemory);
    }
    return this.#submit<ReserveResult>(
      callerId,
      (done) => ({ kind: "reserve", amountMicros, done }),
    ).then(unwrap);
  }

  async settle(
    charge: Settlement,
  ): Promise<{ availableMicros: number }> {
    assertMicros("cost", charge.costMicros);
    const settlement = this.#charged(charge);
    const open = this.#claim(settlement);
    this.#journalCharge(settlement, open);
    // An unreachable store is not waited for here: the charge goes behind.
    const outcome = storeReachable(this.#kv)
      ? await this.#submitSettle(settlement, open)
      : { ok: false as const, error: storeAway() };
    if (outcome.ok) {
      this.#committed(settlement);
      return outcome.value;
    }
    // Never dropped: it goes on behind, from the journal's record.
    this.#behindSettle(settlement, open, outcome.error);
    return { availableMicros: availableMicros(this.#lane(open.callerId)) };
  }

  settleSoon(charge: Settlement): { availableMicros: number } {
    assertMicros("cost", charge.costMicros);
    const settlement = this.#charged(charge);
    const lane = this.#lane(settlement.reservation.callerId);
    let open: OpenReservation;
    try {
      open = this.#claim(settlement);
    } catch (error) {
      this.#logLostSettle(settlement, error);
      return { availableMicros: availableMicros(lane) };
    }
    this.#journalCharge(settlement, open);
    this.#behindSettle(settlement, open);
    return { availableMicros: availableMicros(lane) };
  }

  async flush(): Promise<void> {
    // While a flush waits, failing settlements get a few more seconds, then
    // stay in the journal; once it is over they go on as before (a flush
    // between two phases is no shutdown).
    const first = this.#closingSince === undefined;
    if (first) this.#closingSince = this.#now();
    try {
      await this.#idle();
      const returns: Promise<void>[] = [];
      for (const [callerId, lane] of this.#lanes) {
        clearTimeout(lane.idleTimer);
        lane.idleTimer = undefined;
        if (freeMicros(lane) > 0) returns.push(this.#returnLease(callerId));
      }
      await Promise.all(returns);
      await this.#idle();
    } finally {
      if (first) this.#closingSince = undefined;
    }
  }

  storeUnreservedTrace(trace: TraceRecord): Promise<void> {
    return commitWithRetry(`trace "${trace.requestId}"`, async () => {
      const op = addTraceWrites(this.#kv.atomic(), trace, {
        retentionMs: this.#traceRetentionMs,
      });
      if (this.#usageAggregates) {
        const usage = new UsageSums();
        usage.add(trace);
        usage.writeTo(op);
      }
      const committed = await op.commit();
      return committed.ok ? undefined : null;
    });
  }

  async balance(callerId: string): Promise<number> {
    // After this process's queued charges, so it sees every call it answered.
    await this.#engine.drained(callerId);
    return await readBalance(this.#kv, callerId);
  }

  /** Waits until every queue is empty and every write-behind settle has finished. */
  async #idle(): Promise<void> {
    for (;;) {
      await Promise.all([...this.#behind, this.#engine.idle()]);
      if (this.#behind.size === 0) {
        await this.#engine.idle();
        if (this.#behind.size === 0) return;
      }
    }
  }

  #lane(callerId: string): Lane {
    let lane = this.#lanes.get(callerId);
    if (!lane) {
      lane = newLane();
      this.#lanes.set(callerId, lane);
    }
    return lane;
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
    if (!lease || amountMicros > freeMicros(lane) || this.#renewDue(lease)) {
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
    if (!lane.growing && freeMicros(lane) < ahead / 2) {
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
      availableMicros: availableMicros(lane),
    };
  }

  #openReservation(
    callerId: string,
    leaseId: string,
    amountMicros: number,
  ): Reservation {
    return this.#reservations.open(callerId, leaseId, amountMicros);
  }

  /**
   * Claims the reservation for its settle (see {@linkcode OpenReservations.claim})
   * and keeps the caller's lease from going back while it settles.
   */
  #claim(settlement: Settlement): OpenReservation {
    const open = this.#reservations.claim(
      settlement,
      (callerId) => this.#lane(callerId),
    );
    this.#touch(open.callerId, this.#lane(open.callerId));
    return open;
  }

  /** A settle that will never commit: its hold goes back to the lease, uncharged (the operator loses the charge, never the caller). */
  #abandon(open: OpenReservation, settlement: Settlement): void {
    this.#reservations.abandon(
      open,
      settlement,
      (callerId) => this.#lane(callerId),
    );
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
      } else if (freeMicros(lane) > 0) {
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
    const journaled = this.#journal !== undefined && chargesLedger(settlement);
    this.#log({
      level: "error",
      message: journaled
        ? `Settling reservation "${settlement.reservation.id}" did not commit before shutdown; its charge stays in the journal ${
          this.#journal!.path
        }, which the next gateway replays: ${error}`
        : `Settling reservation "${settlement.reservation.id}" failed and there is no journal; it is not charged: ${error}`,
      requestId: settlement.trace.requestId,
      callerId: settlement.reservation.callerId,
    });
  }

  /** The settlement with its charge's id and the token classes its trace records. */
  #charged(charge: Settlement): Settlement {
    const settlement = withChargedTokens(charge);
    settlement.chargeId ??= monotonicId(this.#now());
    return settlement;
  }

  /** Writes the charge down before it is queued: the journal keeps it if the store never takes it. */
  #journalCharge(settlement: Settlement, open: OpenReservation): void {
    if (!this.#journal || !chargesLedger(settlement)) return;
    this.#journal.record({
      chargeId: settlement.chargeId!,
      callerId: open.callerId,
      reservationId: open.id,
      ...(open.leaseId ? { leaseId: open.leaseId } : {}),
      costMicros: settlement.costMicros,
      usage: settlement.usage,
      trace: settlement.trace,
      time: this.#now(),
    });
  }

  #committed(settlement: Settlement): void {
    this.#journal?.done(settlement.chargeId!);
  }

  /** Runs {@linkcode KvBilling.#settleBehind}, kept track of until it ends. */
  #behindSettle(
    settlement: Settlement,
    open: OpenReservation,
    firstError?: unknown,
  ): void {
    const done = this.#settleBehind(settlement, open, firstError);
    this.#behind.add(done);
    done.finally(() => this.#behind.delete(done));
  }

  /**
   * Commits a settlement, however long the store takes to come back: each
   * failed round waits twice as long as the last (up to
   * {@linkcode SETTLE_RETRY_MAX_MS}, jittered) and goes again. A round whose
   * commit may have been applied (`CommitOutcomeUnknownError`) looks its
   * ledger entry up first, so the charge is never made twice. Only a
   * shutdown stops it, {@linkcode CLOSING_RETRY_MS} after `flush()` began:
   * the charge then stays in the journal for the next process to replay.
   */
  async #settleBehind(
    settlement: Settlement,
    open: OpenReservation,
    firstError?: unknown,
  ): Promise<void> {
    let error = firstError;
    let delayMs = SETTLE_RETRY_MIN_MS;
    for (let round = 0;; round++) {
      if (error !== undefined) {
        if (
          this.#closingSince !== undefined &&
          this.#now() - this.#closingSince > CLOSING_RETRY_MS
        ) {
          this.#abandon(open, settlement);
          this.#logLostSettle(settlement, error);
          return;
        }
        // An unreachable store is logged once, by its outage, not by each
        // charge that waits for it.
        if (round % LOG_EVERY_ROUNDS === 1 && storeReachable(this.#kv)) {
          this.#log({
            level: "warn",
            message:
              `Settling reservation "${settlement.reservation.id}" failed; it is tried again: ${error}`,
            requestId: settlement.trace.requestId,
            callerId: open.callerId,
          });
        }
        await sleep(delayMs * (0.5 + Math.random() / 2));
        delayMs = Math.min(delayMs * 2, SETTLE_RETRY_MAX_MS);
        if (
          error instanceof CommitOutcomeUnknownError &&
          storeReachable(this.#kv) &&
          await this.#inLedger(settlement, open.callerId)
        ) {
          // Applied after all: the hold leaves the lane, the lease is
          // read again at the next commit.
          this.#abandon(open, settlement);
          this.#committed(settlement);
          return;
        }
      }
      // While the store is unreachable, nothing is queued: a queue of
      // charges waiting on it would hold up the reserves behind them, which
      // the lease can still cover in memory.
      if (!storeReachable(this.#kv)) {
        error ??= storeAway();
        continue;
      }
      const outcome = await this.#submitSettle(settlement, open);
      if (outcome.ok) {
        this.#committed(settlement);
        return;
      }
      error = outcome.error;
    }
  }

  /** Whether the settlement's ledger entry is in the store; `false` when it cannot be read now. */
  async #inLedger(settlement: Settlement, callerId: string): Promise<boolean> {
    if (!chargesLedger(settlement)) return false;
    try {
      const entry = await this.#kv.get(
        ledgerKey(callerId, settlement.chargeId!),
      );
      return entry.versionstamp !== null;
    } catch {
      return false;
    }
  }

  #submitSettle(
    settlement: Settlement,
    open: OpenReservation,
  ): Promise<Outcome<{ availableMicros: number }>> {
    const bytes = settleBytes(settlement.trace);
    return this.#submit(
      open.callerId,
      (done) => ({ kind: "settle", settlement, open, bytes, done }),
    );
  }

  /** Queues a job for the caller's next batch (demand goes ahead of settles). */
  #submit<T>(
    callerId: string,
    job: (done: (outcome: Outcome<T>) => void) => Job,
  ): Promise<Outcome<T>> {
    const { promise, resolve } = Promise.withResolvers<Outcome<T>>();
    this.#engine.submit(callerId, job(resolve));
    return promise;
  }
}

/** The settlement with its trace recording the token classes the cost priced. */
function withChargedTokens(settlement: Settlement): Settlement {
  const trace: ChargedTraceRecord = {
    ...settlement.trace,
    charged: chargedTokens(settlement.usage),
  };
  return { ...settlement, trace };
}

/** Why a settle waits: the store is unreachable (its outage probes it). */
function storeAway(): Error {
  return new Error("The store is unreachable");
}

/** Resolves after `ms`. */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Credits: one balance per caller in integer micro-USD (1 USD = 1 000 000),
 * credit leases each gateway process takes reservations from, settlement
 * after each call, and a ledger with one entry per money movement, all in
 * Deno KV.
 *
 * Invariant, at every commit: the sum of a caller's ledger entries equals
 * their balance plus what their open leases hold. A lease moves money out of
 * the spendable balance into a record of one process (no ledger entry); the
 * process takes reservations from it in memory, with no commit, and grows it
 * by one commit only when it falls short. Settling debits the real cost from
 * the lease (one `"charge"` entry); an unused lease goes back to the balance
 * when its caller is idle, on `flush()`, or, when its process died, through
 * the sweep. A top-up is one `"topup"` entry.
 *
 * On the request path there is at most one commit before forwarding
 * ({@linkcode Billing.reserve}: none while the lease covers the call) and one
 * after ({@linkcode Billing.settle}: debit, ledger entry and trace together).
 * Operations of one caller that wait while a commit runs share the next
 * commit (group commit), and {@linkcode Billing.settleSoon} queues a
 * settlement without waiting for it.
 *
 * @example Reserve, then settle
 * ```ts
 * import { createCaller } from "./callers.ts";
 * import { createBilling, usdToMicros } from "./credits.ts";
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
 * kv.close();
 * ```
 *
 * @module
 */

import { monotonicId, randomId } from "./_ids.ts";
import { commitWithRetry } from "./_kv_retry.ts";
import {
  balanceKey,
  callerKey,
  leaseExpiryEnd,
  leaseExpiryKey,
  leaseExpiryPrefix,
  leaseKey,
  leasesPrefix,
  ledgerKey,
  ledgerPrefix,
  reservationExpiryEnd,
  reservationExpiryPrefix,
  reservationKey,
} from "./kv_keys.ts";
import { addTraceWrites } from "./tracing.ts";
import type {
  Billing,
  Caller,
  ModelPricing,
  ProviderName,
  Reservation,
  ReserveResult,
  RouteName,
  Settlement,
  TraceRecord,
  Usage,
} from "./types.ts";

/** Micro-USD in one USD. */
export const MICROS_PER_USD = 1_000_000;

/** Default time a reservation may stay open before the sweep releases it: 15 minutes. */
export const DEFAULT_RESERVATION_TTL_MS: number = 15 * 60 * 1000;

/** Default time a closed reservation is remembered (so it cannot settle twice): 1 day. */
export const DEFAULT_CLOSED_RESERVATION_RETENTION_MS: number = 24 * 60 * 60 *
  1000;

/**
 * Converts USD to integer micro-USD, rounding to the nearest micro-USD.
 *
 * @param usd An amount in USD.
 * @returns The amount in micro-USD.
 * @throws {RangeError} When `usd` is not finite or beyond a safe integer of micro-USD.
 */
export function usdToMicros(usd: number): number {
  const micros = Math.round(usd * MICROS_PER_USD);
  if (!Number.isSafeInteger(micros)) {
    throw new RangeError(
      `Cannot convert "${usd}" USD to micro-USD: not a finite amount in range`,
    );
  }
  // Math.round(-0.4) is -0; keep the zero plain.
  return micros === 0 ? 0 : micros;
}

/**
 * Converts integer micro-USD to USD.
 *
 * @param micros An amount in micro-USD.
 * @returns The amount in USD.
 */
export function microsToUsd(micros: number): number {
  return micros / MICROS_PER_USD;
}

// A price in USD per million tokens is the same number in micro-USD per token.
// Scaled by 10^6 it is an integer for any price quoted to six decimals, so the
// sum is exact and only the final division rounds.
const PRICE_SCALE = 1_000_000n;

function scaledPrice(usdPerMillion: number): bigint {
  if (!Number.isFinite(usdPerMillion) || usdPerMillion < 0) {
    throw new RangeError(
      `Invalid price "${usdPerMillion}": expected a non-negative number`,
    );
  }
  return BigInt(Math.round(usdPerMillion * Number(PRICE_SCALE)));
}

function tokenCount(name: string, value: number): bigint {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(
      `Invalid token count "${value}" for "${name}": expected a non-negative integer`,
    );
  }
  return BigInt(value);
}

/**
 * The cost of one call in micro-USD: uncached input tokens at the input price,
 * cached input tokens at the cached price (the input price where the model has
 * none), output tokens at the output price; the total rounded up to the next
 * micro-USD, once per call.
 *
 * @param usage The call's token usage (`inputTokens` includes the cached ones).
 * @param pricing The model's prices, USD per million tokens.
 * @returns The cost, integer micro-USD.
 * @throws {RangeError} On negative or fractional token counts, cached tokens above input tokens, or negative prices.
 */
export function costMicros(usage: Usage, pricing: ModelPricing): number {
  const input = tokenCount("inputTokens", usage.inputTokens);
  const cached = tokenCount("cachedInputTokens", usage.cachedInputTokens);
  const output = tokenCount("outputTokens", usage.outputTokens);
  if (cached > input) {
    throw new RangeError(
      `Invalid usage: cachedInputTokens "${usage.cachedInputTokens}" exceeds inputTokens "${usage.inputTokens}"`,
    );
  }
  const inputPrice = scaledPrice(pricing.input);
  const cachedPrice = pricing.cachedInput === undefined
    ? inputPrice
    : scaledPrice(pricing.cachedInput);
  const scaled = (input - cached) * inputPrice + cached * cachedPrice +
    output * scaledPrice(pricing.output);
  return Number((scaled + PRICE_SCALE - 1n) / PRICE_SCALE);
}

/**
 * The most a call can cost: the estimated input tokens, none cached, plus the
 * most output tokens the call may produce. This is what gets reserved.
 *
 * @param pricing The model's prices.
 * @param inputTokensEstimate Estimated prompt tokens.
 * @param maxOutputTokens The call's `max_tokens`, else the model's limit.
 * @returns The ceiling, integer micro-USD.
 */
export function maxCostMicros(
  pricing: ModelPricing,
  inputTokensEstimate: number,
  maxOutputTokens: number,
): number {
  return costMicros(
    {
      inputTokens: Math.ceil(inputTokensEstimate),
      outputTokens: Math.ceil(maxOutputTokens),
      cachedInputTokens: 0,
    },
    pricing,
  );
}

/**
 * A reservation as stored in KV: written when it settles, so it cannot settle
 * twice. (Reservations opened before credit leases were also stored open.)
 */
export interface ReservationRecord {
  /** Reservation id. */
  id: string;
  /** The caller it holds money of. */
  callerId: string;
  /** Amount held, micro-USD. */
  amountMicros: number;
  /** Epoch ms it was taken. */
  createdAt: number;
  /** Epoch ms after which the sweep may release it. */
  expiresAt: number;
  /** `settled` was charged; `open` and `expired` are reservations from before credit leases. */
  state: "open" | "settled" | "expired";
}

/** One movement of a caller's balance. */
export interface LedgerEntry {
  /** Time-ordered entry id. */
  id: string;
  /** Whose balance moved. */
  callerId: string;
  /** `charge` for a settled call, `topup` for credits added or removed by an admin. */
  kind: "charge" | "topup";
  /** Signed change of the balance, micro-USD (negative for a charge). */
  amountMicros: number;
  /** Epoch ms of the movement. */
  time: number;
  /** For charges: the real cost; above `-amountMicros` only when the balance could not cover it. */
  costMicros?: number;
  /** For charges: the gateway request id. */
  requestId?: string;
  /** For charges: the trace id. */
  traceId?: string;
  /** For charges: the reservation it closed. */
  reservationId?: string;
  /** For charges: model id as sent by the caller. */
  model?: string;
  /** For charges: route. */
  route?: RouteName;
  /** For charges: provider. */
  provider?: ProviderName;
  /** For charges: prompt tokens, cached included. */
  inputTokens?: number;
  /** For charges: completion tokens. */
  outputTokens?: number;
  /** For charges: cached prompt tokens. */
  cachedTokens?: number;
}

/** A credit lease as stored in KV. */
export interface LeaseRecord {
  /** Lease id. */
  id: string;
  /** The caller whose money it holds. */
  callerId: string;
  /** Amount held, micro-USD: the open reservations taken from it plus its unreserved part. */
  amountMicros: number;
  /** Epoch ms it was opened. */
  createdAt: number;
  /** Epoch ms after which the sweep may return it; every commit that changes it renews it. */
  expiresAt: number;
  /** `open` holds money; `expired` was returned to the balance by the sweep. */
  state: "open" | "expired";
}

/** Options of {@linkcode createBilling}. */
export interface BillingOptions {
  /** How long a reservation (and a lease no commit renewed) stays before the sweep may release it, ms. */
  reservationTtlMs?: number;
  /** How long a closed reservation is remembered, ms; settling it after that fails as unknown. */
  closedReservationRetentionMs?: number;
  /** How long trace records are kept, ms. */
  traceRetentionMs?: number;
  /** How long a caller's lease waits after its last reserve or settle before its unreserved part goes back to the balance, ms. */
  leaseIdleMs?: number;
  /** How many calls of the latest reservation's size a lease takes ahead of demand; 0 takes only what a reservation lacks. */
  leaseAheadCalls?: number;
  /** Clock, epoch ms; tests replace it. */
  now?: () => number;
  /** Where a write-behind settlement that finally failed is reported; defaults to a JSON line on stderr. */
  log?: (record: Record<string, unknown>) => void;
}

/** Default time a caller's lease waits after its last reserve or settle before it is returned: 1 second. */
export const DEFAULT_LEASE_IDLE_MS = 1_000;

/** Default number of calls of the latest reservation's size a lease takes ahead of demand. */
export const DEFAULT_LEASE_AHEAD_CALLS = 32;

// A lease takes ahead of demand at most this share of what the balance holds
// after the reservations it serves, so a few processes sharing a small
// balance never strand it in their leases: near the end every lease takes
// exactly what its reservation lacks, and settles give the rest back.
const LEASE_AHEAD_SHARE = 0.25;

function assertMicros(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(
      `Invalid ${name} "${value}": expected a non-negative integer of micro-USD`,
    );
  }
}

// Group commit: one caller's queued operations share one atomic. Deno KV
// allows 100 checks, 1000 mutations and 819 200 bytes of mutations per
// atomic (checked on Deno 2.9). A batch takes one check per settle plus the
// balance's and the lease's (98 at most), at most nine mutations per settle
// (864), and by a generous estimate of its bytes stays under 512 KiB; an
// atomic refused for its size is split in halves.
const MAX_BATCH_OPERATIONS = 96;
const MAX_BATCH_BYTES = 512 * 1024;
const RESERVE_BYTES = 512;
const SETTLE_BYTES = 2_048;
/** Rounds a write-behind settlement gets before it is logged and dropped. */
const SETTLE_SOON_ROUNDS = 3;

/** A job's result: a value, or an error; `final` errors are not worth retrying. */
type Outcome<T> =
  | { ok: true; value: T }
  | { ok: false; error: unknown; final: boolean };

/** A reservation this instance took from one of its leases, until its settle commits. */
interface OpenReservation {
  id: string;
  callerId: string;
  leaseId: string;
  /** What it holds of the lease; once its settle is queued, the part of the cost the lease pays for it. */
  amountMicros: number;
  createdAt: number;
  settling: boolean;
}

/** A caller's lease in this instance. */
interface HeldLease {
  /** The record as last committed. */
  entry: Deno.KvEntry<LeaseRecord>;
  /** The part of the amount that is not free: open reservations, queued charges, amounts being returned. */
  heldMicros: number;
}

/** What a settle claimed of its reservation before it was queued. */
interface Claim {
  /** The reservation, when this instance opened it; else KV tells why it cannot settle. */
  open?: OpenReservation;
  /** The part of the cost the reservation's hold pays. */
  earmarkMicros: number;
}

interface ReserveJob {
  kind: "reserve";
  amountMicros: number;
  done: (outcome: Outcome<ReserveResult>) => void;
}

interface SettleJob {
  kind: "settle";
  settlement: Settlement;
  claim: Claim;
  /** What a write-behind settle told its caller it adds to the balance beyond its hold; 0 for `settle()`. */
  projectedDeltaMicros: number;
  bytes: number;
  done: (outcome: Outcome<{ balanceMicros: number }>) => void;
}

interface BalanceJob {
  kind: "balance";
  done: (outcome: Outcome<number>) => void;
}

/** `grow` tops the lease up ahead of demand; `return` gives its unreserved part back. */
interface LeaseJob {
  kind: "grow" | "return";
  done: (outcome: Outcome<unknown>) => void;
}

type Job = ReserveJob | SettleJob | BalanceJob | LeaseJob;

/** One caller's queue and lease in this process. */
interface Lane {
  jobs: Job[];
  draining: boolean;
  /** The KV balance after this process's latest commit or read for the caller. */
  knownMicros?: number;
  /** What queued write-behind settles will add to the balance beyond their holds. */
  pendingDeltaMicros: number;
  lease?: HeldLease;
  /** The latest reservation's amount: a lease grows by multiples of it. */
  callMicros: number;
  growing: boolean;
  lastActivity: number;
  idleTimer?: ReturnType<typeof setTimeout>;
}

function freeMicros(lease: HeldLease | undefined): number {
  return lease ? lease.entry.value.amountMicros - lease.heldMicros : 0;
}

function jobBytes(job: Job): number {
  return job.kind === "settle"
    ? job.bytes
    : job.kind === "reserve"
    ? RESERVE_BYTES
    : 0;
}

/** Whether a job asks the lease for money: a reserve, or growth ahead of demand. */
function isDemand(job: Job): boolean {
  return job.kind === "reserve" || job.kind === "grow";
}

/**
 * Takes the longest prefix of `jobs` that fits one atomic (always at least
 * one job); reserves at the front go alone, so their commit stays small.
 */
function takeBatch(jobs: Job[]): Job[] {
  const demand = isDemand(jobs[0]);
  let count = 0;
  let bytes = 0;
  while (count < jobs.length && count < MAX_BATCH_OPERATIONS) {
    if (isDemand(jobs[count]) !== demand) break;
    const next = jobBytes(jobs[count]);
    if (count > 0 && bytes + next > MAX_BATCH_BYTES) break;
    bytes += next;
    count++;
  }
  return jobs.splice(0, count);
}

/** Whether KV refused an atomic for its size (too many checks or mutations, or too many bytes). */
function isLimitError(error: unknown): boolean {
  return error instanceof TypeError && /too (many|large)/i.test(error.message);
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) {
    result.push(items.slice(i, i + size));
  }
  return result;
}

function ok<T>(value: T): Outcome<T> {
  return { ok: true, value };
}

/** {@linkcode Billing} over Deno KV, reserving from per-caller leases in memory. */
class KvBilling implements Billing {
  readonly #kv: Deno.Kv;
  readonly #reservationTtlMs: number;
  readonly #closedRetentionMs: number;
  readonly #traceRetentionMs: number | undefined;
  readonly #leaseIdleMs: number;
  readonly #leaseAheadCalls: number;
  readonly #now: () => number;
  readonly #log: (record: Record<string, unknown>) => void;
  // One queue per caller: in-process concurrency waits its turn instead of
  // colliding in KV, and whatever waited while a commit ran goes into the
  // next commit together. Conflicts with other processes still retry with
  // jittered backoff. Lanes are kept (a few numbers per caller ever seen) so
  // the balance a write-behind settle reports survives idle moments.
  readonly #lanes = new Map<string, Lane>();
  readonly #behind = new Set<Promise<void>>();
  readonly #drains = new Set<Promise<void>>();
  // Reservations live only here until they settle: a lease in KV holds
  // their money, and a crash returns it with the lease (the sweep).
  readonly #open = new Map<string, OpenReservation>();
  #nextStaleCheck = 0;

  constructor(kv: Deno.Kv, options: BillingOptions) {
    this.#kv = kv;
    this.#reservationTtlMs = options.reservationTtlMs ??
      DEFAULT_RESERVATION_TTL_MS;
    this.#closedRetentionMs = options.closedReservationRetentionMs ??
      DEFAULT_CLOSED_RESERVATION_RETENTION_MS;
    this.#traceRetentionMs = options.traceRetentionMs;
    this.#leaseIdleMs = options.leaseIdleMs ?? DEFAULT_LEASE_IDLE_MS;
    this.#leaseAheadCalls = options.leaseAheadCalls ??
      DEFAULT_LEASE_AHEAD_CALLS;
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
    const backlog = lane.jobs.length >= 2 * MAX_BATCH_OPERATIONS;
    if (!backlog) {
      const fromLease = this.#reserveFromLease(callerId, lane, amountMicros);
      if (fromLease) return Promise.resolve(fromLease);
    }
    return this.#submit<ReserveResult>(
      callerId,
      (done) => ({ kind: "reserve", amountMicros, done }),
      !backlog,
    ).then(unwrap);
  }

  settle(settlement: Settlement): Promise<{ balanceMicros: number }> {
    assertMicros("cost", settlement.costMicros);
    const claim = this.#claim(settlement);
    if (claim instanceof Error) return Promise.reject(claim);
    return this.#submitSettle(settlement, claim, 0).then((outcome) => {
      if (!outcome.ok) this.#abandon(claim);
      return unwrap(outcome);
    });
  }

  settleSoon(settlement: Settlement): { balanceMicros: number } {
    assertMicros("cost", settlement.costMicros);
    const lane = this.#lane(settlement.reservation.callerId);
    const claim = this.#claim(settlement);
    // The balance once everything this process queued has committed: the
    // hold's unspent part is back in the lease already; the cost above the
    // hold comes out, never below zero, as in #attempt.
    const before = (lane.knownMicros ?? 0) + lane.pendingDeltaMicros +
      freeMicros(lane.lease);
    if (claim instanceof Error) {
      this.#logLostSettle(settlement, claim);
      return { balanceMicros: before };
    }
    const delta = -Math.min(
      settlement.costMicros - claim.earmarkMicros,
      Math.max(0, before),
    );
    lane.pendingDeltaMicros += delta;
    const done = this.#settleBehind(lane, settlement, claim, delta);
    this.#behind.add(done);
    done.finally(() => this.#behind.delete(done));
    return { balanceMicros: before + delta };
  }

  async flush(): Promise<void> {
    await this.#idle();
    const returns: Promise<void>[] = [];
    for (const [callerId, lane] of this.#lanes) {
      clearTimeout(lane.idleTimer);
      lane.idleTimer = undefined;
      if (freeMicros(lane.lease) > 0) {
        returns.push(this.#returnLease(callerId));
      }
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

  balance(callerId: string): Promise<number> {
    // Queued behind the caller's settles, so it sees every charge this
    // process has answered for, committed or not yet.
    return this.#submit<number>(callerId, (done) => ({ kind: "balance", done }))
      .then(unwrap);
  }

  /** Waits for every queued settle and operation, so the KV can be closed after it. */
  async #idle(): Promise<void> {
    while (this.#behind.size > 0 || this.#drains.size > 0) {
      await Promise.all([...this.#behind, ...this.#drains]);
    }
  }

  /** The money a lease takes ahead of demand when the balance holds `balanceMicros`. */
  #aheadMicros(callMicros: number, balanceMicros: number): number {
    if (callMicros <= 0 || balanceMicros <= 0) return 0;
    const calls = Math.min(
      this.#leaseAheadCalls,
      Math.floor(LEASE_AHEAD_SHARE * balanceMicros / callMicros),
    );
    return callMicros * calls;
  }

  /** Takes a reservation from the caller's lease in memory, or `undefined` when the lease cannot cover it. */
  #reserveFromLease(
    callerId: string,
    lane: Lane,
    amountMicros: number,
  ): ReserveResult | undefined {
    const lease = lane.lease;
    if (!lease || amountMicros > freeMicros(lease)) return undefined;
    // A lease no commit renewed for half its lifetime could be swept before
    // the call ends; reserving through KV renews it.
    const renewBy = lease.entry.value.expiresAt - this.#reservationTtlMs / 2;
    if (this.#now() > renewBy) return undefined;
    lease.heldMicros += amountMicros;
    const id = randomId("rs_", 16);
    this.#open.set(id, {
      id,
      callerId,
      leaseId: lease.entry.value.id,
      amountMicros,
      createdAt: this.#now(),
      settling: false,
    });
    lane.callMicros = amountMicros;
    const known = lane.knownMicros ?? 0;
    const free = freeMicros(lease);
    if (!lane.growing && free < this.#aheadMicros(amountMicros, known) / 2) {
      lane.growing = true;
      this.#submit(callerId, (done) => ({ kind: "grow", done }), true).then(
        (outcome) => {
          lane.growing = false;
          if (!outcome.ok) this.#logLeaseFailure(callerId, "grow", outcome);
        },
      );
    }
    return {
      ok: true,
      reservation: { id, callerId, amountMicros },
      balanceMicros: known + lane.pendingDeltaMicros + free,
    };
  }

  /**
   * Marks the reservation as settling and gives the unspent part of its hold
   * back to the lease, so reserves can use it before the settle commits.
   */
  #claim(settlement: Settlement): Claim | Error {
    const { reservation, costMicros } = settlement;
    const open = this.#open.get(reservation.id);
    if (!open) return { earmarkMicros: 0 };
    const refusal = settleRefusal(reservation, open.callerId, open.settling);
    if (refusal) return refusal;
    open.settling = true;
    const lane = this.#lane(open.callerId);
    this.#touch(open.callerId, lane);
    const earmark = Math.min(costMicros, open.amountMicros);
    if (lane.lease?.entry.value.id === open.leaseId) {
      lane.lease.heldMicros -= open.amountMicros - earmark;
    }
    open.amountMicros = earmark;
    return { open, earmarkMicros: earmark };
  }

  /** A settle that will never commit: its hold goes back to the lease, uncharged (the operator loses the charge, never the caller). */
  #abandon(claim: Claim): void {
    const open = claim.open;
    if (!open || !this.#open.has(open.id)) return;
    this.#open.delete(open.id);
    const lease = this.#lanes.get(open.callerId)?.lease;
    if (lease?.entry.value.id === open.leaseId) {
      lease.heldMicros -= open.amountMicros;
    }
  }

  #touch(callerId: string, lane: Lane): void {
    this.#releaseStale();
    lane.lastActivity = performance.now();
    if (lane.idleTimer === undefined) {
      this.#scheduleIdle(callerId, lane, this.#leaseIdleMs);
    }
  }

  /**
   * Detaches reservations open longer than the reservation lifetime from
   * their lease, as the sweep releases a reservation of a crashed process:
   * the lease gets their hold back, and a late settle charges the balance.
   * Forgets them once a closed reservation would be forgotten too.
   */
  #releaseStale(): void {
    const now = this.#now();
    if (now < this.#nextStaleCheck) return;
    this.#nextStaleCheck = now + Math.min(this.#reservationTtlMs / 4, 60_000);
    for (const open of this.#open.values()) {
      const age = now - open.createdAt;
      if (age > this.#reservationTtlMs + this.#closedRetentionMs) {
        this.#open.delete(open.id);
      }
      if (open.settling || open.leaseId === "") continue;
      if (age <= this.#reservationTtlMs) continue;
      const lease = this.#lanes.get(open.callerId)?.lease;
      if (lease?.entry.value.id === open.leaseId) {
        lease.heldMicros -= open.amountMicros;
      }
      open.leaseId = "";
    }
  }

  #scheduleIdle(callerId: string, lane: Lane, delayMs: number): void {
    const timer = setTimeout(() => {
      lane.idleTimer = undefined;
      const quietMs = performance.now() - lane.lastActivity;
      if (quietMs < this.#leaseIdleMs) {
        this.#scheduleIdle(callerId, lane, this.#leaseIdleMs - quietMs);
      } else if (freeMicros(lane.lease) > 0) {
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
    lane: Lane,
    settlement: Settlement,
    claim: Claim,
    delta: number,
  ): Promise<void> {
    for (let round = 1;; round++) {
      const outcome = await this.#submitSettle(settlement, claim, delta);
      if (outcome.ok) return;
      if (outcome.final || round >= SETTLE_SOON_ROUNDS) {
        // Committed batches drop their deltas themselves; this one never will.
        if (!outcome.final) lane.pendingDeltaMicros -= delta;
        this.#abandon(claim);
        this.#logLostSettle(settlement, outcome.error);
        return;
      }
    }
  }

  #submitSettle(
    settlement: Settlement,
    claim: Claim,
    projectedDeltaMicros: number,
  ): Promise<Outcome<{ balanceMicros: number }>> {
    const bytes = SETTLE_BYTES + 2 * JSON.stringify(settlement.trace).length;
    return this.#submit(
      settlement.reservation.callerId,
      (done) => ({
        kind: "settle",
        settlement,
        claim,
        projectedDeltaMicros,
        bytes,
        done,
      }),
    );
  }

  #lane(callerId: string): Lane {
    let lane = this.#lanes.get(callerId);
    if (!lane) {
      lane = {
        jobs: [],
        draining: false,
        pendingDeltaMicros: 0,
        callMicros: 0,
        growing: false,
        lastActivity: 0,
      };
      this.#lanes.set(callerId, lane);
    }
    return lane;
  }

  /**
   * Queues a job for the caller's next batch. A reserve or growth `first`
   * goes ahead of queued settles and balance reads (behind earlier ones of
   * its kind): a settle's unspent hold is back in the lease already, so it
   * only charges, and making a call wait for other calls' charges would put
   * them back on its path.
   */
  #submit<T>(
    callerId: string,
    job: (done: (outcome: Outcome<T>) => void) => Job,
    first = false,
  ): Promise<Outcome<T>> {
    const lane = this.#lane(callerId);
    const { promise, resolve } = Promise.withResolvers<Outcome<T>>();
    if (first) {
      const at = lane.jobs.findIndex((queued) => !isDemand(queued));
      lane.jobs.splice(at === -1 ? lane.jobs.length : at, 0, job(resolve));
    } else lane.jobs.push(job(resolve));
    if (!lane.draining) {
      lane.draining = true;
      const drain = this.#drain(callerId, lane);
      this.#drains.add(drain);
      drain.finally(() => this.#drains.delete(drain));
    }
    return promise;
  }

  async #drain(callerId: string, lane: Lane): Promise<void> {
    // Let the jobs submitted in the same tick join the first batch.
    await null;
    while (lane.jobs.length > 0) {
      await this.#runBatch(callerId, lane, takeBatch(lane.jobs));
    }
    lane.draining = false;
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
      (job.done as (o: Outcome<unknown>) => void)(outcomes[i])
    );
  }

  /**
   * One read-check-commit round for a batch. Reads the balance once (and,
   * on a retry, the lease; for settles of reservations this instance does
   * not know, their records), applies the jobs in order to the balance and
   * the lease's free part exactly as one-at-a-time commits would, then
   * sizes the lease: grown ahead of demand, trimmed when settles left it far
   * above that, emptied on `return`. Writes the balance (with a check) only
   * when it moved or a decision rested on it, and the lease (with a check)
   * only when it changed or is due for renewal; a batch of reserves the
   * lease covers commits nothing. Returns `null` when the commit lost.
   */
  async #attempt(
    callerId: string,
    lane: Lane,
    batch: readonly Job[],
    trusted: boolean,
  ): Promise<Outcome<unknown>[] | null> {
    const unknownIds = batch.flatMap((job) =>
      job.kind === "settle" && !job.claim.open
        ? [job.settlement.reservation.id]
        : []
    );
    const reread = trusted ? undefined : lane.lease?.entry.key;
    const [balance, leaseRead, ...reads] = await Promise.all([
      this.#kv.get<number>(balanceKey(callerId)),
      reread ? this.#kv.get<LeaseRecord>(reread) : undefined,
      ...chunks(unknownIds, 10).map((ids) =>
        this.#kv.getMany<ReservationRecord[]>(ids.map(reservationKey))
      ),
    ]);
    if (leaseRead && lane.lease) {
      // Swept meanwhile: its money, reservations included, is back in the
      // balance, so their settles charge the balance.
      if (leaseRead.value?.state === "open") {
        lane.lease.entry = leaseRead as Deno.KvEntry<LeaseRecord>;
      } else lane.lease = undefined;
    }
    const stored = new Map<string, ReservationRecord | null>();
    for (const entry of reads.flat()) {
      stored.set(entry.key[1] as string, entry.value);
    }

    const lease = lane.lease;
    const leaseId = lease?.entry.value.id;
    const opening = balance.value ?? 0;
    let available = opening;
    let leased = lease?.entry.value.amountMicros ?? 0;
    let free = freeMicros(lease);
    // Added to the lease's held part while the commit runs, so reserves
    // taken in memory meanwhile cannot spend it; undone either way.
    let pending = 0;
    let grantedMicros = 0;
    let settledMicros = 0;
    let balanceDecides = false;
    let grew = false;
    let wantsGrow = false;
    let wantsReturn = false;
    let settles = 0;
    const granted: OpenReservation[] = [];
    const closed: OpenReservation[] = [];
    const op = this.#kv.atomic();
    const outcomes = batch.map((job): Outcome<unknown> => {
      switch (job.kind) {
        case "balance":
          return ok(available + free);
        case "grow":
          wantsGrow = true;
          return ok(undefined);
        case "return":
          wantsReturn = true;
          return ok(undefined);
        case "reserve": {
          const amount = job.amountMicros;
          if (balance.value === null || amount > available + free) {
            return ok({ ok: false, balanceMicros: available + free });
          }
          const fromBalance = Math.max(0, amount - free);
          available -= fromBalance;
          leased += fromBalance;
          free += fromBalance - amount;
          grew ||= fromBalance > 0;
          pending += amount;
          grantedMicros += amount;
          lane.callMicros = amount;
          const reservation: OpenReservation = {
            id: randomId("rs_", 16),
            callerId,
            leaseId: "",
            amountMicros: amount,
            createdAt: this.#now(),
            settling: false,
          };
          granted.push(reservation);
          return ok({
            ok: true,
            reservation: { id: reservation.id, callerId, amountMicros: amount },
            balanceMicros: available + free,
          });
        }
        case "settle": {
          const { settlement, claim } = job;
          const open = claim.open;
          if (!open) {
            // Not opened by this instance: settled already, or unknown.
            const record = stored.get(settlement.reservation.id) ?? null;
            const refusal = settleRefusal(
              settlement.reservation,
              record?.callerId ?? null,
              true,
            );
            return { ok: false, error: refusal, final: true };
          }
          // The hold pays its part while its lease lives; what it does not
          // cover comes from the lease's free part, then the balance, never
          // below zero (a call can cost more than was reserved).
          const fromHold = open.leaseId === leaseId ? claim.earmarkMicros : 0;
          const rest = settlement.costMicros - fromHold;
          const fromFree = Math.min(rest, free);
          const fromBalance = Math.min(rest - fromFree, available);
          balanceDecides ||= rest > fromFree;
          free -= fromFree;
          pending += fromFree;
          leased -= fromHold + fromFree;
          available -= fromBalance;
          settledMicros += fromHold;
          settles++;
          closed.push(open);
          this.#addSettle(
            op,
            open,
            settlement,
            fromHold + fromFree + fromBalance,
          );
          return ok({ balanceMicros: available + free });
        }
      }
    });

    const ahead = this.#aheadMicros(lane.callMicros, available);
    let moved = 0; // from the lease to the balance (negative: the other way)
    if (wantsReturn) moved = free;
    else if ((grew || wantsGrow) && free < ahead) moved = free - ahead;
    else if (settles > 0 && free > 2 * ahead) moved = free - ahead;
    if (balance.value === null) moved = Math.max(0, moved);
    available += moved;
    leased -= moved;
    free -= moved;
    if (moved > 0) pending += moved;

    const now = this.#now();
    const renewDue = lease !== undefined &&
      now > lease.entry.value.expiresAt - this.#reservationTtlMs / 2;
    const leaseChanges = leased !== (lease?.entry.value.amountMicros ?? 0) ||
      renewDue;
    const balanceChanges = available !== opening || balanceDecides;
    let next: Deno.KvEntry<LeaseRecord> | null | undefined;
    if (leaseChanges) next = this.#addLeaseWrites(op, callerId, lease, leased);
    if (balanceChanges) {
      op.check(balance).set(balanceKey(callerId), available);
    }
    if (leaseChanges || balanceChanges || settles > 0) {
      if (lease) lease.heldMicros += pending;
      let committed: Deno.KvCommitResult | Deno.KvCommitError;
      try {
        committed = await op.commit();
      } finally {
        if (lease) lease.heldMicros -= pending;
      }
      if (!committed.ok) return null;
      if (next) next = { ...next, versionstamp: committed.versionstamp };
    }

    // Committed (or nothing to commit): the lease, its reservations and the
    // known balance follow, synchronously, so settleSoon never counts a
    // committed settle twice.
    if (next === null) lane.lease = undefined;
    else if (next && lease) lease.entry = next;
    else if (next) lane.lease = { entry: next, heldMicros: 0 };
    if (lane.lease) lane.lease.heldMicros += grantedMicros - settledMicros;
    const grantedFrom = lane.lease?.entry.value.id ?? "";
    for (const reservation of granted) {
      reservation.leaseId = grantedFrom;
      this.#open.set(reservation.id, reservation);
    }
    for (const reservation of closed) this.#open.delete(reservation.id);
    lane.knownMicros = available;
    for (const job of batch) {
      if (job.kind === "settle") {
        lane.pendingDeltaMicros -= job.projectedDeltaMicros;
      }
    }
    return outcomes;
  }

  /**
   * Adds the writes that set the caller's lease to `amountMicros`, renewing
   * its expiry: creates it, updates it, or deletes it when it holds nothing.
   * Returns the new entry (versionstamp to be filled in), or `null` when
   * deleted.
   */
  #addLeaseWrites(
    op: Deno.AtomicOperation,
    callerId: string,
    lease: HeldLease | undefined,
    amountMicros: number,
  ): Deno.KvEntry<LeaseRecord> | null {
    const now = this.#now();
    let record: LeaseRecord;
    if (lease) {
      const current = lease.entry.value;
      op.check(lease.entry).delete(
        leaseExpiryKey(current.expiresAt, callerId, current.id),
      );
      if (amountMicros === 0) {
        op.delete(lease.entry.key);
        return null;
      }
      record = {
        ...current,
        amountMicros,
        expiresAt: now + this.#reservationTtlMs,
      };
    } else {
      record = {
        id: randomId("ls_", 16),
        callerId,
        amountMicros,
        createdAt: now,
        expiresAt: now + this.#reservationTtlMs,
        state: "open",
      };
      op.check({ key: leaseKey(callerId, record.id), versionstamp: null });
    }
    const key = leaseKey(callerId, record.id);
    op.set(key, record).set(
      leaseExpiryKey(record.expiresAt, callerId, record.id),
      record.id,
    );
    return { key, value: record, versionstamp: "" };
  }

  #addSettle(
    op: Deno.AtomicOperation,
    open: OpenReservation,
    settlement: Settlement,
    charged: number,
  ): void {
    const { usage, trace, reservation } = settlement;
    const time = this.#now();
    const entry: LedgerEntry = {
      id: monotonicId(time),
      callerId: open.callerId,
      kind: "charge",
      amountMicros: -charged,
      time,
      costMicros: settlement.costMicros,
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
    // The closed reservation is remembered, so a second settle is refused
    // even after this instance forgot it.
    const closed: ReservationRecord = {
      id: open.id,
      callerId: open.callerId,
      amountMicros: reservation.amountMicros,
      createdAt: open.createdAt,
      expiresAt: time + this.#closedRetentionMs,
      state: "settled",
    };
    op.check({ key: reservationKey(open.id), versionstamp: null })
      .set(reservationKey(open.id), closed, {
        expireIn: this.#closedRetentionMs,
      });
    // A failed call that cost nothing moved no money: its trace records it,
    // and the ledger keeps to charges (no entry for a refused call).
    if (charged > 0 || settlement.costMicros > 0 || trace.status < 400) {
      op.set(ledgerKey(open.callerId, entry.id), entry);
    }
    addTraceWrites(op, {
      ...trace,
      callerId: open.callerId,
      costMicros: charged,
    }, {
      retentionMs: this.#traceRetentionMs,
    });
  }
}

/**
 * Why a reservation cannot be settled, or `undefined` when it can. `owner`
 * is the caller this instance or KV knows it by (`null`: neither knows it);
 * `closed` tells it is settling or settled already.
 */
function settleRefusal(
  reservation: Reservation,
  owner: string | null,
  closed: boolean,
): Error | undefined {
  const cannot = `Cannot settle reservation "${reservation.id}"`;
  if (owner === null) return new Error(`${cannot}: it is unknown`);
  if (owner !== reservation.callerId) {
    return new Error(
      `${cannot}: it belongs to "${owner}", not "${reservation.callerId}"`,
    );
  }
  if (closed) return new Error(`${cannot}: it is already settled`);
  return undefined;
}

function unwrap<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.value;
  throw outcome.error;
}

/**
 * Creates the KV-backed {@linkcode Billing} the gateway calls on every request.
 * Create one per process and share it: it keeps a lease per caller to take
 * reservations from in memory, queues each caller's operations and commits
 * those that waited together, in one atomic per batch. Call `flush()` before
 * closing the KV, so unused leases go back to the balances.
 *
 * `balance(callerId)` is exact within this process: the KV balance plus the
 * unreserved part of this process's lease. Other processes' unreserved
 * leases are not in it until they return them (within `leaseIdleMs` of
 * their caller's last call, at shutdown, or through the sweep).
 *
 * @param kv The gateway's KV.
 * @param options Reservation and lease lifetimes, lease sizing, trace retention, clock, log sink.
 * @returns The billing store.
 */
export function createBilling(
  kv: Deno.Kv,
  options: BillingOptions = {},
): Billing {
  return new KvBilling(kv, options);
}

/**
 * A caller's balance as KV holds it: what is left after the leases gateway
 * processes hold. A process's `Billing.balance()` adds its own lease's
 * unreserved part; once every lease is returned the two agree.
 *
 * @param kv The gateway's KV.
 * @param callerId The caller's id.
 * @returns Micro-USD; 0 for an unknown caller.
 */
export async function balance(kv: Deno.Kv, callerId: string): Promise<number> {
  return (await kv.get<number>(balanceKey(callerId))).value ?? 0;
}

/** How often {@linkcode ownedBalance} rereads when the balance moved while it read the leases. */
const OWNED_BALANCE_READS = 5;

/**
 * What a caller owns: the KV balance plus what gateway processes' leases
 * hold for them, the holds of calls in flight included. The admin API and
 * CLI show this number; unlike a process's `Billing.balance()`, it is the
 * same from every process.
 *
 * @param kv The gateway's KV.
 * @param callerId The caller's id.
 * @returns Micro-USD; 0 for an unknown caller.
 */
export async function ownedBalance(
  kv: Deno.Kv,
  callerId: string,
): Promise<number> {
  // A lease that grows or returns between the two reads moves the balance
  // too: read again, so no money is counted twice or missed.
  let owned = 0;
  for (let read = 0; read < OWNED_BALANCE_READS; read++) {
    const before = await kv.get<number>(balanceKey(callerId));
    const leased = await leasedMicros(kv, callerId);
    const after = await kv.get<number>(balanceKey(callerId));
    owned = (after.value ?? 0) + leased;
    if (before.versionstamp === after.versionstamp) break;
  }
  return owned;
}

async function leasedMicros(kv: Deno.Kv, callerId: string): Promise<number> {
  const leases = await listLeases(kv, callerId);
  return leases.reduce((sum, lease) => sum + lease.amountMicros, 0);
}

/**
 * Adds the writes that open a new caller's balance to an atomic operation:
 * the balance and, for a non-zero amount, its `topup` ledger entry. Used by
 * `createCaller` so the caller and its credits appear in one commit.
 *
 * @param op The atomic operation to extend.
 * @param callerId The new caller's id.
 * @param amountMicros Opening credits, micro-USD.
 * @param time Epoch ms.
 * @returns The same operation.
 */
export function addOpeningBalanceWrites(
  op: Deno.AtomicOperation,
  callerId: string,
  amountMicros: number,
  time: number,
): Deno.AtomicOperation {
  assertMicros("opening credits", amountMicros);
  op.check({ key: balanceKey(callerId), versionstamp: null }).set(
    balanceKey(callerId),
    amountMicros,
  );
  if (amountMicros === 0) return op;
  const entry: LedgerEntry = {
    id: monotonicId(time),
    callerId,
    kind: "topup",
    amountMicros,
    time,
  };
  return op.set(ledgerKey(callerId, entry.id), entry);
}

/**
 * Adds credits to a caller's balance, or removes them with a negative amount
 * (an admin correction). A removal never takes the balance below zero: it
 * fails instead, so no entry half-applies and the ledger stays exact. It can
 * remove only what no lease holds (leases return within a second of the
 * caller's last call).
 *
 * @param kv The gateway's KV.
 * @param callerId The caller's id.
 * @param amountMicros Signed amount, integer micro-USD.
 * @param now Epoch ms of the entry; defaults to now.
 * @returns What the caller owns now, micro-USD (see {@linkcode ownedBalance}).
 * @throws {Deno.errors.NotFound} When the caller does not exist (or was revoked).
 * @throws {RangeError} When the amount is not an integer, or would take the balance below zero.
 */
export async function topUp(
  kv: Deno.Kv,
  callerId: string,
  amountMicros: number,
  now: number = Date.now(),
): Promise<number> {
  if (!Number.isSafeInteger(amountMicros)) {
    throw new RangeError(
      `Invalid top-up amount "${amountMicros}": expected an integer of micro-USD`,
    );
  }
  return await commitWithRetry(`top-up for caller "${callerId}"`, async () => {
    const [caller, current] = await kv.getMany<[unknown, number]>([
      callerKey(callerId),
      balanceKey(callerId),
    ]);
    if (caller.value === null) {
      throw new Deno.errors.NotFound(`Caller "${callerId}" not found`);
    }
    const next = (current.value ?? 0) + amountMicros;
    if (next < 0) {
      throw new RangeError(
        `Cannot remove "${-amountMicros}" micro-USD from caller "${callerId}": the balance is "${
          current.value ?? 0
        }"`,
      );
    }
    const entry: LedgerEntry = {
      id: monotonicId(now),
      callerId,
      kind: "topup",
      amountMicros,
      time: now,
    };
    // A lease that grows or returns meanwhile moves the balance, so the
    // check fails and this reads again.
    const leased = await leasedMicros(kv, callerId);
    const committed = await kv.atomic()
      .check(caller, current)
      .set(balanceKey(callerId), next)
      .set(ledgerKey(callerId, entry.id), entry)
      .commit();
    return committed.ok ? next + leased : null;
  });
}

/**
 * Lists a caller's ledger entries, newest first.
 *
 * @param kv The gateway's KV.
 * @param callerId The caller's id.
 * @param options `limit`: the most entries to return (default all).
 * @returns The entries.
 */
export async function listLedger(
  kv: Deno.Kv,
  callerId: string,
  options: { limit?: number } = {},
): Promise<LedgerEntry[]> {
  const entries: LedgerEntry[] = [];
  const iterator = kv.list<LedgerEntry>({ prefix: ledgerPrefix(callerId) }, {
    reverse: true,
    limit: options.limit,
  });
  for await (const entry of iterator) entries.push(entry.value);
  return entries;
}

/** What one sweep released. */
export interface SweepResult {
  /** How many reservations and leases were released. */
  released: number;
  /** How much they held, micro-USD, now back in the balances. */
  releasedMicros: number;
}

/**
 * Releases leases and reservations that expired before `now`: left by a
 * process that crashed or hung (a lease's expiry is renewed by every commit
 * of its process that changes it, so a living one does not expire). Each
 * release checks the record's versionstamp, so a settle committing at the
 * same moment wins and the money is never returned twice. A settle arriving
 * after the release still charges its cost from the balance. Run it
 * periodically (e.g. every minute) in every gateway process; concurrent
 * sweeps are safe. Reservations have their own records only when they
 * were opened before credit leases; their release is kept for those.
 *
 * @param kv The gateway's KV.
 * @param now Epoch ms; leases and reservations with an earlier expiry are released.
 * @param options `closedReservationRetentionMs`: how long a released record is remembered.
 * @returns What was released.
 */
export async function sweepExpiredReservations(
  kv: Deno.Kv,
  now: number,
  options: { closedReservationRetentionMs?: number } = {},
): Promise<SweepResult> {
  const retention = options.closedReservationRetentionMs ??
    DEFAULT_CLOSED_RESERVATION_RETENTION_MS;
  const result: SweepResult = { released: 0, releasedMicros: 0 };
  const count = (released: number | false) => {
    if (released === false) return;
    result.released++;
    result.releasedMicros += released;
  };
  const expiredLeases = kv.list<string>({
    prefix: leaseExpiryPrefix(),
    end: leaseExpiryEnd(now),
  });
  for await (const indexEntry of expiredLeases) {
    count(await releaseLease(kv, indexEntry, retention));
  }
  const expired = kv.list<string>({
    prefix: reservationExpiryPrefix(),
    end: reservationExpiryEnd(now),
  });
  for await (const indexEntry of expired) {
    const reservationId = indexEntry.value;
    count(
      await commitWithRetry(
        `release of reservation "${reservationId}"`,
        async () => {
          const stored = await kv.get<ReservationRecord>(
            reservationKey(reservationId),
          );
          const record = stored.value;
          if (record === null || record.state !== "open") {
            // Settled or released meanwhile; only the index entry is left over.
            const cleaned = await kv.atomic().check(stored).delete(
              indexEntry.key,
            ).commit();
            return cleaned.ok ? false : null;
          }
          const current = await kv.get<number>(balanceKey(record.callerId));
          const committed = await kv.atomic()
            .check(stored, current)
            .set(
              balanceKey(record.callerId),
              (current.value ?? 0) + record.amountMicros,
            )
            .set(reservationKey(record.id), { ...record, state: "expired" }, {
              expireIn: retention,
            })
            .delete(indexEntry.key)
            .commit();
          return committed.ok ? record.amountMicros : null;
        },
      ),
    );
  }
  return result;
}

/** Returns one expired lease to its caller's balance; `false` when it was no longer open. */
function releaseLease(
  kv: Deno.Kv,
  indexEntry: Deno.KvEntry<string>,
  retention: number,
): Promise<number | false> {
  const [, expiresAt, callerId, leaseId] = indexEntry.key as [
    string,
    number,
    string,
    string,
  ];
  return commitWithRetry(`release of lease "${leaseId}"`, async () => {
    const [stored, current] = await kv.getMany<[LeaseRecord, number]>([
      leaseKey(callerId, leaseId),
      balanceKey(callerId),
    ]);
    const record = stored.value;
    if (
      record === null || record.state !== "open" ||
      record.expiresAt !== expiresAt
    ) {
      // Returned, swept or renewed meanwhile; only the index entry is left over.
      const cleaned = await kv.atomic().check(stored).delete(indexEntry.key)
        .commit();
      return cleaned.ok ? false : null;
    }
    const committed = await kv.atomic()
      .check(stored, current)
      .set(balanceKey(callerId), (current.value ?? 0) + record.amountMicros)
      .set(stored.key, { ...record, state: "expired" }, {
        expireIn: retention,
      })
      .delete(indexEntry.key)
      .commit();
    return committed.ok ? record.amountMicros : null;
  });
}

/**
 * A caller's open leases: money gateway processes hold to take reservations
 * from. Each returns its unreserved part to the balance once its caller has
 * been idle for a moment (`leaseIdleMs`), on `flush()`, or through the
 * sweep when its process died.
 *
 * @param kv The gateway's KV.
 * @param callerId The caller's id.
 * @returns The open leases.
 */
export async function listLeases(
  kv: Deno.Kv,
  callerId: string,
): Promise<LeaseRecord[]> {
  const leases: LeaseRecord[] = [];
  for await (
    const entry of kv.list<LeaseRecord>({ prefix: leasesPrefix(callerId) })
  ) {
    if (entry.value.state === "open") leases.push(entry.value);
  }
  return leases;
}

/** The JSON body of `GET /credits`. */
export interface CreditsResponse {
  /** Spendable balance, USD. */
  balance: number;
  /** Always `"USD"`. */
  currency: "USD";
}

/**
 * Builds the body of `GET /credits` for the authenticated caller.
 *
 * @param billing The billing store.
 * @param caller The authenticated caller.
 * @returns `{balance, currency: "USD"}`, balance in USD.
 */
export async function creditsResponse(
  billing: Billing,
  caller: Caller,
): Promise<CreditsResponse> {
  return {
    balance: microsToUsd(await billing.balance(caller.id)),
    currency: "USD",
  };
}

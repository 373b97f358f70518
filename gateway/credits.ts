/**
 * Credits: one balance per caller in integer micro-USD (1 USD = 1 000 000),
 * reservations held before a call is forwarded, settlement after it, and a
 * ledger with one entry per money movement, all in Deno KV.
 *
 * Invariant, at every commit: the sum of a caller's ledger entries equals their
 * balance plus what their open reservations hold. A reservation moves money out
 * of the spendable balance (no ledger entry); settling returns it and debits
 * the real cost (one `"charge"` entry); a top-up is one `"topup"` entry.
 *
 * On the request path there is one commit before forwarding
 * ({@linkcode Billing.reserve}) and one after ({@linkcode Billing.settle}:
 * release, debit, ledger entry and trace together). Operations of one caller
 * that wait while a commit runs share the next commit (group commit), and
 * {@linkcode Billing.settleSoon} queues a settlement without waiting for it.
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
  ledgerKey,
  ledgerPrefix,
  reservationExpiryEnd,
  reservationExpiryKey,
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

/** A reservation as stored in KV. */
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
  /** `open` holds money; `settled` was charged; `expired` was released by the sweep. */
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

/** Options of {@linkcode createBilling}. */
export interface BillingOptions {
  /** How long a reservation stays open before the sweep may release it, ms. */
  reservationTtlMs?: number;
  /** How long a closed reservation is remembered, ms; settling it after that fails as unknown. */
  closedReservationRetentionMs?: number;
  /** How long trace records are kept, ms. */
  traceRetentionMs?: number;
  /** Clock, epoch ms; tests replace it. */
  now?: () => number;
  /** Where a write-behind settlement that finally failed is reported; defaults to a JSON line on stderr. */
  log?: (record: Record<string, unknown>) => void;
}

function assertMicros(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(
      `Invalid ${name} "${value}": expected a non-negative integer of micro-USD`,
    );
  }
}

// Group commit: one caller's queued operations share one atomic. Deno KV
// allows 100 checks, 1000 mutations and 819 200 bytes of mutations per
// atomic (checked on Deno 2.9). A batch takes one check per operation plus
// the balance's (97 at most: the count is exact, not an estimate), at most
// six mutations per settle (576), and by a generous estimate of its bytes
// stays under 512 KiB; an atomic refused for its size is split in halves.
const MAX_BATCH_OPERATIONS = 96;
const MAX_BATCH_BYTES = 512 * 1024;
const RESERVE_BYTES = 512;
const SETTLE_BYTES = 2_048;
/** Most open reservations an instance remembers; settles of the others read KV. */
const MAX_REMEMBERED_RESERVATIONS = 10_000;
/** Rounds a write-behind settlement gets before it is logged and left to the sweep. */
const SETTLE_SOON_ROUNDS = 3;

/** A job's result: a value, or an error; `final` errors are not worth retrying. */
type Outcome<T> =
  | { ok: true; value: T }
  | { ok: false; error: unknown; final: boolean };

interface ReserveJob {
  kind: "reserve";
  amountMicros: number;
  done: (outcome: Outcome<ReserveResult>) => void;
}

interface SettleJob {
  kind: "settle";
  settlement: Settlement;
  /** What a write-behind settle told its caller it adds to the balance; 0 for `settle()`. */
  projectedDeltaMicros: number;
  bytes: number;
  done: (outcome: Outcome<{ balanceMicros: number }>) => void;
}

interface BalanceJob {
  kind: "balance";
  done: (outcome: Outcome<number>) => void;
}

type Job = ReserveJob | SettleJob | BalanceJob;

/** One caller's queue in this process. */
interface Lane {
  jobs: Job[];
  draining: boolean;
  /** The balance after this process's latest commit or read for the caller. */
  knownMicros?: number;
  /** What queued write-behind settles will add to `knownMicros`. */
  pendingDeltaMicros: number;
}

function jobBytes(job: Job): number {
  return job.kind === "settle"
    ? job.bytes
    : job.kind === "reserve"
    ? RESERVE_BYTES
    : 0;
}

/** Takes the longest prefix of `jobs` that fits one atomic (always at least one job). */
function takeBatch(jobs: Job[]): Job[] {
  let count = 0;
  let bytes = 0;
  while (count < jobs.length && count < MAX_BATCH_OPERATIONS) {
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

/** {@linkcode Billing} over Deno KV. */
class KvBilling implements Billing {
  readonly #kv: Deno.Kv;
  readonly #reservationTtlMs: number;
  readonly #closedRetentionMs: number;
  readonly #traceRetentionMs: number | undefined;
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
  // Reservations this instance opened, as committed: a settle checks the
  // remembered versionstamp instead of reading the record first. If the
  // sweep changed it meanwhile the check fails and the retry reads KV.
  readonly #opened = new Map<string, Deno.KvEntry<ReservationRecord>>();

  constructor(kv: Deno.Kv, options: BillingOptions) {
    this.#kv = kv;
    this.#reservationTtlMs = options.reservationTtlMs ??
      DEFAULT_RESERVATION_TTL_MS;
    this.#closedRetentionMs = options.closedReservationRetentionMs ??
      DEFAULT_CLOSED_RESERVATION_RETENTION_MS;
    this.#traceRetentionMs = options.traceRetentionMs;
    this.#now = options.now ?? Date.now;
    this.#log = options.log ??
      ((record) => console.error(JSON.stringify(record)));
  }

  reserve(callerId: string, amountMicros: number): Promise<ReserveResult> {
    assertMicros("reservation amount", amountMicros);
    return this.#submit<ReserveResult>(
      callerId,
      (done) => ({ kind: "reserve", amountMicros, done }),
    ).then(unwrap);
  }

  settle(settlement: Settlement): Promise<{ balanceMicros: number }> {
    assertMicros("cost", settlement.costMicros);
    return this.#submitSettle(settlement, 0).then(unwrap);
  }

  settleSoon(settlement: Settlement): { balanceMicros: number } {
    assertMicros("cost", settlement.costMicros);
    const { reservation, costMicros } = settlement;
    const lane = this.#lane(reservation.callerId);
    // The balance once everything this process queued has committed; the
    // hold comes back and the cost goes out, never below zero, as in #attempt.
    const before = (lane.knownMicros ?? 0) + lane.pendingDeltaMicros;
    const delta = reservation.amountMicros -
      Math.min(costMicros, before + reservation.amountMicros);
    lane.pendingDeltaMicros += delta;
    const done = this.#settleBehind(lane, settlement, delta);
    this.#behind.add(done);
    done.finally(() => this.#behind.delete(done));
    return { balanceMicros: before + delta };
  }

  async flush(): Promise<void> {
    // Also waits for awaited operations still queued (a stream settling as
    // the server shuts down), so the KV can be closed after it.
    while (this.#behind.size > 0 || this.#drains.size > 0) {
      await Promise.all([...this.#behind, ...this.#drains]);
    }
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

  async #settleBehind(
    lane: Lane,
    settlement: Settlement,
    delta: number,
  ): Promise<void> {
    const { reservation } = settlement;
    for (let round = 1;; round++) {
      const outcome = await this.#submitSettle(settlement, delta);
      if (outcome.ok) return;
      if (outcome.final || round >= SETTLE_SOON_ROUNDS) {
        // Committed batches drop their deltas themselves; this one never will.
        if (!outcome.final) lane.pendingDeltaMicros -= delta;
        this.#log({
          level: "error",
          message:
            `Settling reservation "${reservation.id}" failed; the sweep will release it: ${outcome.error}`,
          requestId: settlement.trace.requestId,
          callerId: reservation.callerId,
        });
        return;
      }
    }
  }

  #submitSettle(
    settlement: Settlement,
    projectedDeltaMicros: number,
  ): Promise<Outcome<{ balanceMicros: number }>> {
    const bytes = SETTLE_BYTES + 2 * JSON.stringify(settlement.trace).length;
    return this.#submit(
      settlement.reservation.callerId,
      (done) => ({
        kind: "settle",
        settlement,
        projectedDeltaMicros,
        bytes,
        done,
      }),
    );
  }

  #lane(callerId: string): Lane {
    let lane = this.#lanes.get(callerId);
    if (!lane) {
      lane = { jobs: [], draining: false, pendingDeltaMicros: 0 };
      this.#lanes.set(callerId, lane);
    }
    return lane;
  }

  #submit<T>(
    callerId: string,
    job: (done: (outcome: Outcome<T>) => void) => Job,
  ): Promise<Outcome<T>> {
    const lane = this.#lane(callerId);
    const { promise, resolve } = Promise.withResolvers<Outcome<T>>();
    lane.jobs.push(job(resolve));
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
   * One read-check-commit round for a batch: reads the balance once (and the
   * reservations being settled), applies the jobs in order to a running
   * balance exactly as one-at-a-time commits would, and writes the balance
   * once with a check on what was read. Returns `null` when the commit lost.
   */
  async #attempt(
    callerId: string,
    lane: Lane,
    batch: readonly Job[],
    trustRemembered: boolean,
  ): Promise<Outcome<unknown>[] | null> {
    const settleIds = batch.flatMap((job) =>
      job.kind === "settle" ? [job.settlement.reservation.id] : []
    );
    const stored = new Map<string, Deno.KvEntryMaybe<ReservationRecord>>();
    const unread: string[] = [];
    for (const id of settleIds) {
      const remembered = trustRemembered ? this.#opened.get(id) : undefined;
      if (remembered) stored.set(id, remembered);
      else unread.push(id);
    }
    const [balance, ...reads] = await Promise.all([
      this.#kv.get<number>(balanceKey(callerId)),
      ...chunks(unread, 10).map((ids) =>
        this.#kv.getMany<ReservationRecord[]>(ids.map(reservationKey))
      ),
    ]);
    for (const entry of reads.flat()) stored.set(entry.key[1] as string, entry);
    const opened: ReservationRecord[] = [];
    const closing = new Set<string>();
    let available = balance.value ?? 0;
    let writes = 0;
    const op = this.#kv.atomic().check(balance);
    const outcomes = batch.map((job): Outcome<unknown> => {
      switch (job.kind) {
        case "balance":
          return { ok: true, value: available };
        case "reserve": {
          if (balance.value === null || available < job.amountMicros) {
            return { ok: true, value: { ok: false, balanceMicros: available } };
          }
          available -= job.amountMicros;
          writes++;
          return {
            ok: true,
            value: this.#addReserve(
              op,
              callerId,
              job.amountMicros,
              available,
              opened,
            ),
          };
        }
        case "settle": {
          const entry = stored.get(job.settlement.reservation.id)!;
          const refusal = settleRefusal(
            job.settlement.reservation,
            entry.value,
            closing,
          );
          if (refusal) return { ok: false, error: refusal, final: true };
          closing.add(entry.key[1] as string);
          const held = entry.value!.state === "open"
            ? entry.value!.amountMicros
            : 0;
          // A call can cost more than was reserved (the estimate was low); the
          // balance never goes below zero, so the charge stops at what is there.
          const charged = Math.min(job.settlement.costMicros, available + held);
          available += held - charged;
          writes++;
          this.#addSettle(
            op,
            entry as Deno.KvEntry<ReservationRecord>,
            job.settlement,
            charged,
          );
          return { ok: true, value: { balanceMicros: available } };
        }
      }
    });
    if (writes > 0) {
      op.set(balanceKey(callerId), available);
      const committed = await op.commit();
      if (!committed.ok) return null;
      for (const id of settleIds) this.#opened.delete(id);
      for (const record of opened) {
        if (this.#opened.size >= MAX_REMEMBERED_RESERVATIONS) break;
        this.#opened.set(record.id, {
          key: reservationKey(record.id),
          value: record,
          versionstamp: committed.versionstamp,
        });
      }
    }
    // Synchronously with the new balance, so settleSoon never counts a
    // committed settle twice.
    lane.knownMicros = available;
    for (const job of batch) {
      if (job.kind === "settle") {
        lane.pendingDeltaMicros -= job.projectedDeltaMicros;
      }
    }
    return outcomes;
  }

  #addReserve(
    op: Deno.AtomicOperation,
    callerId: string,
    amountMicros: number,
    remaining: number,
    opened: ReservationRecord[],
  ): ReserveResult {
    const now = this.#now();
    const record: ReservationRecord = {
      id: randomId("rs_", 16),
      callerId,
      amountMicros,
      createdAt: now,
      expiresAt: now + this.#reservationTtlMs,
      state: "open",
    };
    op.check({ key: reservationKey(record.id), versionstamp: null })
      .set(reservationKey(record.id), record)
      .set(reservationExpiryKey(record.expiresAt, record.id), record.id);
    opened.push(record);
    return {
      ok: true,
      reservation: { id: record.id, callerId, amountMicros },
      balanceMicros: remaining,
    };
  }

  #addSettle(
    op: Deno.AtomicOperation,
    stored: Deno.KvEntry<ReservationRecord>,
    settlement: Settlement,
    charged: number,
  ): void {
    const { usage, trace } = settlement;
    const record = stored.value;
    const time = this.#now();
    const entry: LedgerEntry = {
      id: monotonicId(time),
      callerId: record.callerId,
      kind: "charge",
      amountMicros: -charged,
      time,
      costMicros: settlement.costMicros,
      requestId: trace.requestId,
      traceId: trace.traceId,
      reservationId: record.id,
      model: trace.model,
      route: trace.route,
      provider: trace.provider,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      cachedTokens: usage.cachedInputTokens,
    };
    op.check(stored)
      .set(reservationKey(record.id), { ...record, state: "settled" }, {
        expireIn: this.#closedRetentionMs,
      });
    // A failed call that cost nothing moved no money: its trace records it,
    // and the ledger keeps to charges (no entry for a refused call).
    if (charged > 0 || settlement.costMicros > 0 || trace.status < 400) {
      op.set(ledgerKey(record.callerId, entry.id), entry);
    }
    if (record.state === "open") {
      op.delete(reservationExpiryKey(record.expiresAt, record.id));
    }
    addTraceWrites(op, {
      ...trace,
      callerId: record.callerId,
      costMicros: charged,
    }, {
      retentionMs: this.#traceRetentionMs,
    });
  }
}

/**
 * Why a reservation cannot be settled, or `undefined` when it can.
 * `closing` holds the ids already settled earlier in the same batch.
 */
function settleRefusal(
  reservation: Reservation,
  record: ReservationRecord | null,
  closing: ReadonlySet<string>,
): Error | undefined {
  const cannot = `Cannot settle reservation "${reservation.id}"`;
  if (record === null) return new Error(`${cannot}: it is unknown`);
  if (record.callerId !== reservation.callerId) {
    return new Error(
      `${cannot}: it belongs to "${record.callerId}", not "${reservation.callerId}"`,
    );
  }
  if (record.state === "settled" || closing.has(record.id)) {
    return new Error(`${cannot}: it is already settled`);
  }
  return undefined;
}

function unwrap<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.value;
  throw outcome.error;
}

/**
 * Creates the KV-backed {@linkcode Billing} the gateway calls on every request.
 * Create one per process and share it: it queues each caller's operations and
 * commits those that waited together, in one atomic per batch.
 *
 * @param kv The gateway's KV.
 * @param options Reservation lifetime, trace retention, clock, log sink.
 * @returns The billing store.
 */
export function createBilling(
  kv: Deno.Kv,
  options: BillingOptions = {},
): Billing {
  return new KvBilling(kv, options);
}

/**
 * A caller's spendable balance: what is left after open reservations.
 *
 * @param kv The gateway's KV.
 * @param callerId The caller's id.
 * @returns Micro-USD; 0 for an unknown caller.
 */
export async function balance(kv: Deno.Kv, callerId: string): Promise<number> {
  return (await kv.get<number>(balanceKey(callerId))).value ?? 0;
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
 * fails instead, so no entry half-applies and the ledger stays exact.
 *
 * @param kv The gateway's KV.
 * @param callerId The caller's id.
 * @param amountMicros Signed amount, integer micro-USD.
 * @param now Epoch ms of the entry; defaults to now.
 * @returns The new balance, micro-USD.
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
    const committed = await kv.atomic()
      .check(caller, current)
      .set(balanceKey(callerId), next)
      .set(ledgerKey(callerId, entry.id), entry)
      .commit();
    return committed.ok ? next : null;
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
  /** How many reservations were released. */
  released: number;
  /** How much they held, micro-USD, now back in the balances. */
  releasedMicros: number;
}

/**
 * Releases reservations that expired before `now`: left open by a process
 * that crashed or hung between reserve and settle. Each release checks the
 * reservation's versionstamp, so a settle committing at the same moment wins
 * and the money is never returned twice. A settle arriving after the release
 * still charges its cost from the balance. Run it periodically (e.g. every
 * minute) in every gateway process; concurrent sweeps are safe.
 *
 * @param kv The gateway's KV.
 * @param now Epoch ms; reservations with an earlier expiry are released.
 * @param options `closedReservationRetentionMs`: how long the released reservation is remembered.
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
  const expired = kv.list<string>({
    prefix: reservationExpiryPrefix(),
    end: reservationExpiryEnd(now),
  });
  for await (const indexEntry of expired) {
    const reservationId = indexEntry.value;
    const released = await commitWithRetry(
      `release of reservation "${reservationId}"`,
      async () => {
        const stored = await kv.get<ReservationRecord>(
          reservationKey(reservationId),
        );
        const record = stored.value;
        if (record === null || record.state !== "open") {
          // Settled or released meanwhile; only the index entry is left over.
          const cleaned = await kv.atomic().check(stored).delete(indexEntry.key)
            .commit();
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
    );
    if (released !== false) {
      result.released++;
      result.releasedMicros += released;
    }
  }
  return result;
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

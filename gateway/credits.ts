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
 * release, debit, ledger entry and trace together).
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
}

function assertMicros(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(
      `Invalid ${name} "${value}": expected a non-negative integer of micro-USD`,
    );
  }
}

/** {@linkcode Billing} over Deno KV. */
class KvBilling implements Billing {
  readonly #kv: Deno.Kv;
  readonly #reservationTtlMs: number;
  readonly #closedRetentionMs: number;
  readonly #traceRetentionMs: number | undefined;
  readonly #now: () => number;
  // One promise chain per caller: in-process concurrency queues instead of
  // colliding in KV and burning commit retries; conflicts with other
  // processes still retry with jittered backoff.
  readonly #chains = new Map<string, Promise<void>>();

  constructor(kv: Deno.Kv, options: BillingOptions) {
    this.#kv = kv;
    this.#reservationTtlMs = options.reservationTtlMs ??
      DEFAULT_RESERVATION_TTL_MS;
    this.#closedRetentionMs = options.closedReservationRetentionMs ??
      DEFAULT_CLOSED_RESERVATION_RETENTION_MS;
    this.#traceRetentionMs = options.traceRetentionMs;
    this.#now = options.now ?? Date.now;
  }

  #serialise<T>(callerId: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#chains.get(callerId) ?? Promise.resolve();
    const run = previous.then(task);
    const tail = run.then(() => {}, () => {});
    this.#chains.set(callerId, tail);
    tail.then(() => {
      if (this.#chains.get(callerId) === tail) this.#chains.delete(callerId);
    });
    return run;
  }

  reserve(callerId: string, amountMicros: number): Promise<ReserveResult> {
    assertMicros("reservation amount", amountMicros);
    return this.#serialise(
      callerId,
      () =>
        commitWithRetry(`reservation for caller "${callerId}"`, async () => {
          const balance = await this.#kv.get<number>(balanceKey(callerId));
          const available = balance.value ?? 0;
          if (balance.value === null || available < amountMicros) {
            return { ok: false, balanceMicros: available } as const;
          }
          const now = this.#now();
          const record: ReservationRecord = {
            id: randomId("rs_", 16),
            callerId,
            amountMicros,
            createdAt: now,
            expiresAt: now + this.#reservationTtlMs,
            state: "open",
          };
          const remaining = available - amountMicros;
          const committed = await this.#kv.atomic()
            .check(balance)
            .check({ key: reservationKey(record.id), versionstamp: null })
            .set(balanceKey(callerId), remaining)
            .set(reservationKey(record.id), record)
            .set(reservationExpiryKey(record.expiresAt, record.id), record.id)
            .commit();
          if (!committed.ok) return null;
          return {
            ok: true,
            reservation: { id: record.id, callerId, amountMicros },
            balanceMicros: remaining,
          } as const;
        }),
    );
  }

  settle(settlement: Settlement): Promise<{ balanceMicros: number }> {
    const { reservation, usage, trace } = settlement;
    assertMicros("cost", settlement.costMicros);
    return this.#serialise(
      reservation.callerId,
      () =>
        commitWithRetry(
          `settlement of reservation "${reservation.id}"`,
          async () => {
            const [stored, balance] = await this.#kv.getMany<
              [ReservationRecord, number]
            >([
              reservationKey(reservation.id),
              balanceKey(reservation.callerId),
            ]);
            const record = stored.value;
            if (record === null) {
              throw new Error(
                `Cannot settle reservation "${reservation.id}": it is unknown`,
              );
            }
            if (record.callerId !== reservation.callerId) {
              throw new Error(
                `Cannot settle reservation "${reservation.id}": it belongs to "${record.callerId}", not "${reservation.callerId}"`,
              );
            }
            if (record.state === "settled") {
              throw new Error(
                `Cannot settle reservation "${reservation.id}": it is already settled`,
              );
            }
            // An expired reservation was already returned to the balance by the
            // sweep, so the cost comes from the balance alone.
            const held = record.state === "open" ? record.amountMicros : 0;
            const available = (balance.value ?? 0) + held;
            // A call can cost more than was reserved (the estimate was low); the
            // balance never goes below zero, so the charge stops at what is there.
            const charged = Math.min(settlement.costMicros, available);
            const remaining = available - charged;
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
            const op = this.#kv.atomic()
              .check(stored, balance)
              .set(balanceKey(record.callerId), remaining)
              .set(reservationKey(record.id), { ...record, state: "settled" }, {
                expireIn: this.#closedRetentionMs,
              })
              .set(ledgerKey(record.callerId, entry.id), entry);
            if (record.state === "open") {
              op.delete(
                reservationExpiryKey(record.expiresAt, record.id),
              );
            }
            const traced: TraceRecord = {
              ...trace,
              callerId: record.callerId,
              costMicros: charged,
            };
            addTraceWrites(op, traced, { retentionMs: this.#traceRetentionMs });
            const committed = await op.commit();
            return committed.ok ? { balanceMicros: remaining } : null;
          },
        ),
    );
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
    return balance(this.#kv, callerId);
  }
}

/**
 * Creates the KV-backed {@linkcode Billing} the gateway calls on every request.
 * Create one per process and share it: it queues each caller's operations so
 * they do not collide with each other.
 *
 * @param kv The gateway's KV.
 * @param options Reservation lifetime, trace retention, clock.
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

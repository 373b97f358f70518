/**
 * What KV records of a caller's money: the ledger (one entry per charge or
 * top-up), the unleased credits and the leases, and the reads and admin
 * writes over them.
 *
 * A caller's **balance** is the sum of their ledger entries. It always equals
 * their unleased credits plus what the leases of gateway processes hold for
 * them (every commit keeps it so), and it is the one number the admin API,
 * the CLI and `GET /credits` show. A balance below zero is a debt: settlement
 * charges the full cost of a call even when its reservation underestimated it.
 *
 * @module
 */
import { monotonicId } from "../../_ids.ts";
import { retry, RetryError } from "../../../_retry.ts";
import { commitWithRetry } from "../_kv_retry.ts";
import {
  callerKey,
  leasesPrefix,
  ledgerKey,
  ledgerPrefix,
  unleasedKey,
} from "../kv_keys.ts";
import type { ProviderName } from "../../upstream/providers/mod.ts";
import type { RouteName } from "../../conventions.ts";
import { assertMicros, MAX_BALANCE_MICROS } from "./money.ts";

/**
 * A top-up or opening balance that would leave the range balances are kept
 * in: below zero by a removal, or above {@linkcode MAX_BALANCE_MICROS}. The
 * admin API answers it with 400.
 *
 * @example
 * ```ts
 * import { BalanceRangeError, topUp } from "./ledger.ts";
 * import { createCaller } from "../callers.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const caller = await createCaller(kv, { name: "a", creditsMicros: 100 });
 * try {
 *   await topUp(kv, caller.id, -101);
 * } catch (error) {
 *   console.log(error instanceof BalanceRangeError); // true
 * }
 * kv.close();
 * ```
 */
export class BalanceRangeError extends Error {
  /**
   * Creates the error.
   *
   * @param message What was refused and why.
   */
  constructor(message: string) {
    super(message);
    this.name = "BalanceRangeError";
  }
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
  /** For charges: output tokens. */
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
  /** Amount held, micro-USD: the reservations taken from it plus its free part. */
  amountMicros: number;
  /** Epoch ms it was opened. */
  createdAt: number;
  /** Epoch ms after which the sweep returns it; every commit that changes it renews it. */
  expiresAt: number;
}

/**
 * A caller's balance: their unleased credits plus every lease's amount, read
 * so that money moving between the two during the read is counted once.
 *
 * @example
 * ```ts
 * import { readBalance } from "./ledger.ts";
 * import { createCaller } from "../callers.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const caller = await createCaller(kv, { name: "a", creditsMicros: 5_000_000 });
 * await readBalance(kv, caller.id); // 5_000_000
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @param callerId The caller's id.
 * @returns Micro-USD (negative: a debt); 0 for an unknown caller.
 */
export async function readBalance(
  kv: Deno.Kv,
  callerId: string,
): Promise<number> {
  // A lease grows or returns only together with the unleased credits: when
  // their versionstamp did not move during the lease read, no money moved.
  // After five reads that each saw money move, the last one's sum is kept.
  let balance = 0;
  try {
    return await retry(async () => {
      const before = await kv.get<number>(unleasedKey(callerId));
      const leased = await leasedMicros(kv, callerId);
      const after = await kv.get<number>(unleasedKey(callerId));
      balance = (after.value ?? 0) + leased;
      if (before.versionstamp !== after.versionstamp) throw new MoneyMoved();
      return balance;
    }, {
      maxAttempts: BALANCE_READS,
      minTimeout: 0,
      isRetriable: (error) => error instanceof MoneyMoved,
    });
  } catch (error) {
    if (error instanceof RetryError) return balance;
    throw error;
  }
}

/** Reads of a balance before the last one's sum is taken as it is. */
const BALANCE_READS = 5;

/** A balance read during which money moved between the unleased credits and a lease. */
class MoneyMoved extends Error {
  constructor() {
    super(
      "Money moved between the unleased credits and a lease during the read",
    );
    this.name = "MoneyMoved";
  }
}

/**
 * A caller's unleased credits: the balance less what leases hold.
 *
 * @example
 * ```ts
 * import { readUnleased } from "./ledger.ts";
 * import { createCaller } from "../callers.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const caller = await createCaller(kv, { name: "a", creditsMicros: 5_000 });
 * await readUnleased(kv, caller.id); // 5_000: no gateway process holds a lease yet
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @param callerId The caller's id.
 * @returns Micro-USD; 0 for an unknown caller.
 */
export async function readUnleased(
  kv: Deno.Kv,
  callerId: string,
): Promise<number> {
  return (await kv.get<number>(unleasedKey(callerId))).value ?? 0;
}

/**
 * A caller's leases: money gateway processes hold to take reservations from.
 *
 * @example
 * ```ts
 * import { listLeases } from "./ledger.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * await listLeases(kv, "ck_1"); // []
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @param callerId The caller's id.
 * @returns The leases.
 */
export async function listLeases(
  kv: Deno.Kv,
  callerId: string,
): Promise<LeaseRecord[]> {
  const leases: LeaseRecord[] = [];
  const entries = kv.list<LeaseRecord>({ prefix: leasesPrefix(callerId) });
  for await (const entry of entries) leases.push(entry.value);
  return leases;
}

async function leasedMicros(kv: Deno.Kv, callerId: string): Promise<number> {
  const leases = await listLeases(kv, callerId);
  return leases.reduce((sum, lease) => sum + lease.amountMicros, 0);
}

/**
 * Adds the writes that open a new caller's balance to an atomic operation:
 * the unleased credits and, for a non-zero amount, its `topup` ledger entry.
 * Used by `createCaller` so the caller and its credits appear in one commit.
 *
 * @example
 * ```ts
 * import { addOpeningBalanceWrites, readBalance } from "./ledger.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * await addOpeningBalanceWrites(kv.atomic(), "ck_1", 2_000, Date.now()).commit();
 * await readBalance(kv, "ck_1"); // 2_000
 * kv.close();
 * ```
 *
 * @param op The atomic operation to extend.
 * @param callerId The new caller's id.
 * @param amountMicros Opening credits, micro-USD.
 * @param time Epoch ms.
 * @returns The same operation.
 * @throws {RangeError} When the amount is negative or fractional.
 * @throws {BalanceRangeError} When the amount is above {@linkcode MAX_BALANCE_MICROS}.
 */
export function addOpeningBalanceWrites(
  op: Deno.AtomicOperation,
  callerId: string,
  amountMicros: number,
  time: number,
): Deno.AtomicOperation {
  assertMicros("opening credits", amountMicros);
  assertWithinMaximum(amountMicros);
  op.check({ key: unleasedKey(callerId), versionstamp: null }).set(
    unleasedKey(callerId),
    amountMicros,
  );
  if (amountMicros === 0) return op;
  const entry = topUpEntry(callerId, amountMicros, time);
  return op.set(ledgerKey(callerId, entry.id), entry);
}

function topUpEntry(
  callerId: string,
  amountMicros: number,
  time: number,
): LedgerEntry {
  return { id: monotonicId(time), callerId, kind: "topup", amountMicros, time };
}

function assertWithinMaximum(balanceMicros: number): void {
  if (balanceMicros > MAX_BALANCE_MICROS) {
    throw new BalanceRangeError(
      `A balance of "${balanceMicros}" micro-USD is above the maximum of "${MAX_BALANCE_MICROS}" (1 billion USD)`,
    );
  }
}

/**
 * Adds credits to a caller's balance, or removes them with a negative amount
 * (an admin correction). A removal takes only unleased credits and never
 * below zero; a result above {@linkcode MAX_BALANCE_MICROS} is refused. Either
 * way nothing half-applies and the ledger stays exact. Leases return within a
 * second of the caller's last call, so a removal refused for what they hold
 * can be tried again a moment later.
 *
 * @example
 * ```ts
 * import { topUp } from "./ledger.ts";
 * import { createCaller } from "../callers.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const caller = await createCaller(kv, { name: "a", creditsMicros: 1_000 });
 * await topUp(kv, caller.id, 500); // 1_500
 * await topUp(kv, caller.id, -200); // 1_300
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @param callerId The caller's id.
 * @param amountMicros Signed amount, integer micro-USD.
 * @param now Epoch ms of the entry; defaults to now.
 * @returns The caller's balance afterwards, micro-USD.
 * @throws {Deno.errors.NotFound} When the caller does not exist (or was revoked).
 * @throws {BalanceRangeError} When the amount is not an integer, would take the unleased credits below zero, or the balance above the maximum.
 */
export async function topUp(
  kv: Deno.Kv,
  callerId: string,
  amountMicros: number,
  now: number = Date.now(),
): Promise<number> {
  if (
    !Number.isSafeInteger(amountMicros) ||
    Math.abs(amountMicros) > MAX_BALANCE_MICROS
  ) {
    throw new BalanceRangeError(
      `Invalid top-up amount "${amountMicros}": expected an integer of micro-USD of at most "${MAX_BALANCE_MICROS}" either way`,
    );
  }
  return await commitWithRetry(`top-up for caller "${callerId}"`, async () => {
    const [caller, current] = await kv.getMany<[unknown, number]>([
      callerKey(callerId),
      unleasedKey(callerId),
    ]);
    if (caller.value === null) {
      throw new Deno.errors.NotFound(`Caller "${callerId}" not found`);
    }
    const unleased = current.value ?? 0;
    const next = unleased + amountMicros;
    if (amountMicros < 0 && next < 0) {
      throw new BalanceRangeError(
        `Cannot remove "${-amountMicros}" micro-USD from caller "${callerId}": the unleased credits are "${unleased}"`,
      );
    }
    // A lease that grows or returns meanwhile moves the unleased credits,
    // so the check fails and this reads again.
    const leased = await leasedMicros(kv, callerId);
    assertWithinMaximum(next + leased);
    const entry = topUpEntry(callerId, amountMicros, now);
    const committed = await kv.atomic()
      .check(caller, current)
      .set(unleasedKey(callerId), next)
      .set(ledgerKey(callerId, entry.id), entry)
      .commit();
    return committed.ok ? next + leased : null;
  });
}

/**
 * Lists a caller's ledger entries, newest first.
 *
 * @example
 * ```ts
 * import { listLedger, topUp } from "./ledger.ts";
 * import { createCaller } from "../callers.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const caller = await createCaller(kv, { name: "a", creditsMicros: 1_000 });
 * await topUp(kv, caller.id, 500);
 * const entries = await listLedger(kv, caller.id);
 * entries.map((entry) => entry.amountMicros); // [500, 1_000]
 * kv.close();
 * ```
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

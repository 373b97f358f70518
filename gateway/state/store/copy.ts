/**
 * Moving an installation from a Deno KV file to PostgreSQL: every record,
 * with the money exact. Run it with every gateway on the KV file stopped: a
 * live settlement journal beside the file refuses the copy, a crashed
 * gateway's journal is replayed into the source first, and each caller's
 * ledger is checked against their balance on both sides, and the source's
 * money before the copy against after it (a source that moved is no
 * snapshot, and the copy fails).
 *
 * Leases are not copied as leases: a lease is money a running process held,
 * and no process holds it after the move, so its amount goes back into the
 * caller's unleased credits in the copy (the balance, ledger sum and both
 * sides of `sum(ledger) == unleased + leases` stay as they were). Records
 * that expire in KV (traces, limit counters, provider key windows and
 * cool-downs) get the expiry their writer gives them, counted from the
 * record's own time; those already past it are not copied.
 *
 * @module
 */
import { readBalance } from "../credits/ledger.ts";
import { listCallers } from "../callers.ts";
import { DEFAULT_TRACE_RETENTION_MS } from "../traces.ts";
import {
  leasesPrefix,
  ledgerPrefix,
  tableOf,
  unleasedKey,
} from "../kv_keys.ts";
import { liveJournals, replayJournals } from "../credits/journal.ts";
import type { LeaseRecord } from "../credits/ledger.ts";
import type { PostgresKv } from "./postgres.ts";

/** What a copy moved. */
export interface CopyReport {
  /** Records written. */
  records: number;
  /** Callers whose balances were checked equal on both sides. */
  callers: number;
  /** Leases folded back into unleased credits. */
  leasesFolded: number;
  /** Micro-USD those leases held. */
  leasedMicros: number;
}

/** Options of {@linkcode copyKvToPostgres}. */
export interface CopyOptions {
  /** Copy even when a lease has not expired (a gateway may still be running on the KV file). */
  force?: boolean;
  /** The clock, epoch ms. */
  now?: number;
  /** The source's settlement journal directory (`journalDirFor`): a live journal refuses the copy, a dead one's charges are replayed into the source first. */
  journalDir?: string;
}

/** One caller's money as a side holds it: for checking the ledger against the balance, and the source against itself. */
interface Money {
  /** Ledger entries. */
  entries: number;
  /** Their sum, micro-USD. */
  ledger: number;
  /** The balance: unleased credits plus leases, micro-USD. */
  balance: number;
}

/** A caller's ledger and balance on one side. */
async function moneyOf(kv: Deno.Kv, callerId: string): Promise<Money> {
  let entries = 0;
  let ledger = 0;
  for await (
    const entry of kv.list<{ amountMicros: number }>({
      prefix: ledgerPrefix(callerId),
    })
  ) {
    entries++;
    ledger += entry.value.amountMicros;
  }
  return { entries, ledger, balance: await readBalance(kv, callerId) };
}

/** Every caller's money on the source, checked ledger against balance. */
async function sourceMoney(kv: Deno.Kv): Promise<Map<string, Money>> {
  const money = new Map<string, Money>();
  for (const caller of await listCallers(kv)) {
    const side = await moneyOf(kv, caller.id);
    if (side.ledger !== side.balance) {
      throw new Error(
        `Caller "${caller.id}" has a ledger summing to ${side.ledger} micro-USD but a balance of ${side.balance} in the source: refusing to copy money that does not add up`,
      );
    }
    money.set(caller.id, side);
  }
  return money;
}

/** Writes per commit. */
const BATCH = 200;
const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/**
 * Copies every record of a KV store into an empty PostgreSQL store and checks
 * each caller's balance on both sides.
 *
 * @param kv The source KV (stop every gateway using it first).
 * @param target The PostgreSQL store; it must be empty.
 * @param options `force` past an unexpired lease; the clock.
 * @returns What was copied.
 * @throws {Error} When the target is not empty, a lease is still live (without `force`), or a balance differs after the copy.
 */
export async function copyKvToPostgres(
  kv: Deno.Kv,
  target: PostgresKv,
  options: CopyOptions = {},
): Promise<CopyReport> {
  const now = options.now ?? Date.now();
  if (!await target.isEmpty()) {
    throw new Error(
      "The target PostgreSQL store is not empty: refusing to overwrite it (copy into a new database)",
    );
  }
  if (options.journalDir) {
    const live = await liveJournals(options.journalDir, now);
    if (live.length > 0) {
      throw new Error(
        `A gateway has this KV open (its settlement journal ${
          live[0]
        } is live in ${options.journalDir}): stop every gateway first`,
      );
    }
    // Charges a crashed gateway answered but never committed belong in the copy.
    await replayJournals(kv, options.journalDir, { now });
  }
  // Before and after: a source that moved during the copy is no snapshot.
  const before = await sourceMoney(kv);
  const folded = new Map<string, number>();
  let leasesFolded = 0;
  let leasedMicros = 0;
  for await (const entry of kv.list<LeaseRecord>({ prefix: leasesPrefix() })) {
    const lease = entry.value;
    if (lease.expiresAt > now && !options.force) {
      throw new Error(
        `Caller "${lease.callerId}" has a lease that has not expired: a gateway may still be running on this KV. Stop every gateway first (a stopped gateway returns its leases), or pass --force when the lease belongs to a crashed one`,
      );
    }
    folded.set(
      lease.callerId,
      (folded.get(lease.callerId) ?? 0) + lease.amountMicros,
    );
    leasesFolded++;
    leasedMicros += lease.amountMicros;
  }

  // The trace index holds no record: it expires with the trace its key
  // names, listed just before it ("traces" sorts before "traces_by_…").
  const traceExpiry = new Map<string, number>();
  let records = 0;
  let op = target.atomic();
  let pending = 0;
  const flush = async () => {
    if (pending === 0) return;
    const committed = await op.commit();
    if (!committed.ok) throw new Error("Copy commit refused by the target");
    op = target.atomic();
    pending = 0;
  };
  for await (const entry of kv.list({ prefix: [] })) {
    const table = tableOf(entry.key);
    if (table === "leases") continue;
    let value = entry.value;
    if (table === "unleased") {
      value = (value as number) + (folded.get(entry.key[1] as string) ?? 0);
      folded.delete(entry.key[1] as string);
    }
    const expireAt = expiryOf(entry.key, entry.value, traceExpiry);
    if (expireAt !== undefined && expireAt <= now) continue;
    op.set(
      entry.key,
      value,
      expireAt === undefined ? undefined : { expireIn: expireAt - now },
    );
    records++;
    if (++pending >= BATCH) await flush();
  }
  // A lease whose caller had no unleased record (none is ever written
  // without one, but the money must not vanish if it were).
  for (const [callerId, amount] of folded) {
    op.set(unleasedKey(callerId), amount);
    records++;
    pending++;
  }
  await flush();

  const after = await sourceMoney(kv);
  for (const [callerId, money] of after) {
    const was = before.get(callerId);
    if (
      !was || was.entries !== money.entries || was.ledger !== money.ledger ||
      was.balance !== money.balance
    ) {
      throw new Error(
        `Caller "${callerId}"'s money moved in the source during the copy (a gateway is still writing to it): the copy is not a snapshot; stop every gateway and copy again into a new database`,
      );
    }
  }
  for (const [callerId, money] of before) {
    const copied = await moneyOf(target, callerId);
    if (
      copied.entries !== money.entries || copied.ledger !== money.ledger ||
      copied.balance !== money.balance || copied.ledger !== copied.balance
    ) {
      throw new Error(
        `Caller "${callerId}" has ${money.entries} ledger entries summing to ${money.ledger} micro-USD and a balance of ${money.balance} in KV, but ${copied.entries} entries summing to ${copied.ledger} and a balance of ${copied.balance} in PostgreSQL after the copy`,
      );
    }
  }
  return { records, callers: before.size, leasesFolded, leasedMicros };
}

/** When a KV record expires, as its writer sets it; `undefined` for never. */
function expiryOf(
  key: Deno.KvKey,
  value: unknown,
  traceExpiry: Map<string, number>,
): number | undefined {
  const table = tableOf(key);
  if (table === "traces") {
    const time = (value as { time?: number } | null)?.time;
    if (typeof time !== "number") return undefined;
    const expireAt = time + DEFAULT_TRACE_RETENTION_MS;
    traceExpiry.set(`${String(key[1])}/${String(key[2])}`, expireAt);
    return expireAt;
  }
  if (table === "traces_by_trace_id") {
    return traceExpiry.get(`${String(key[1])}/${String(key[3])}`);
  }
  if (table === "limit_minute" || table === "provider_key_window") {
    return (key[2] as number) + 2 * MINUTE_MS;
  }
  if (table === "provider_key_health") {
    return (value as { coolUntil?: number } | null)?.coolUntil;
  }
  if (table === "response_pins") {
    return (value as { expiresAt?: number } | null)?.expiresAt;
  }
  // A period is at most a month: 31 days, plus the day its writer keeps.
  if (table === "limit_spend") return (key[2] as number) + 32 * DAY_MS;
  return undefined;
}

/**
 * The settlement journal: every charge of an answered call written to a
 * local file before its commit to the store is even queued, and marked done
 * once it committed. A charge the store never took (the database down for
 * longer than the process lived, the process killed with SIGKILL while its
 * charges waited) stays in the file; {@linkcode replayJournals} charges it
 * later, from this process or any other that shares the directory, and
 * gives the dead process's leases back at once rather than after their
 * expiry.
 *
 * A charge is one ledger key (`Settlement.chargeId`), so a replay of one
 * that did commit (the process died between the commit and its "done" line)
 * finds it and writes nothing: charged once, never twice.
 *
 * The file is written with plain `write(2)`, no `fsync`: what a process
 * wrote is the kernel's the moment the call returns, so it survives the
 * process being killed; it does not survive the machine losing power.
 *
 * Which journals are dead: the file is named after its host and process id;
 * on that host a process id `/proc` no longer lists is gone. Elsewhere, each
 * process touches its own file every {@linkcode JOURNAL_HEARTBEAT_MS}, and a
 * file nobody touched for {@linkcode JOURNAL_DEAD_AFTER_MS} belongs to a
 * process that is gone.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { dirname, join, resolve } from "node:path";
import { timeOrderedId } from "../../_ids.ts";
import { commitWithRetry } from "../_kv_retry.ts";
import { leaseKey, ledgerKey, unleasedKey } from "../kv_keys.ts";
import { addTraceWrites, type TraceRecord } from "../traces.ts";
import { UsageSums } from "../usage_buckets.ts";
import type { Usage } from "../../upstream/usage.ts";
import { chargeEntry } from "./_commit.ts";
import type { LeaseRecord } from "./ledger.ts";

/** How often a living process touches its journal, ms. */
export const JOURNAL_HEARTBEAT_MS = 5_000;

/** How long a journal nobody touched is taken for a dead process's, ms. */
export const JOURNAL_DEAD_AFTER_MS = 60_000;

/** A journal past this size with nothing pending starts again empty, bytes. */
const COMPACT_BYTES = 1024 * 1024;

/** One charge as the journal keeps it. */
export interface JournalCharge {
  /** The ledger entry's id. */
  chargeId: string;
  /** Whose balance it charges. */
  callerId: string;
  /** The reservation it closes. */
  reservationId: string;
  /** The lease the reservation was taken from, if any. */
  leaseId?: string;
  /** The cost, micro-USD. */
  costMicros: number;
  /** The usage behind it. */
  usage: Usage;
  /** The call's trace record. */
  trace: TraceRecord;
  /** Epoch ms it was journaled. */
  time: number;
}

/** One line of a journal. */
type JournalLine =
  | { charge: JournalCharge }
  | { done: string }
  | { lease: { callerId: string; leaseId: string } };

/**
 * A process's own journal: one file in the journal directory, appended to
 * synchronously (the charge is in the kernel before the call's answer goes
 * out).
 *
 * @example
 * ```ts ignore
 * import { SettleJournal } from "./journal.ts";
 *
 * const journal = await SettleJournal.open("./data/journal");
 * journal.record(charge); // before the charge is queued
 * journal.done(charge.chargeId); // once it committed
 * journal.close();
 * ```
 */
export class SettleJournal {
  readonly #file: Deno.FsFile;
  readonly #heartbeat: ReturnType<typeof setInterval>;
  readonly #pending = new Set<string>();
  readonly #encoder = new TextEncoder();
  #bytes = 0;
  #closed = false;

  private constructor(readonly path: string, file: Deno.FsFile) {
    this.#file = file;
    this.#heartbeat = setInterval(() => {
      const now = new Date();
      try {
        Deno.utimeSync(this.path, now, now);
      } catch {
        // Gone (a test's directory removed): nothing to keep alive.
      }
    }, JOURNAL_HEARTBEAT_MS);
    Deno.unrefTimer(this.#heartbeat);
  }

  /**
   * Opens a new journal for this process in `dir` (created if missing).
   *
   * @param dir The journal directory.
   * @returns The journal.
   */
  static async open(dir: string): Promise<SettleJournal> {
    await Deno.mkdir(dir, { recursive: true });
    const path = join(
      dir,
      `journal-${Deno.hostname()}-${Deno.pid}-${
        timeOrderedId(Date.now())
      }.jsonl`,
    );
    const file = await Deno.open(path, {
      write: true,
      append: true,
      createNew: true,
    });
    return new SettleJournal(path, file);
  }

  /**
   * Writes a charge down, before it is queued for the store.
   *
   * @param charge The charge.
   */
  record(charge: JournalCharge): void {
    if (this.#closed) return;
    this.#write({ charge });
    this.#pending.add(charge.chargeId);
  }

  /**
   * Names a lease this process created: a replay after its death gives it
   * back at once instead of leaving it to expire.
   *
   * @param callerId The caller.
   * @param leaseId The lease.
   */
  lease(callerId: string, leaseId: string): void {
    if (this.#closed) return;
    this.#write({ lease: { callerId, leaseId } });
  }

  /**
   * Marks a charge committed to the store.
   *
   * @param chargeId The charge's id.
   */
  done(chargeId: string): void {
    if (this.#closed || !this.#pending.delete(chargeId)) return;
    this.#write({ done: chargeId });
    if (this.#pending.size === 0 && this.#bytes > COMPACT_BYTES) {
      this.#file.truncateSync(0);
      this.#bytes = 0;
    }
  }

  /** Charges written down and not yet committed. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Stops writing; the file goes when nothing in it is pending, else it stays for a replay. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#heartbeat);
    this.#file.close();
    if (this.#pending.size === 0) {
      try {
        Deno.removeSync(this.path);
      } catch {
        // Already gone.
      }
    }
  }

  #write(line: JournalLine): void {
    const bytes = this.#encoder.encode(JSON.stringify(line) + "\n");
    let written = 0;
    while (written < bytes.length) {
      written += this.#file.writeSync(bytes.subarray(written));
    }
    this.#bytes += bytes.length;
  }
}

/**
 * The charges of a journal's text not marked done, in order. A line cut
 * short (the process killed in the middle of writing it) is skipped: its
 * charge was not written down whole, so its answer had not gone out yet.
 *
 * @param text A journal file's text.
 * @returns The pending charges.
 *
 * @example
 * ```ts
 * import { pendingCharges } from "./journal.ts";
 *
 * pendingCharges('{"done":"c1"}\n{"charge":{"chargeId":"c2"'); // []
 * ```
 */
export function pendingCharges(text: string): JournalCharge[] {
  return readJournal(text).charges;
}

/** A journal's pending charges, and every lease it names (`callerId`, `leaseId`). */
function readJournal(
  text: string,
): { charges: JournalCharge[]; leases: [string, string][] } {
  const charges = new Map<string, JournalCharge>();
  const leases = new Map<string, [string, string]>();
  const named = (callerId: unknown, leaseId: unknown) => {
    if (typeof callerId === "string" && typeof leaseId === "string") {
      leases.set(`${callerId}\n${leaseId}`, [callerId, leaseId]);
    }
  };
  for (const line of text.split("\n")) {
    if (line === "") continue;
    let parsed: JournalLine;
    try {
      parsed = JSON.parse(line);
    } catch {
      continue;
    }
    if ("charge" in parsed && typeof parsed.charge?.chargeId === "string") {
      charges.set(parsed.charge.chargeId, parsed.charge);
      named(parsed.charge.callerId, parsed.charge.leaseId);
    } else if ("done" in parsed) charges.delete(parsed.done);
    else if ("lease" in parsed) {
      named(parsed.lease?.callerId, parsed.lease?.leaseId);
    }
  }
  return { charges: [...charges.values()], leases: [...leases.values()] };
}

/** What {@linkcode replayJournals} did. */
export interface ReplayResult {
  /** Dead journals read. */
  journals: number;
  /** Charges committed now. */
  charged: number;
  /** Charges found committed already (written twice, charged once). */
  alreadyCharged: number;
  /** Leases of dead processes given back. */
  leasesReturned: number;
}

/** Options of {@linkcode replayJournals}. */
export interface ReplayOptions {
  /** This process's own journal, never replayed. */
  own?: string;
  /** Epoch ms; tests pass their own. */
  now?: number;
  /** How long a journal nobody touched is taken for dead, ms. */
  deadAfterMs?: number;
  /** How long trace records are kept, ms. */
  traceRetentionMs?: number;
  /** Add usage sums with each charge (default true). */
  usageAggregates?: boolean;
}

/**
 * Charges what the dead processes' journals in `dir` hold and the store
 * does not, gives their leases back, and removes the journals. A journal is
 * taken by renaming it first, so two processes replaying at once never read
 * the same one.
 *
 * @param kv The gateway's store.
 * @param dir The journal directory.
 * @param options This process's own journal, the clock, how long until a journal is dead.
 * @returns What was done.
 */
export async function replayJournals(
  kv: Deno.Kv,
  dir: string,
  options: ReplayOptions = {},
): Promise<ReplayResult> {
  const now = options.now ?? Date.now();
  const deadAfterMs = options.deadAfterMs ?? JOURNAL_DEAD_AFTER_MS;
  const result: ReplayResult = {
    journals: 0,
    charged: 0,
    alreadyCharged: 0,
    leasesReturned: 0,
  };
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(dir));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return result;
    throw error;
  }
  for (const entry of entries) {
    if (!entry.isFile || !/^journal-.*\.jsonl$/.test(entry.name)) continue;
    const path = join(dir, entry.name);
    if (path === options.own) continue;
    const stat = await Deno.stat(path).catch(() => undefined);
    if (!stat?.mtime) continue;
    if (now - stat.mtime.getTime() < deadAfterMs && !ownerGone(entry.name)) {
      continue;
    }
    const taken = `${path}.replaying-${timeOrderedId(now)}`;
    try {
      await Deno.rename(path, taken);
    } catch {
      continue; // Another process took it.
    }
    result.journals++;
    const { charges, leases } = readJournal(await Deno.readTextFile(taken));
    for (const charge of charges) {
      if (await commitCharge(kv, charge, options)) result.charged++;
      else result.alreadyCharged++;
    }
    for (const [callerId, leaseId] of leases) {
      if (await returnLease(kv, callerId, leaseId)) result.leasesReturned++;
    }
    await Deno.remove(taken);
  }
  return result;
}

/**
 * Whether a journal's owner is known to be gone: it ran on this host (the
 * name says so) and no process has its id now (`/proc`, where there is one).
 * Anything else is left to the heartbeat: a host without `/proc`, another
 * host, or an id taken by a new process reads as alive.
 */
function ownerGone(name: string): boolean {
  const match = /^journal-(.+)-(\d+)-[^-]+\.jsonl$/.exec(name);
  if (!match || match[1] !== Deno.hostname()) return false;
  if (Number(match[2]) === Deno.pid) return false;
  try {
    Deno.statSync("/proc/self");
  } catch {
    return false;
  }
  try {
    Deno.statSync(`/proc/${match[2]}`);
    return false;
  } catch {
    return true;
  }
}

/**
 * Commits one journaled charge unless its ledger entry exists: from the
 * unleased credits (the lease it was held in goes back whole), with its
 * ledger entry, trace and usage sums.
 *
 * @returns `true` when it was charged now, `false` when it had been.
 */
function commitCharge(
  kv: Deno.Kv,
  charge: JournalCharge,
  options: ReplayOptions,
): Promise<boolean> {
  const { callerId, chargeId } = charge;
  return commitWithRetry(`replay of charge "${chargeId}"`, async () => {
    const [ledger, unleased] = await kv.getMany<[unknown, number]>([
      ledgerKey(callerId, chargeId),
      unleasedKey(callerId),
    ]);
    if (ledger.versionstamp !== null) return false;
    const settlement = {
      costMicros: charge.costMicros,
      usage: charge.usage,
      trace: charge.trace,
      reservation: { id: charge.reservationId },
    };
    const entry = chargeEntry(settlement, callerId, chargeId, charge.time);
    const record = { ...charge.trace, callerId, costMicros: charge.costMicros };
    const op = kv.atomic()
      .check(ledger, unleased)
      .set(unleasedKey(callerId), (unleased.value ?? 0) - charge.costMicros)
      .set(ledgerKey(callerId, chargeId), entry);
    addTraceWrites(op, record, { retentionMs: options.traceRetentionMs });
    if (options.usageAggregates !== false) {
      const sums = new UsageSums();
      sums.add(record);
      sums.writeTo(op);
    }
    const committed = await op.commit();
    return committed.ok ? true : null;
  });
}

/** Gives a dead process's lease back to the unleased credits now; `false` when it was gone. */
function returnLease(
  kv: Deno.Kv,
  callerId: string,
  leaseId: string,
): Promise<boolean> {
  const key = leaseKey(callerId, leaseId);
  return commitWithRetry(`return of lease "${leaseId}"`, async () => {
    const [lease, unleased] = await kv.getMany<[LeaseRecord, number]>([
      key,
      unleasedKey(callerId),
    ]);
    if (lease.value === null) return false;
    const committed = await kv.atomic()
      .check(lease, unleased)
      .set(
        unleasedKey(callerId),
        (unleased.value ?? 0) + lease.value.amountMicros,
      )
      .delete(key)
      .commit();
    return committed.ok ? true : null;
  });
}

/** Where a store is, as the configuration says it (`GatewayConfig`'s fields). */
export interface JournalPlace {
  /** The KV path (`GATEWAY_KV_PATH`). */
  kvPath: string;
  /** The PostgreSQL URL (`GATEWAY_STORE`), when the store is PostgreSQL. */
  store?: string;
  /** The journal's base directory (`GATEWAY_JOURNAL_DIR`); `off` for none. */
  journalDir?: string;
}

/**
 * The settlement journal's directory for a store: a folder of the base
 * directory (`GATEWAY_JOURNAL_DIR`, else `journal` beside the KV file, else
 * `./data/journal` on PostgreSQL) named after the store, so a journal is
 * only ever replayed into the store its charges belong to. None for a KV in
 * memory, or `GATEWAY_JOURNAL_DIR=off`.
 *
 * @param place The KV path, PostgreSQL URL and journal base directory.
 * @returns The directory, or `undefined` for none.
 *
 * @example
 * ```ts
 * import { journalDirFor } from "./journal.ts";
 *
 * journalDirFor({ kvPath: ":memory:" }); // undefined
 * journalDirFor({ kvPath: "/srv/data/gateway.kv" }); // "/srv/data/journal/" and 16 hex digits
 * ```
 */
export function journalDirFor(place: JournalPlace): string | undefined {
  if (place.journalDir === "off") return undefined;
  let store: string;
  if (place.store) {
    // The database, never its password.
    const url = new URL(place.store);
    store = `postgres://${url.username}@${url.host}${url.pathname}`;
  } else if (place.kvPath === ":memory:") {
    // Gone with the process: nothing to replay a journal into.
    return undefined;
  } else if (/^https?:/.test(place.kvPath)) {
    if (!place.journalDir) return undefined;
    store = place.kvPath;
  } else store = resolve(place.kvPath);
  const base = place.journalDir ??
    (place.store ? "./data/journal" : join(dirname(store), "journal"));
  return join(
    base,
    createHash("sha256").update(store).digest("hex").slice(0, 16),
  );
}

/**
 * The journals in `dir` whose process still runs (on this host, or touched
 * within {@linkcode JOURNAL_DEAD_AFTER_MS}): a gateway has the store open.
 *
 * @param dir The journal directory.
 * @param now Epoch ms.
 * @returns Their file names.
 */
export async function liveJournals(
  dir: string,
  now: number = Date.now(),
): Promise<string[]> {
  const live: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(dir));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return live;
    throw error;
  }
  for (const entry of entries) {
    if (!entry.isFile || !/^journal-.*\.jsonl$/.test(entry.name)) continue;
    const stat = await Deno.stat(join(dir, entry.name)).catch(() => undefined);
    if (!stat?.mtime) continue;
    if (
      now - stat.mtime.getTime() < JOURNAL_DEAD_AFTER_MS &&
      !ownerGone(entry.name)
    ) live.push(entry.name);
  }
  return live;
}

/**
 * The PostgreSQL store: the gateway's state in one PostgreSQL database that
 * every gateway process on every host shares. It is a thin adapter: it
 * offers the part of Deno KV's API the gateway's domain code uses (`get`,
 * `getMany`, `list`, `atomic()` with `check`, `set` with `expireIn`,
 * `delete`, `sum`/`min`/`max`), so the money rules, limits, traces and the
 * live catalog are written once and run unchanged on either store.
 *
 * Layout: one table, `gateway_kv (key bytea primary key, value bytea, u64
 * numeric, version bigint, expires_at bigint)`. Keys are the gateway's KV keys
 * (built in `kv_keys.ts`) encoded so that byte order is KV order
 * (`key_codec.ts`); values are V8-serialised exactly as Deno KV serialises
 * them; `u64` holds a `Deno.KvU64`. Versionstamps come from one sequence.
 *
 * An atomic commit is one round trip: the function `gateway_kv_commit` locks
 * every key it checks or writes (transaction-scoped advisory locks, taken in
 * one order so two commits never deadlock), compares the checked versions
 * with the latest committed ones, and writes — or writes nothing and returns
 * `NULL` when a check failed, which the domain code retries as it retries a
 * lost KV commit. That is what Deno KV's optimistic checks promise, at READ
 * COMMITTED; no serialisation failures to retry.
 *
 * The schema is created and migrated at start-up under a transaction-scoped
 * advisory lock, so several gateways starting at once migrate it once;
 * `gateway_schema` records the version (`_postgres_schema.ts`). The atomic
 * operation, the list iterator and the row encoding are
 * `_postgres_atomic.ts`, listing `_postgres_list.ts`.
 *
 * A database that goes away (stopped, restarting, a pooled connection it
 * dropped) is waited for, not reported: every operation goes through one
 * {@linkcode StoreOutage} (`outage.ts`), which probes the database alone
 * until it answers and lets the waiting operations go again, up to
 * `waitMs`. A read is sent again; a commit only when it certainly never
 * reached the database (no connection, or an error PostgreSQL answered with,
 * which rolled it back): one whose answer was lost is thrown as it was, for
 * the domain code that knows whether it is safe to repeat.
 *
 * @example Open, write, read
 * ```ts ignore
 * import { openPostgresStore } from "./postgres.ts";
 *
 * const store = await openPostgresStore("postgres://gateway@db.internal/gateway");
 * await store.set(["hello"], "world");
 * console.log((await store.get(["hello"])).value);
 * await store.end();
 * ```
 *
 * @module
 */
import postgres from "postgres";
import { encodeKey, toHex } from "./key_codec.ts";
import { listEntries } from "./_postgres_list.ts";
import { migrate } from "./_postgres_schema.ts";
import {
  type Check,
  entryOf,
  type Mutation,
  PostgresAtomic,
  type Row,
  versionstampOf,
} from "./_postgres_atomic.ts";
import { retry, RetryError } from "../../../_retry.ts";
import { neverReachedStore, StoreOutage } from "./outage.ts";

/** Expired rows are deleted this often (reads ignore them meanwhile). */
const EXPIRY_SWEEP_MS = 60_000;
/** Attempts of a commit that failed for a transient database reason. */
const TRANSIENT_ATTEMPTS = 5;
/** How long an operation waits for an unreachable database by default, ms. */
export const DEFAULT_STORE_WAIT_MS = 60_000;

/** Options of {@linkcode openPostgresStore}. */
export interface PostgresStoreOptions {
  /** Most connections this process opens (default 10). */
  maxConnections?: number;
  /** This process's own clock, epoch ms; the store keeps to the database's by an offset measured from it (tests shift or replace it). */
  now?: () => number;
  /** The longest an operation waits for an unreachable database, ms (`GATEWAY_STORE_WAIT_MS`, default {@linkcode DEFAULT_STORE_WAIT_MS}). */
  waitMs?: number;
  /** Told when the database becomes unreachable and when it is back. */
  log?: (record: Record<string, unknown>) => void;
}

function isTransient(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === "40001" || code === "40P01";
}

/** A commit that threw this was not applied: it never reached the database, or PostgreSQL answered with an error (a SQLSTATE), which rolled it back. */
function notApplied(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return neverReachedStore(error) ||
    (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code));
}

const always = () => true;

/**
 * The gateway's state in PostgreSQL, behind the part of Deno KV's API the
 * gateway uses. Open it with {@linkcode openPostgresStore}; close it with
 * `end()` (or `close()`, which does not wait).
 */
export class PostgresKv implements Deno.Kv {
  readonly #sql: postgres.Sql;
  readonly #sweep: ReturnType<typeof setInterval>;
  readonly #localNow: () => number;
  /** Whether the database answers; the one loop that waits for it when not. */
  readonly outage: StoreOutage;
  #ended?: Promise<void>;
  /** The database's clock less this process's, ms, as last measured. */
  #offsetMs = 0;
  /**
   * The clock every gateway on this store keeps its time-based state by
   * (record expiry here; leases, limit windows and sweeps in the gateway):
   * the database server's, read as this process's clock plus the offset
   * measured at open and again every minute, so hosts whose own clocks
   * disagree agree on it (within a round trip).
   */
  readonly now: () => number;

  /**
   * Wraps an open client; use {@linkcode openPostgresStore}.
   *
   * @param sql The client.
   * @param localNow This process's own clock.
   * @param options How long operations wait for an unreachable database, and where that is logged.
   */
  constructor(
    sql: postgres.Sql,
    localNow: () => number,
    options: Pick<PostgresStoreOptions, "waitMs" | "log"> = {},
  ) {
    this.#sql = sql;
    this.#localNow = localNow;
    this.now = () => localNow() + this.#offsetMs;
    // The probe measures the clock again: a database that restarted may
    // be another server (a failover) with a clock of its own.
    this.outage = new StoreOutage({
      waitMs: options.waitMs ?? DEFAULT_STORE_WAIT_MS,
      probe: () => this.#measureClock(),
      log: options.log,
    });
    this.#sweep = setInterval(() => {
      // During an outage the probe loop is the only one to reach out.
      if (!this.outage.reachable) return;
      this.syncClock(localNow).catch(() => {});
      this.deleteExpired().catch(() => {});
    }, EXPIRY_SWEEP_MS);
    Deno.unrefTimer(this.#sweep);
  }

  /** @internal Commits checks and mutations in one round trip. */
  async commitOps(
    ops: { c: Check[]; m: Mutation[] },
  ): Promise<Deno.KvCommitResult | Deno.KvCommitError> {
    // A serialization failure or deadlock rolled the commit back: it is run
    // again at once, and the last failure is thrown as PostgreSQL gave it.
    return await this.#run(() => this.#commitOnce(ops), notApplied);
  }

  async #commitOnce(
    ops: { c: Check[]; m: Mutation[] },
  ): Promise<Deno.KvCommitResult | Deno.KvCommitError> {
    try {
      return await retry(async () => {
        const [row] = await this.#sql<{ v: string | null }[]>`
          SELECT gateway_kv_commit(${
          JSON.stringify(ops)
        }::text::jsonb, ${this.now()}) AS v`;
        if (row.v === null) return { ok: false };
        return { ok: true, versionstamp: versionstampOf(row.v) };
      }, {
        maxAttempts: TRANSIENT_ATTEMPTS,
        minTimeout: 0,
        isRetriable: isTransient,
      });
    } catch (error) {
      throw error instanceof RetryError ? error.cause : error;
    }
  }

  /**
   * Reads one key.
   *
   * @param key The key.
   * @returns Its entry (value `null` when absent or expired).
   */
  async get<T = unknown>(key: Deno.KvKey): Promise<Deno.KvEntryMaybe<T>> {
    const [entry] = await this.getMany<[T]>([key]);
    return entry;
  }

  /**
   * Reads several keys in one statement (one consistent snapshot).
   *
   * @param keys The keys.
   * @returns Their entries, in order.
   */
  async getMany<T extends readonly unknown[]>(
    keys: readonly [...{ [K in keyof T]: Deno.KvKey }],
  ): Promise<{ [K in keyof T]: Deno.KvEntryMaybe<T[K]> }> {
    const hexes = keys.map((key) => toHex(encodeKey(key)));
    const rows = hexes.length === 0
      ? []
      : await this.#run(() =>
        this.#sql<Row[]>`
      SELECT key, value, u64::text AS u64, version::text AS version
      FROM gateway_kv
      WHERE key IN (SELECT decode(x, 'hex') FROM unnest(${hexes}::text[]) x)
        AND (expires_at IS NULL OR expires_at > ${this.now()})`, always);
    const byKey = new Map(rows.map((row) => [toHex(row.key), row]));
    return keys.map((key, i) => entryOf(key, byKey.get(hexes[i]))) as {
      [K in keyof T]: Deno.KvEntryMaybe<T[K]>;
    };
  }

  /**
   * Writes one key in its own commit.
   *
   * @param key The key.
   * @param value The value.
   * @param options `expireIn`, ms.
   * @returns The commit result.
   */
  async set(
    key: Deno.KvKey,
    value: unknown,
    options?: { expireIn?: number },
  ): Promise<Deno.KvCommitResult> {
    const result = await this.atomic().set(key, value, options).commit();
    return result as Deno.KvCommitResult;
  }

  /**
   * Deletes one key in its own commit.
   *
   * @param key The key.
   */
  async delete(key: Deno.KvKey): Promise<void> {
    await this.atomic().delete(key).commit();
  }

  /**
   * Lists keys by prefix or range, in key order (or reversed), a page of
   * rows per round trip.
   *
   * @param selector `prefix`, `start`, `end`.
   * @param options `limit`, `reverse`, `cursor`.
   * @returns The entries.
   */
  list<T = unknown>(
    selector: Deno.KvListSelector,
    options: Deno.KvListOptions = {},
  ): Deno.KvListIterator<T> {
    return listEntries<T>(
      this.#sql,
      this.now,
      (query) => this.#run(query, always),
      selector,
      options,
    );
  }

  /**
   * Starts an atomic operation, committed in one round trip.
   *
   * @returns The operation.
   */
  atomic(): Deno.AtomicOperation {
    return new PostgresAtomic(this);
  }

  /**
   * Not supported: the gateway uses no queues.
   *
   * @returns A rejected promise.
   */
  enqueue(): Promise<Deno.KvCommitResult> {
    return Promise.reject(
      new TypeError("Queues are not supported by the PostgreSQL store"),
    );
  }

  /**
   * Not supported: the gateway uses no queues.
   *
   * @returns A rejected promise.
   */
  listenQueue(): Promise<void> {
    return Promise.reject(
      new TypeError("Queues are not supported by the PostgreSQL store"),
    );
  }

  /**
   * Not supported: the gateway watches no keys.
   *
   * @returns Never.
   */
  watch<T extends readonly unknown[]>(): ReadableStream<
    { [K in keyof T]: Deno.KvEntryMaybe<T[K]> }
  > {
    throw new TypeError(
      "Watching keys is not supported by the PostgreSQL store",
    );
  }

  /**
   * Not supported: the gateway writes no versionstamped keys.
   *
   * @returns Never.
   */
  commitVersionstamp(): symbol {
    throw new TypeError(
      "Versionstamped keys are not supported by the PostgreSQL store",
    );
  }

  /**
   * Deletes rows whose expiry passed (reads already ignore them).
   *
   * @returns How many rows went.
   */
  async deleteExpired(): Promise<number> {
    const now = this.now();
    // The outer condition is checked again on a row a commit changed while
    // this waited for it: a row made live again is kept.
    // Deleting twice what expired is harmless: sent again like a read.
    const rows = await this.#run(() =>
      this.#sql`
      DELETE FROM gateway_kv WHERE key IN (
        SELECT key FROM gateway_kv WHERE expires_at <= ${now} LIMIT 10000)
        AND expires_at <= ${now}`, always);
    return rows.count;
  }

  /**
   * The database server's clock, epoch ms: the one clock every gateway on
   * this store keeps its time-based state by (`clock.ts`).
   *
   * @returns Epoch ms, as PostgreSQL's `clock_timestamp()` reads now.
   */
  clockMs(): Promise<number> {
    return this.#run(() => this.#readClock(), always);
  }

  async #readClock(): Promise<number> {
    const [row] = await this.#sql<{ ms: number }[]>`
      SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms`;
    return Number(row.ms);
  }

  /** The probe of an outage: one round trip, straight to the database (not waiting on the outage it probes), that measures the clock again. */
  async #measureClock(): Promise<void> {
    await this.#measure(this.#localNow, () => this.#readClock());
  }

  async #measure(
    localNow: () => number,
    read: () => Promise<number>,
  ): Promise<number> {
    const sent = localNow();
    const database = await read();
    const received = localNow();
    // Whole ms: times are stored as bigint.
    this.#offsetMs = Math.round(database - (sent + received) / 2);
    return this.#offsetMs;
  }

  /**
   * Runs one operation against the database, waiting out an outage: while
   * the database is unreachable the operation waits for the probe loop to
   * find it back (at most `waitMs`), and an attempt that finds it
   * unreachable is made again once it is back when `mayRepeat` says the
   * attempt cannot have been applied. An attempt the database never answers
   * (it accepts connections and stays silent) fails at the same deadline.
   */
  async #run<T>(
    attempt: () => Promise<T>,
    mayRepeat: (error: unknown) => boolean,
  ): Promise<T> {
    const deadline = performance.now() + this.outage.waitMs;
    for (;;) {
      await this.outage.back(deadline);
      try {
        return await this.outage.within(attempt, deadline);
      } catch (error) {
        if (!this.outage.report(error) || !mayRepeat(error)) throw error;
      }
    }
  }

  /**
   * Measures the database's clock against this process's, taking the
   * midpoint of the round trip; {@linkcode PostgresKv.now} follows it.
   *
   * @param localNow This process's own clock.
   * @returns The offset, ms.
   */
  syncClock(localNow: () => number): Promise<number> {
    return this.#measure(localNow, () => this.clockMs());
  }

  /**
   * Whether the store holds no state at all (for `store copy`).
   *
   * @returns `true` when empty.
   */
  async isEmpty(): Promise<boolean> {
    const rows = await this.#run(
      () => this.#sql`SELECT 1 FROM gateway_kv LIMIT 1`,
      always,
    );
    return rows.length === 0;
  }

  /**
   * Closes every connection, waiting for running queries (at most 5 s).
   *
   * @returns A promise that resolves once closed.
   */
  end(): Promise<void> {
    clearInterval(this.#sweep);
    this.outage.close();
    return this.#ended ??= this.#sql.end({ timeout: 5 });
  }

  /** Closes every connection without waiting (see `end()`). */
  close(): void {
    this.end();
  }

  /** Closes every connection without waiting. */
  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * Connects to PostgreSQL, creates or migrates the schema (once, even when
 * several gateways start together), and returns the store.
 *
 * @param url A `postgres://` or `postgresql://` URL.
 * @param options Pool size and clock.
 * @returns The open store.
 * @throws {Error} When the database cannot be reached, or its schema is newer than this code.
 */
export async function openPostgresStore(
  url: string,
  options: PostgresStoreOptions = {},
): Promise<PostgresKv> {
  const sql = postgres(url, {
    max: options.maxConnections ?? 10,
    onnotice: () => {},
    connect_timeout: 10,
    // Values are bytes we decode ourselves; bigints come back as text.
    types: {},
  });
  try {
    await migrate(sql);
  } catch (error) {
    await sql.end({ timeout: 1 });
    throw error;
  }
  const localNow = options.now ?? Date.now;
  const store = new PostgresKv(sql, localNow, options);
  try {
    await store.syncClock(localNow);
  } catch (error) {
    await sql.end({ timeout: 1 });
    throw error;
  }
  return store;
}

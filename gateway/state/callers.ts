/**
 * Caller keys: creating, listing, showing and revoking them, and
 * authenticating a presented key. A key is 32 random bytes, shown once at
 * creation (`mk-` then 52 base32 characters) and stored only as its SHA-256
 * hash.
 *
 * @example Create a caller and authenticate its key
 * ```ts
 * import { createCaller, createCallerAuthenticator } from "./callers.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const created = await createCaller(kv, { name: "alice", creditsMicros: 10_000_000 });
 * const auth = createCallerAuthenticator(kv);
 * const caller = await auth.authenticate(created.key); // { id, name: "alice" }
 * kv.close();
 * ```
 *
 * @module
 */

import { createHash } from "node:crypto";
import { randomId } from "../_ids.ts";
import { commitWithRetry } from "./_kv_retry.ts";
import { addOpeningBalanceWrites, readBalance } from "./credits/ledger.ts";
import { callerByHashKey, callerKey, callersPrefix } from "./kv_keys.ts";
import type { CallerLimits } from "./limits/limits.ts";
import { storeReachable } from "./store/mod.ts";

/**
 * Every caller key starts with this.
 *
 * @example
 * ```ts
 * import { CALLER_KEY_PREFIX, createCaller } from "./callers.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const { key } = await createCaller(kv, { name: "a", creditsMicros: 0 });
 * key.startsWith(CALLER_KEY_PREFIX); // true
 * kv.close();
 * ```
 */
export const CALLER_KEY_PREFIX = "mk-";

/** Random bytes in a caller key. */
const KEY_BYTES = 32;

/** A caller as stored in KV (no secret, only its hash). */
export interface CallerRecord {
  /** Public id, `ck_…`. */
  id: string;
  /** Human name. */
  name: string;
  /** Lowercase hex SHA-256 of the key. */
  keyHash: string;
  /** Epoch ms of creation. */
  createdAt: number;
  /** The operator's limits on the key. */
  limits?: CallerLimits;
}

/** A caller as shown to an admin: no secret, no hash. */
export interface CallerInfo {
  /** Public id. */
  id: string;
  /** Human name. */
  name: string;
  /** The caller's balance, micro-USD: the sum of their ledger (below zero: a debt). */
  balanceMicros: number;
  /** Epoch ms of creation. */
  createdAt: number;
  /** The operator's limits on the key. */
  limits?: CallerLimits;
}

/** A newly created caller, with its key: the only time the key is seen. */
export interface NewCaller extends CallerInfo {
  /** The secret key, `mk-…`. Not stored; show it once. */
  key: string;
}

/**
 * The lowercase hex SHA-256 of a caller key, as stored.
 *
 * @example
 * ```ts
 * import { hashCallerKey } from "./callers.ts";
 *
 * (await hashCallerKey("mk-example")).length; // 64
 * ```
 *
 * @param key The secret key.
 * @returns 64 hex characters.
 */
export function hashCallerKey(key: string): Promise<string> {
  // Synchronous node:crypto, not crypto.subtle.digest: this runs on every
  // call, and subtle.digest's async op cost ~9 % of the gateway's CPU at
  // saturation (bench/gateway/profile.ts); the hex output is identical.
  return Promise.resolve(createHash("sha256").update(key).digest("hex"));
}

/**
 * Creates a caller with a fresh random key and opening credits, in one commit
 * (caller, hash index, balance and its ledger entry).
 *
 * @example
 * ```ts
 * import { createCaller } from "./callers.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const created = await createCaller(kv, { name: "alice", creditsMicros: 10_000_000 });
 * console.log(created.id, created.key); // "ck_…" "mk-…": show the key once, it is not stored
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @param options `name` (1 to 200 characters), `creditsMicros` (opening
 *   credits, micro-USD) and `now` (creation time, epoch ms; default now).
 * @returns The caller with its key; the key cannot be recovered later.
 * @throws {RangeError} When the name is empty or too long, or the credits are not a non-negative integer.
 */
export async function createCaller(
  kv: Deno.Kv,
  options: {
    name: string;
    creditsMicros: number;
    limits?: CallerLimits;
    now?: number;
  },
): Promise<NewCaller> {
  const name = options.name.trim();
  if (name.length === 0 || name.length > 200) {
    throw new RangeError(
      `Invalid caller name "${options.name}": expected 1 to 200 characters`,
    );
  }
  const key = randomId(CALLER_KEY_PREFIX, KEY_BYTES);
  const keyHash = await hashCallerKey(key);
  const createdAt = options.now ?? Date.now();
  // A failed commit means another process held the KV file's lock (retried)
  // or, with 80 random bits of id, practically never an id collision: each
  // attempt draws a fresh id.
  const record = await commitWithRetry(
    `creation of caller "${name}"`,
    async () => {
      const record: CallerRecord = {
        id: randomId("ck_", 10),
        name,
        keyHash,
        createdAt,
        ...(options.limits ? { limits: options.limits } : {}),
      };
      const caller: Caller = {
        id: record.id,
        name,
        ...(options.limits ? { limits: options.limits } : {}),
      };
      const op = kv.atomic()
        .check({ key: callerKey(record.id), versionstamp: null })
        .check({ key: callerByHashKey(keyHash), versionstamp: null })
        .set(callerKey(record.id), record)
        .set(callerByHashKey(keyHash), caller);
      addOpeningBalanceWrites(op, record.id, options.creditsMicros, createdAt);
      return (await op.commit()).ok ? record : null;
    },
  );
  return {
    id: record.id,
    key,
    name,
    balanceMicros: options.creditsMicros,
    createdAt: record.createdAt,
    ...(record.limits ? { limits: record.limits } : {}),
  };
}

/**
 * Sets (or, with `null`, removes) a caller's limits, for every process
 * within a second (the key lookup's cache).
 *
 * @example
 * ```ts
 * import { createCaller, setCallerLimits } from "./callers.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const created = await createCaller(kv, { name: "a", creditsMicros: 0 });
 * await setCallerLimits(kv, created.id, { rpm: 60 });
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @param callerId The caller's id.
 * @param limits The new limits, or `null` for none.
 * @returns The caller, or `null` when unknown.
 */
export async function setCallerLimits(
  kv: Deno.Kv,
  callerId: string,
  limits: CallerLimits | null,
): Promise<CallerInfo | null> {
  const record = await commitWithRetry(
    `limits of caller "${callerId}"`,
    async () => {
      const stored = await kv.get<CallerRecord>(callerKey(callerId));
      if (stored.value === null) return false;
      const { limits: _old, ...rest } = stored.value;
      const next: CallerRecord = limits ? { ...rest, limits } : rest;
      const caller: Caller = {
        id: next.id,
        name: next.name,
        ...(limits ? { limits } : {}),
      };
      const committed = await kv.atomic()
        .check(stored)
        .set(callerKey(callerId), next)
        .set(callerByHashKey(next.keyHash), caller)
        .commit();
      return committed.ok ? next : null;
    },
  );
  if (record === false) return null;
  return toInfo(record, await readBalance(kv, callerId));
}

/**
 * Shows one caller, without secret or hash.
 *
 * @example
 * ```ts
 * import { createCaller, getCaller } from "./callers.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const created = await createCaller(kv, { name: "a", creditsMicros: 500 });
 * (await getCaller(kv, created.id))?.name; // "a"
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @param callerId The caller's id.
 * @returns The caller, or `null` when unknown or revoked.
 */
export async function getCaller(
  kv: Deno.Kv,
  callerId: string,
): Promise<CallerInfo | null> {
  const record = await kv.get<CallerRecord>(callerKey(callerId));
  if (record.value === null) return null;
  return toInfo(record.value, await readBalance(kv, callerId));
}

/**
 * Lists every caller, oldest first, without secrets or hashes.
 *
 * @example
 * ```ts
 * import { createCaller, listCallers } from "./callers.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * await createCaller(kv, { name: "a", creditsMicros: 0 });
 * (await listCallers(kv)).length; // 1
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @returns The callers.
 */
export async function listCallers(kv: Deno.Kv): Promise<CallerInfo[]> {
  const callers: CallerInfo[] = [];
  for await (
    const entry of kv.list<CallerRecord>({ prefix: callersPrefix() })
  ) {
    callers.push(
      toInfo(entry.value, await readBalance(kv, entry.value.id)),
    );
  }
  return callers.sort((a, b) =>
    a.createdAt - b.createdAt || a.id.localeCompare(b.id)
  );
}

/**
 * Revokes a caller: its key stops authenticating (within the authenticator's
 * cache lifetime, at most one second). Its balance and ledger stay, for the
 * record and for reservations still settling.
 *
 * @example
 * ```ts
 * import { createCaller, createCallerAuthenticator, revokeCaller } from "./callers.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const created = await createCaller(kv, { name: "a", creditsMicros: 0 });
 * await revokeCaller(kv, created.id);
 * await createCallerAuthenticator(kv).authenticate(created.key); // null
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @param callerId The caller's id.
 * @returns `true` when revoked, `false` when the caller was unknown.
 */
export async function revokeCaller(
  kv: Deno.Kv,
  callerId: string,
): Promise<boolean> {
  return await commitWithRetry(
    `revocation of caller "${callerId}"`,
    async () => {
      const record = await kv.get<CallerRecord>(callerKey(callerId));
      if (record.value === null) return false;
      const committed = await kv.atomic()
        .check(record)
        .delete(callerKey(callerId))
        .delete(callerByHashKey(record.value.keyHash))
        .commit();
      return committed.ok ? true : null;
    },
  );
}

function toInfo(record: CallerRecord, balanceMicros: number): CallerInfo {
  return {
    id: record.id,
    name: record.name,
    balanceMicros,
    createdAt: record.createdAt,
    ...(record.limits ? { limits: record.limits } : {}),
  };
}

/** Options of {@linkcode createCallerAuthenticator}. */
export interface CallerAuthenticatorOptions {
  /** How long a lookup (found or not) is reused, ms; at most and by default 1000. */
  cacheTtlMs?: number;
  /** The most lookups kept; the oldest go first. Default 10 000. */
  maxCacheEntries?: number;
  /** Clock, epoch ms; tests replace it. */
  now?: () => number;
}

/**
 * Creates the {@linkcode CallerAuthenticator} the gateway checks every request
 * with. A lookup, found or not, is cached for at most one second, so a revoked
 * key stops working within a second in every process sharing the KV, and a
 * flood of bad keys costs one KV read per key per second. While a
 * PostgreSQL store is unreachable (`store/outage.ts`), a key looked up
 * before is served from its last lookup, however old.
 *
 * The lookup is by the key's SHA-256 hash; no secret is ever compared, and
 * how long the lookup takes can reveal at most something about a hash, which
 * gives nothing towards a key.
 *
 * @example
 * ```ts
 * import { createCaller, createCallerAuthenticator } from "./callers.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const created = await createCaller(kv, { name: "alice", creditsMicros: 0 });
 * const auth = createCallerAuthenticator(kv, { cacheTtlMs: 500 });
 * (await auth.authenticate(created.key))?.name; // "alice"
 * await auth.authenticate("mk-unknown"); // null
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @param options Cache lifetime and size, clock.
 * @returns The authenticator.
 * @throws {RangeError} When `cacheTtlMs` is above 1000 or negative.
 */
export function createCallerAuthenticator(
  kv: Deno.Kv,
  options: CallerAuthenticatorOptions = {},
): CallerAuthenticator {
  const ttl = options.cacheTtlMs ?? 1000;
  if (!(ttl >= 0 && ttl <= 1000)) {
    throw new RangeError(`Invalid cacheTtlMs "${ttl}": expected 0 to 1000`);
  }
  const maxEntries = Math.max(1, options.maxCacheEntries ?? 10_000);
  const now = options.now ?? Date.now;
  const cache = new Map<string, { caller: Caller | null; expiresAt: number }>();

  return {
    async authenticate(secret: string): Promise<Caller | null> {
      if (!secret.startsWith(CALLER_KEY_PREFIX) || secret.length > 256) {
        return null;
      }
      const hash = await hashCallerKey(secret);
      const cached = cache.get(hash);
      // While the store is unreachable nobody can revoke or change a key
      // through it, so the last lookup stands: a caller its lease covers
      // is answered at once instead of waiting for the store.
      if (
        cached !== undefined &&
        (cached.expiresAt > now() || !storeReachable(kv))
      ) {
        return cached.caller;
      }
      const found = await commitWithRetry(
        "caller lookup",
        () => kv.get<Caller>(callerByHashKey(hash)),
      );
      // Map order is insertion order: re-inserting keeps the oldest first.
      cache.delete(hash);
      for (const oldest of cache.keys()) {
        if (cache.size < maxEntries) break;
        cache.delete(oldest);
      }
      cache.set(hash, { caller: found.value, expiresAt: now() + ttl });
      return found.value;
    },
  };
}

/** An authenticated caller. */
export interface Caller {
  /** Short public id of the caller key (never the key itself). */
  id: string;
  /** Human name given at creation. */
  name: string;
  /** The operator's limits on the key, if any. */
  limits?: CallerLimits;
}

/** Looks a caller up by the secret key it presented. */
export interface CallerAuthenticator {
  /** Resolves the caller owning `secret`, or `null` for an unknown or revoked key. */
  authenticate(secret: string): Promise<Caller | null>;
}

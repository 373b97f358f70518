/**
 * Every Deno KV key the gateway writes, built in this one file so the layout
 * can be read at a glance and no module glues key strings together. Code
 * that takes keys apart reads them through this file too: a usage counter's
 * parts ({@linkcode usageKeyParts}, for the usage listing) and any key's
 * table ({@linkcode tableOf}, for `store copy`, which also reads the time
 * parts the table below places).
 *
 * Layout:
 *
 * | Key | Value |
 * |---|---|
 * | `["callers", callerId]` | {@linkcode CallerRecord} in `callers.ts` |
 * | `["caller_by_hash", sha256Hex]` | `{id, name, limits}` of the caller (the secret itself is never stored) |
 * | `["unleased", callerId]` | the part of a caller's balance no lease holds, integer micro-USD (below zero: a debt) |
 * | `["leases", callerId, leaseId]` | {@linkcode LeaseRecord} in `credits/ledger.ts`: money one gateway process holds to reserve from in memory |
 * | `["ledger", callerId, entryId]` | one money movement; `entryId` sorts by time |
 * | `["traces", callerId, entryId]` | one trace record; `entryId` sorts by time |
 * | `["traces_by_trace_id", callerId, traceId, entryId]` | `null`: the trace's key, indexed by trace id |
 * | `["catalog", modelId]` | a change to the catalog file's models: `{entry}` or `{removed: true}` |
 * | `["catalog_version"]` | a counter (`Deno.KvU64`) bumped by every catalog change |
 * | `["limit_minute", callerId, minuteStart]` | `{requests, tokens}` a limited caller used in a calendar minute |
 * | `["limit_spend", callerId, periodStart]` | micro-USD a caller with a spend cap spent or holds in a period |
 * | `["usage", "m" \| "h" \| "d", bucketStart, callerId, model, provider, field]` | a usage counter (`Deno.KvU64`) in `usage_buckets.ts` |
 * | `["provider_key_health", keyId]` | `{coolUntil, reason}`: a provider key's cool-down every process honours (`limits/provider_keys.ts`) |
 * | `["provider_key_window", keyId, minuteStart]` | `{requests, tokens}` every process together claimed of a limited provider key in a calendar minute (`limits/provider_keys.ts`) |
 * | `["response_pins", provider, "response" \| "conversation", id]` | {@linkcode StatePin} in `response_pins.ts`: the provider key and caller a stored response or conversation belongs to |
 *
 * @module
 */

/**
 * The key of a caller's record.
 *
 * @param callerId The caller's public id.
 * @returns The KV key.
 */
export function callerKey(callerId: string): Deno.KvKey {
  return ["callers", callerId];
}

/**
 * The prefix listing every caller record.
 *
 * @returns The KV key prefix.
 */
export function callersPrefix(): Deno.KvKey {
  return ["callers"];
}

/**
 * The index from a caller key's SHA-256 hash to the caller's id.
 *
 * @param hashHex The lowercase hex SHA-256 of the secret key.
 * @returns The KV key.
 */
export function callerByHashKey(hashHex: string): Deno.KvKey {
  return ["caller_by_hash", hashHex];
}

/**
 * The key of a caller's unleased credits: the part of their balance no
 * gateway process holds in a lease (micro-USD, a plain number; below zero
 * is a debt).
 *
 * @param callerId The caller's public id.
 * @returns The KV key.
 */
export function unleasedKey(callerId: string): Deno.KvKey {
  return ["unleased", callerId];
}

/**
 * The key of one credit lease: money a gateway process moved out of a
 * caller's unleased credits to take reservations from in memory.
 *
 * @param callerId The caller whose money it holds.
 * @param leaseId The lease's id.
 * @returns The KV key.
 */
export function leaseKey(callerId: string, leaseId: string): Deno.KvKey {
  return ["leases", callerId, leaseId];
}

/**
 * The prefix listing a caller's leases, or every lease without a caller.
 *
 * @param callerId The caller's public id; omitted for every caller.
 * @returns The KV key prefix.
 */
export function leasesPrefix(callerId?: string): Deno.KvKey {
  return callerId === undefined ? ["leases"] : ["leases", callerId];
}

/**
 * The key of one ledger entry.
 *
 * @param callerId The caller whose balance moved.
 * @param entryId A time-ordered id (see `_ids.ts`), so a reverse list is newest first.
 * @returns The KV key.
 */
export function ledgerKey(
  callerId: string,
  entryId: string,
): Deno.KvKey {
  return ["ledger", callerId, entryId];
}

/**
 * The prefix of a caller's ledger.
 *
 * @param callerId The caller's public id.
 * @returns The KV key prefix.
 */
export function ledgerPrefix(callerId: string): Deno.KvKey {
  return ["ledger", callerId];
}

/**
 * The key of one trace record of an authenticated caller.
 *
 * @param callerId The caller's public id.
 * @param entryId A time-ordered id, so a reverse list is newest first.
 * @returns The KV key.
 */
export function traceKey(
  callerId: string,
  entryId: string,
): Deno.KvKey {
  return ["traces", callerId, entryId];
}

/**
 * The prefix of a caller's traces.
 *
 * @param callerId The caller's public id.
 * @returns The KV key prefix.
 */
export function tracesPrefix(callerId: string): Deno.KvKey {
  return ["traces", callerId];
}

/**
 * The secondary index of a caller's traces by trace id.
 *
 * @param callerId The caller's public id.
 * @param traceId The `Trace-Id` the calls share.
 * @param entryId The same time-ordered id as the primary record.
 * @returns The KV key.
 */
export function traceByTraceIdKey(
  callerId: string,
  traceId: string,
  entryId: string,
): Deno.KvKey {
  return ["traces_by_trace_id", callerId, traceId, entryId];
}

/**
 * The prefix of a caller's traces sharing one trace id.
 *
 * @param callerId The caller's public id.
 * @param traceId The trace id.
 * @returns The KV key prefix.
 */
export function traceByTraceIdPrefix(
  callerId: string,
  traceId: string,
): Deno.KvKey {
  return ["traces_by_trace_id", callerId, traceId];
}

/**
 * The key of one live-catalog change.
 *
 * @param modelId The model id.
 * @returns The KV key.
 */
export function catalogChangeKey(modelId: string): Deno.KvKey {
  return ["catalog", modelId];
}

/**
 * The prefix of every live-catalog change.
 *
 * @returns The KV key prefix.
 */
export function catalogChangesPrefix(): Deno.KvKey {
  return ["catalog"];
}

/**
 * The counter every catalog change bumps, so processes reload only on change.
 *
 * @returns The KV key.
 */
export function catalogVersionKey(): Deno.KvKey {
  return ["catalog_version"];
}

/**
 * The key of a caller's request and token counts in one calendar minute.
 *
 * @param callerId The caller's id.
 * @param minuteStart The minute's start, epoch ms.
 * @returns The KV key.
 */
export function limitMinuteKey(
  callerId: string,
  minuteStart: number,
): Deno.KvKey {
  return ["limit_minute", callerId, minuteStart];
}

/**
 * The key of a caller's spend (charged plus held) in one calendar period.
 *
 * @param callerId The caller's id.
 * @param periodStart The period's start, epoch ms.
 * @returns The KV key.
 */
export function limitSpendKey(
  callerId: string,
  periodStart: number,
): Deno.KvKey {
  return ["limit_spend", callerId, periodStart];
}

/**
 * The key of what every gateway process together claimed of a limited
 * provider key in one calendar minute.
 *
 * @param keyId The provider key's id (never its secret).
 * @param minuteStart The minute's start, epoch ms.
 * @returns The KV key.
 */
export function providerKeyWindowKey(
  keyId: string,
  minuteStart: number,
): Deno.KvKey {
  return ["provider_key_window", keyId, minuteStart];
}

/**
 * The key of one usage counter: a field of one caller's use of one model on
 * one provider in one minute, hour or day.
 *
 * @param granularity `m`, `h` or `d`.
 * @param bucketStart The bucket's start, epoch ms.
 * @param callerId The caller.
 * @param model The model id.
 * @param provider The provider, or `""`.
 * @param field The counter, e.g. `in`, `lat:3`.
 * @returns The KV key.
 */
export function usageKey(
  granularity: "m" | "h" | "d",
  bucketStart: number,
  callerId: string,
  model: string,
  provider: string,
  field: string,
): Deno.KvKey {
  return ["usage", granularity, bucketStart, callerId, model, provider, field];
}

/**
 * The first key of a granularity's usage counters from `bucketStart` on, to
 * list a range of buckets (`start` inclusive, `end` exclusive).
 *
 * @param granularity `m`, `h` or `d`.
 * @param bucketStart Epoch ms.
 * @returns The KV key.
 */
export function usageBound(
  granularity: "m" | "h" | "d",
  bucketStart: number,
): Deno.KvKey {
  return ["usage", granularity, bucketStart];
}

/**
 * The key of a provider key's cool-down, shared by every gateway process.
 *
 * @param keyId The provider key's id (never its secret).
 * @returns The KV key.
 */
export function providerKeyHealthKey(keyId: string): Deno.KvKey {
  return ["provider_key_health", keyId];
}

/**
 * The key of a Responses state pin: which provider key holds a stored
 * response or a conversation.
 *
 * @param provider The provider.
 * @param kind `response` (an answer's id) or `conversation`.
 * @param id The provider's id for it.
 * @returns The KV key.
 */
export function responsePinKey(
  provider: string,
  kind: "response" | "conversation",
  id: string,
): Deno.KvKey {
  return ["response_pins", provider, kind, id];
}

/** A key's first part: the table its record belongs to (the layout above). */
export type KvTable =
  | "callers"
  | "caller_by_hash"
  | "unleased"
  | "leases"
  | "ledger"
  | "traces"
  | "traces_by_trace_id"
  | "catalog"
  | "catalog_version"
  | "limit_minute"
  | "limit_spend"
  | "usage"
  | "provider_key_health"
  | "provider_key_window"
  | "response_pins";

/**
 * The table a key belongs to, for code that reads every record whatever it
 * is (`store copy`).
 *
 * @example
 * ```ts
 * import { ledgerKey, tableOf } from "./kv_keys.ts";
 *
 * tableOf(ledgerKey("ck_1", "e1")); // "ledger"
 * ```
 *
 * @param key A key built by this file.
 * @returns Its table.
 */
export function tableOf(key: Deno.KvKey): KvTable {
  return key[0] as KvTable;
}

/** The parts of a usage counter's key, as {@linkcode usageKey} placed them. */
export interface UsageKeyParts {
  /** `m`, `h` or `d`. */
  granularity: "m" | "h" | "d";
  /** The bucket's start, epoch ms. */
  bucketStart: number;
  /** The caller. */
  callerId: string;
  /** The model id. */
  model: string;
  /** The provider, or `""`. */
  provider: string;
  /** The counter, e.g. `in`, `lat:3`. */
  field: string;
}

/**
 * Takes a usage counter's key apart.
 *
 * @example
 * ```ts
 * import { usageKey, usageKeyParts } from "./kv_keys.ts";
 *
 * usageKeyParts(usageKey("h", 3_600_000, "ck_1", "gpt-4o", "openai", "in")).field; // "in"
 * ```
 *
 * @param key A key built by {@linkcode usageKey}.
 * @returns Its parts.
 */
export function usageKeyParts(key: Deno.KvKey): UsageKeyParts {
  const [, granularity, bucketStart, callerId, model, provider, field] =
    key as [
      string,
      "m" | "h" | "d",
      number,
      string,
      string,
      string,
      string,
    ];
  return { granularity, bucketStart, callerId, model, provider, field };
}

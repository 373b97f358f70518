/**
 * Every Deno KV key the gateway writes, built in this one file so the layout
 * can be read at a glance and no module glues key strings together.
 *
 * Layout:
 *
 * | Key | Value |
 * |---|---|
 * | `["callers", callerId]` | {@linkcode CallerRecord} in `callers.ts` |
 * | `["caller_by_hash", sha256Hex]` | caller id (the secret itself is never stored) |
 * | `["balances", callerId]` | spendable balance, integer micro-USD |
 * | `["reservations", reservationId]` | open or closed reservation |
 * | `["reservations_by_expiry", expiresAt, reservationId]` | open reservations, for the sweep |
 * | `["leases", callerId, leaseId]` | money one gateway process holds to reserve from in memory |
 * | `["leases_by_expiry", expiresAt, callerId, leaseId]` | open leases, for the sweep |
 * | `["ledger", callerId, entryId]` | one money movement; `entryId` sorts by time |
 * | `["traces", callerId, entryId]` | one trace record; `entryId` sorts by time |
 * | `["traces_by_trace_id", callerId, traceId, entryId]` | the same record, indexed by trace id |
 * | `["anonymous_traces", entryId]` | traces of calls that never authenticated |
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
 * The key of a caller's spendable balance (micro-USD, a plain number).
 *
 * @param callerId The caller's public id.
 * @returns The KV key.
 */
export function balanceKey(callerId: string): Deno.KvKey {
  return ["balances", callerId];
}

/**
 * The key of one reservation.
 *
 * @param reservationId The reservation's id.
 * @returns The KV key.
 */
export function reservationKey(reservationId: string): Deno.KvKey {
  return ["reservations", reservationId];
}

/**
 * The index entry of an open reservation, ordered by expiry so the sweep
 * reads only the expired ones.
 *
 * @param expiresAt Epoch ms after which the reservation may be swept.
 * @param reservationId The reservation's id.
 * @returns The KV key.
 */
export function reservationExpiryKey(
  expiresAt: number,
  reservationId: string,
): Deno.KvKey {
  return ["reservations_by_expiry", expiresAt, reservationId];
}

/**
 * The end (exclusive) of the reservation expiry index for a sweep at `time`:
 * every entry before it expired strictly before `time`.
 *
 * @param time Epoch ms of the sweep.
 * @returns The KV key to end a list at.
 */
export function reservationExpiryEnd(time: number): Deno.KvKey {
  return ["reservations_by_expiry", time];
}

/**
 * The prefix of the reservation expiry index.
 *
 * @returns The KV key prefix.
 */
export function reservationExpiryPrefix(): Deno.KvKey {
  return ["reservations_by_expiry"];
}

/**
 * The key of one credit lease: money a gateway process moved out of a
 * caller's balance to take reservations from in memory.
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
 * The index entry of an open lease, ordered by expiry so the sweep reads only
 * the expired ones.
 *
 * @param expiresAt Epoch ms after which the lease may be swept.
 * @param callerId The caller whose money it holds.
 * @param leaseId The lease's id.
 * @returns The KV key.
 */
export function leaseExpiryKey(
  expiresAt: number,
  callerId: string,
  leaseId: string,
): Deno.KvKey {
  return ["leases_by_expiry", expiresAt, callerId, leaseId];
}

/**
 * The end (exclusive) of the lease expiry index for a sweep at `time`: every
 * entry before it expired strictly before `time`.
 *
 * @param time Epoch ms of the sweep.
 * @returns The KV key to end a list at.
 */
export function leaseExpiryEnd(time: number): Deno.KvKey {
  return ["leases_by_expiry", time];
}

/**
 * The prefix of the lease expiry index.
 *
 * @returns The KV key prefix.
 */
export function leaseExpiryPrefix(): Deno.KvKey {
  return ["leases_by_expiry"];
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
 * The key of a trace of a call that never authenticated.
 *
 * @param entryId A time-ordered id.
 * @returns The KV key.
 */
export function anonymousTraceKey(entryId: string): Deno.KvKey {
  return ["anonymous_traces", entryId];
}

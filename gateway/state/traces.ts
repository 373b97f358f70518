/**
 * Trace records of gateway calls, the record's contract and its storage:
 * what a record holds (the token classes its charge priced, the bodies it
 * keeps, scrubbed and bounded), its writes to the store (added to the settle
 * commit, or a commit of their own; kept for a retention period), and
 * reading them back newest first, by caller or trace id, as `GET /traces`
 * answers. The OpenTelemetry span of a call is `observe/tracing.ts`.
 *
 * @example Store and read a trace
 * ```ts
 * import { listTraces, storeTrace } from "./traces.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * await storeTrace(kv, {
 *   requestId: "req_1", traceId: "t1", callerId: "ck_1", route: "chat", status: 200,
 *   stream: false, inputTokens: 3, outputTokens: 5, cachedTokens: 0, costMicros: 12,
 *   latencyMs: 40, time: Date.now(),
 * });
 * const traces = await listTraces(kv, "ck_1", { limit: 10 });
 * kv.close();
 * ```
 *
 * @module
 */

import { z } from "zod";
import { timeOrderedId } from "../_ids.ts";
import {
  traceByTraceIdKey,
  traceByTraceIdPrefix,
  traceKey,
  tracesPrefix,
} from "./kv_keys.ts";
import type { Caller } from "./callers.ts";
import type { ProviderName } from "../upstream/providers/mod.ts";
import type { Usage } from "../upstream/usage.ts";
import { firstIssue } from "../_zod.ts";
import { GatewayError } from "../errors.ts";
import type { RouteName } from "../conventions.ts";

/**
 * Default time a trace record is kept: 30 days.
 *
 * @example
 * ```ts
 * import { DEFAULT_TRACE_RETENTION_MS } from "./traces.ts";
 *
 * DEFAULT_TRACE_RETENTION_MS / 86_400_000; // 30 days
 * ```
 */
export const DEFAULT_TRACE_RETENTION_MS: number = 30 * 24 * 60 * 60 * 1000;

/**
 * The most trace records one listing returns.
 *
 * @example
 * ```ts
 * import { listTraces, MAX_TRACE_LIMIT } from "./traces.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * await listTraces(kv, "ck_1", { limit: MAX_TRACE_LIMIT }); // at most 1 000 records
 * kv.close();
 * ```
 */
export const MAX_TRACE_LIMIT = 1000;

/** Options for storing traces. */
export interface TraceStoreOptions {
  /** How long a trace is kept, ms (KV `expireIn`); default {@linkcode DEFAULT_TRACE_RETENTION_MS}. */
  retentionMs?: number;
}

/**
 * The token classes a charge priced, each at its own price of the model:
 * the cost is these counts times those prices, rounded up once. They add up
 * to the trace's `inputTokens` and `outputTokens`.
 */
export interface ChargedTokens {
  /** Prompt tokens at the input price: neither read from a cache nor written to one. */
  input: number;
  /** Prompt tokens read from a cache, at the cached-input price. */
  cacheRead: number;
  /** Prompt tokens written to a 5-minute cache, at the cache-write price. */
  cacheWrite5m: number;
  /** Prompt tokens written to a 1-hour cache, at the 1-hour cache-write price. */
  cacheWrite1h: number;
  /** Output tokens at the output price, reasoning included. */
  output: number;
  /** The part of `output` that was reasoning. */
  reasoning: number;
}

/** A call's bodies as its trace keeps them, when the operator turned that on. */
export interface TraceBodies {
  /** The caller's request body, scrubbed and bounded by `keptBody` (`trace_bodies.ts`). */
  requestBody?: string;
  /** The answer sent back (a non-streamed call's), scrubbed and bounded. */
  responseBody?: string;
}

/** A trace record of a settled call, with the token classes its charge priced. */
export interface ChargedTraceRecord extends TraceRecord, TraceBodies {
  /** The split of the tokens the cost was worked out from. */
  charged?: ChargedTokens;
}

/**
 * The token classes a charge for `usage` prices, as a trace records them.
 *
 * @example
 * ```ts
 * import { chargedTokens } from "./traces.ts";
 *
 * chargedTokens({
 *   inputTokens: 4_000, outputTokens: 50, cachedInputTokens: 500,
 *   cacheWriteTokens: 3_337,
 * });
 * // { input: 163, cacheRead: 500, cacheWrite5m: 3_337, cacheWrite1h: 0, output: 50, reasoning: 0 }
 * ```
 *
 * @param usage The usage the cost was worked out from.
 * @returns Its classes.
 */
export function chargedTokens(usage: Usage): ChargedTokens {
  const cacheWrite5m = usage.cacheWriteTokens ?? 0;
  const cacheWrite1h = usage.cacheWrite1hTokens ?? 0;
  return {
    input: usage.inputTokens - usage.cachedInputTokens - cacheWrite5m -
      cacheWrite1h,
    cacheRead: usage.cachedInputTokens,
    cacheWrite5m,
    cacheWrite1h,
    output: usage.outputTokens,
    reasoning: usage.reasoningTokens ?? 0,
  };
}

/**
 * Adds the writes that store `trace` to an atomic operation, so the caller
 * commits them together with its own (settle writes the trace in the same
 * commit as the money). Records sort by `trace.time`, the call's start. The record goes under the caller's traces and under
 * the trace-id index.
 *
 * @example
 * ```ts
 * import { addTraceWrites, listTraces } from "./traces.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const op = kv.atomic().set(["example"], 1); // a commit of the caller's own
 * await addTraceWrites(op, {
 *   requestId: "req_1", traceId: "t1", callerId: "ck_1", route: "chat", status: 200,
 *   stream: false, inputTokens: 3, outputTokens: 5, cachedTokens: 0, costMicros: 12,
 *   latencyMs: 40, time: Date.now(),
 * }, { retentionMs: 60_000 }).commit();
 * (await listTraces(kv, "ck_1")).length; // 1
 * kv.close();
 * ```
 *
 * @param op The atomic operation to extend.
 * @param trace The record to store.
 * @param options Retention.
 * @returns The same operation, for chaining.
 */
export function addTraceWrites(
  op: Deno.AtomicOperation,
  trace: TraceRecord,
  options: TraceStoreOptions = {},
): Deno.AtomicOperation {
  const expireIn = options.retentionMs ?? DEFAULT_TRACE_RETENTION_MS;
  const entryId = timeOrderedId(trace.time);
  // The index holds no copy of the record (the record is most of a commit's
  // bytes): its key names the record's.
  return op
    .set(traceKey(trace.callerId, entryId), trace, { expireIn })
    .set(traceByTraceIdKey(trace.callerId, trace.traceId, entryId), null, {
      expireIn,
    });
}

/**
 * Stores one trace record in its own commit, without usage aggregates (the
 * gateway stores an unreserved call's trace through
 * `Billing.storeUnreservedTrace`, which adds them).
 *
 * @example
 * ```ts
 * import { storeTrace } from "./traces.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * await storeTrace(kv, {
 *   requestId: "req_1", traceId: "t1", callerId: "ck_1", route: "chat", status: 401,
 *   stream: false, inputTokens: 0, outputTokens: 0, cachedTokens: 0, costMicros: 0,
 *   latencyMs: 2, time: Date.now(), error: "Unknown model",
 * });
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @param trace The record to store.
 * @param options Retention.
 * @returns Resolves once committed.
 */
export async function storeTrace(
  kv: Deno.Kv,
  trace: TraceRecord,
  options: TraceStoreOptions = {},
): Promise<void> {
  const result = await addTraceWrites(kv.atomic(), trace, options).commit();
  if (!result.ok) throw new Error(`Could not store trace "${trace.requestId}"`);
}

/** Options for {@linkcode listTraces}. */
export interface ListTracesOptions {
  /** Only the calls sharing this trace id. */
  traceId?: string;
  /** The most records to return; default 50, at most {@linkcode MAX_TRACE_LIMIT}. */
  limit?: number;
}

/**
 * Lists one caller's trace records, newest first.
 *
 * @example
 * ```ts
 * import { listTraces, storeTrace } from "./traces.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * for (const [requestId, traceId] of [["req_1", "run-a"], ["req_2", "run-b"]]) {
 *   await storeTrace(kv, {
 *     requestId, traceId, callerId: "ck_1", route: "chat", status: 200,
 *     stream: false, inputTokens: 1, outputTokens: 1, cachedTokens: 0, costMicros: 1,
 *     latencyMs: 1, time: Date.now(),
 *   });
 * }
 * (await listTraces(kv, "ck_1", { traceId: "run-a" })).map((t) => t.requestId); // ["req_1"]
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @param callerId Whose traces.
 * @param options Trace id filter and limit.
 * @returns The records, newest first (a settled call's with its {@linkcode ChargedTokens}).
 */
export async function listTraces(
  kv: Deno.Kv,
  callerId: string,
  options: ListTracesOptions = {},
): Promise<ChargedTraceRecord[]> {
  const limit = Math.min(options.limit ?? 50, MAX_TRACE_LIMIT);
  const traces: ChargedTraceRecord[] = [];
  if (options.traceId === undefined) {
    const prefix = tracesPrefix(callerId);
    for await (
      const entry of kv.list<ChargedTraceRecord>({ prefix }, {
        reverse: true,
        limit,
      })
    ) {
      traces.push(entry.value);
    }
    return traces;
  }
  const prefix = traceByTraceIdPrefix(callerId, options.traceId);
  const entryIds: string[] = [];
  for await (
    const entry of kv.list<ChargedTraceRecord | null>({ prefix }, {
      reverse: true,
      limit,
    })
  ) {
    // Index entries written before it held no copy carry the record itself.
    if (entry.value) traces.push(entry.value);
    else entryIds.push(entry.key.at(-1) as string);
  }
  for (let i = 0; i < entryIds.length; i += 10) {
    const records = await kv.getMany<ChargedTraceRecord[]>(
      entryIds.slice(i, i + 10).map((id) => traceKey(callerId, id)),
    );
    for (const record of records) if (record.value) traces.push(record.value);
  }
  return traces.sort((a, b) => b.time - a.time);
}

const tracesQuerySchema = z.object({
  trace_id: z.string().min(1).max(256).optional(),
  limit: z.coerce.number().int().min(1).max(MAX_TRACE_LIMIT).optional(),
});

/** The JSON body of `GET /traces`. */
export interface TracesResponse {
  /** Always `"list"`. */
  object: "list";
  /** The caller's own trace records, newest first. */
  data: ChargedTraceRecord[];
}

/**
 * Builds the body of `GET /traces?trace_id=&limit=` for the authenticated
 * caller: only that caller's records, newest first.
 *
 * @example
 * ```ts
 * import { tracesResponse } from "./traces.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const body = await tracesResponse(kv, { id: "ck_1", name: "alice" }, { limit: "10" });
 * console.log(body); // { object: "list", data: [] }
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @param caller The authenticated caller.
 * @param query The request's query parameters.
 * @returns The response body.
 * @throws {GatewayError} A 400 when `limit` is not an integer from 1 to 1000 or `trace_id` is empty.
 */
export async function tracesResponse(
  kv: Deno.Kv,
  caller: Caller,
  query: URLSearchParams | Record<string, string | undefined>,
): Promise<TracesResponse> {
  const raw = query instanceof URLSearchParams
    ? Object.fromEntries(query)
    : query;
  const parsed = tracesQuerySchema.safeParse(raw);
  if (!parsed.success) {
    const { param, message } = firstIssue(parsed.error);
    throw new GatewayError(
      400,
      `Invalid query parameter "${param}": ${message}`,
      { code: "invalid_request", param },
    );
  }
  const data = await listTraces(kv, caller.id, {
    traceId: parsed.data.trace_id,
    limit: parsed.data.limit,
  });
  return { object: "list", data };
}

/** One trace record: what the gateway saw of one call. */
export interface TraceRecord {
  /** Unique id of this call (also the `x-request-id` header). */
  requestId: string;
  /** Groups calls: the caller's `Trace-Id` header, or a new id. */
  traceId: string;
  /** Caller key id (an unauthenticated request is refused before it is traced). */
  callerId: string;
  /** Model id as the caller sent it. */
  model?: string;
  /** Route name. */
  route: RouteName;
  /** Provider, once the model is known. */
  provider?: ProviderName;
  /** Short id of the provider key used, if any. */
  providerKeyId?: string;
  /** HTTP status returned to the caller. */
  status: number;
  /** Whether the caller asked for a stream. */
  stream: boolean;
  /** Prompt tokens, cached included. */
  inputTokens: number;
  /** Completion tokens. */
  outputTokens: number;
  /** Cached prompt tokens. */
  cachedTokens: number;
  /** Cost charged, micro-USD. */
  costMicros: number;
  /** Wall time from request to last byte, ms. */
  latencyMs: number;
  /** Time to first token for streams, ms. */
  ttftMs?: number;
  /** Error message returned to the caller, if any (never a provider key). */
  error?: string;
  /** Figures estimated rather than reported by the provider (an abandoned or broken stream). */
  estimated?: ("input" | "output")[];
  /** Every model tried, in order, when the call could fall back (the last one served it, or failed it). */
  attempts?: CallAttempt[];
  /** Epoch ms when the call started. */
  time: number;
}

/** One model a call tried. */
export interface CallAttempt {
  /** The model id. */
  model: string;
  /** Its provider. */
  provider: ProviderName;
  /** 200 when it served the call, else the status it failed with. */
  status: number;
  /** Why it failed. */
  error?: string;
}

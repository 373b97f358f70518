/**
 * Usage aggregates for the console, the caller page and anyone who wants a
 * picture over time without scanning traces: per minute, hour and day, per
 * caller, model and provider, the requests, errors by status class, tokens,
 * cost, and latency and time-to-first-token histograms.
 *
 * They are KV counters (`sum` mutations: commutative, so they need no read
 * and never conflict) added to the same atomic commit as the trace and the
 * ledger entry, and merged within a commit, so a batch of settles adds one
 * mutation per counter it touches: a call adds five to seven per bucket size
 * (tokens in and out, cost, its latency bucket; cached tokens, its TTFT
 * bucket and its status class when it has them; requests are the latency
 * histogram's total). Several gateway processes on one KV add to the same
 * counters: one picture.
 *
 * Keys: `["usage", "m" | "h" | "d", bucketStart, callerId, model, provider,
 * field]` = `Deno.KvU64`, built in `kv_keys.ts`.
 *
 * @module
 */
import type { TraceRecord } from "./traces.ts";
import { usageBound, usageKey, usageKeyParts } from "./kv_keys.ts";

/** A bucket size: minute, hour or day. */
export type Granularity = "m" | "h" | "d";

const SIZE_MS: Record<Granularity, number> = {
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** Upper bounds of the latency and TTFT histogram buckets, ms (the last is open). */
export const LATENCY_BOUNDS_MS: readonly number[] = [
  5,
  10,
  25,
  50,
  100,
  250,
  500,
  1000,
  2500,
  5000,
  10_000,
  30_000,
  60_000,
];

/** The counters of one group in one bucket. */
export interface UsageCounters {
  /** Calls. */
  requests: number;
  /** Calls answered 4xx. */
  errors4xx: number;
  /** Calls answered 5xx. */
  errors5xx: number;
  /** Prompt tokens, cached included. */
  inputTokens: number;
  /** Completion tokens. */
  outputTokens: number;
  /** Cached prompt tokens. */
  cachedTokens: number;
  /** Cost, micro-USD. */
  costMicros: number;
  /** Latency histogram: counts per {@linkcode LATENCY_BOUNDS_MS} bucket, plus one open bucket. */
  latency: number[];
  /** TTFT histogram (streams), same buckets. */
  ttft: number[];
}

/**
 * An empty set of counters.
 *
 * @example
 * ```ts
 * import { emptyCounters, LATENCY_BOUNDS_MS } from "./usage_buckets.ts";
 *
 * emptyCounters().latency.length === LATENCY_BOUNDS_MS.length + 1; // true: one open bucket
 * ```
 *
 * @returns Zeroes.
 */
export function emptyCounters(): UsageCounters {
  return {
    requests: 0,
    errors4xx: 0,
    errors5xx: 0,
    inputTokens: 0,
    outputTokens: 0,
    cachedTokens: 0,
    costMicros: 0,
    latency: new Array(LATENCY_BOUNDS_MS.length + 1).fill(0),
    ttft: new Array(LATENCY_BOUNDS_MS.length + 1).fill(0),
  };
}

function histogramIndex(ms: number): number {
  const i = LATENCY_BOUNDS_MS.findIndex((bound) => ms <= bound);
  return i === -1 ? LATENCY_BOUNDS_MS.length : i;
}

/**
 * The start of the bucket holding `time`.
 *
 * @example
 * ```ts
 * import { bucketStart } from "./usage_buckets.ts";
 *
 * bucketStart(Date.parse("2026-11-25T13:45:12Z"), "h"); // Date.parse("2026-11-25T13:00:00Z")
 * ```
 *
 * @param time Epoch ms.
 * @param granularity The bucket size.
 * @returns The bucket's start, epoch ms.
 */
export function bucketStart(time: number, granularity: Granularity): number {
  return time - (time % SIZE_MS[granularity]);
}

/**
 * How long each bucket size is kept, ms: minute buckets 48 hours, hour
 * buckets 35 days, day buckets the configured retention.
 *
 * @example
 * ```ts
 * import { retentionMs } from "./usage_buckets.ts";
 *
 * retentionMs("d", 400) / 86_400_000; // 400
 * ```
 *
 * @param granularity The bucket size.
 * @param dayRetentionDays How long day buckets are kept, days.
 * @returns Milliseconds.
 */
export function retentionMs(
  granularity: Granularity,
  dayRetentionDays: number,
): number {
  return granularity === "m"
    ? 48 * SIZE_MS.h
    : granularity === "h"
    ? 35 * SIZE_MS.d
    : dayRetentionDays * SIZE_MS.d;
}

/**
 * The counters a batch of traces adds, merged by key, written at the end
 * into the batch's atomic commit.
 */
export class UsageSums {
  // By bucket and group: the key prefix once, then a number per field
  // (plain numbers while adding; a KV sum each when written).
  readonly #groups = new Map<
    string,
    {
      base: [Granularity, number, string, string, string];
      fields: Map<string, number>;
    }
  >();

  /** Whether nothing was added. */
  get empty(): boolean {
    return this.#groups.size === 0;
  }

  /**
   * Adds one finished call to every bucket size.
   *
   * @param trace The call's trace (its cost included).
   */
  add(trace: TraceRecord): void {
    const model = trace.model ?? "-";
    const provider = trace.provider ?? "-";
    const status = trace.status >= 500
      ? "5xx"
      : trace.status >= 400
      ? "4xx"
      : "";
    const latency = `lat:${histogramIndex(trace.latencyMs)}`;
    const ttft = trace.ttftMs === undefined
      ? ""
      : `ttft:${histogramIndex(trace.ttftMs)}`;
    for (const granularity of ["m", "h", "d"] as const) {
      const start = bucketStart(trace.time, granularity);
      const id =
        `${granularity}\u0000${start}\u0000${trace.callerId}\u0000${model}\u0000${provider}`;
      let group = this.#groups.get(id);
      if (!group) {
        group = {
          base: [granularity, start, trace.callerId, model, provider],
          fields: new Map(),
        };
        this.#groups.set(id, group);
      }
      const fields = group.fields;
      const add = (field: string, value: number) => {
        if (value > 0) fields.set(field, (fields.get(field) ?? 0) + value);
      };
      // No "requests" counter: every call adds one to the latency histogram.
      add(latency, 1);
      if (status) add(status, 1);
      if (ttft) add(ttft, 1);
      add("in", trace.inputTokens);
      add("out", trace.outputTokens);
      add("cached", trace.cachedTokens);
      add("cost", trace.costMicros);
    }
  }

  /**
   * Writes the merged counters into an atomic operation.
   *
   * @param op The commit the traces are part of.
   * @returns The same operation.
   */
  writeTo(op: Deno.AtomicOperation): Deno.AtomicOperation {
    for (const { base, fields } of this.#groups.values()) {
      for (const [field, value] of fields) {
        op.sum(usageKey(...base, field), BigInt(Math.round(value)));
      }
    }
    return op;
  }
}

/** One group's counters in one bucket, as read back. */
export interface UsageRow {
  /** Bucket start, epoch ms. */
  time: number;
  /** Caller key id. */
  callerId: string;
  /** Model id (`-` when the call named none the gateway knew). */
  model: string;
  /** Provider (`-` when none). */
  provider: string;
  /** The counters. */
  counters: UsageCounters;
}

/**
 * Reads the buckets of one size from `from` (inclusive) to `to` (exclusive).
 *
 * @param kv The gateway's KV.
 * @param granularity The bucket size.
 * @param from Start, epoch ms.
 * @param to End, epoch ms.
 * @param callerId Only this caller's rows, when set (others are skipped as read).
 * @returns One row per bucket and group.
 */
export async function readUsage(
  kv: Deno.Kv,
  granularity: Granularity,
  from: number,
  to: number,
  callerId?: string,
): Promise<UsageRow[]> {
  const rows = new Map<string, UsageRow>();
  const entries = kv.list<Deno.KvU64>({
    start: usageBound(granularity, bucketStart(from, granularity)),
    end: usageBound(granularity, to),
  }, { batchSize: 500 });
  for await (const { key, value } of entries) {
    const {
      bucketStart: time,
      callerId: caller,
      model,
      provider,
      field,
    } = usageKeyParts(key);
    if (callerId !== undefined && caller !== callerId) continue;
    const id = `${time}\u0000${caller}\u0000${model}\u0000${provider}`;
    let row = rows.get(id);
    if (!row) {
      row = {
        time,
        callerId: caller,
        model,
        provider,
        counters: emptyCounters(),
      };
      rows.set(id, row);
    }
    applyField(row.counters, field, Number(value.value));
  }
  for (const row of rows.values()) {
    row.counters.requests = row.counters.latency.reduce((a, b) => a + b, 0);
  }
  return [...rows.values()];
}

function applyField(c: UsageCounters, field: string, n: number): void {
  switch (field) {
    case "4xx":
      c.errors4xx += n;
      return;
    case "5xx":
      c.errors5xx += n;
      return;
    case "in":
      c.inputTokens += n;
      return;
    case "out":
      c.outputTokens += n;
      return;
    case "cached":
      c.cachedTokens += n;
      return;
    case "cost":
      c.costMicros += n;
      return;
  }
  const [histogram, index] = field.split(":");
  const i = Number(index);
  if (histogram === "lat" && c.latency[i] !== undefined) c.latency[i] += n;
  if (histogram === "ttft" && c.ttft[i] !== undefined) c.ttft[i] += n;
}

/**
 * Adds `b` into `a`.
 *
 * @example
 * ```ts
 * import { emptyCounters, mergeCounters } from "./usage_buckets.ts";
 *
 * const total = emptyCounters();
 * mergeCounters(total, { ...emptyCounters(), requests: 2, inputTokens: 40 });
 * total.inputTokens; // 40
 * ```
 *
 * @param a The counters added to.
 * @param b The counters added.
 */
export function mergeCounters(a: UsageCounters, b: UsageCounters): void {
  a.requests += b.requests;
  a.errors4xx += b.errors4xx;
  a.errors5xx += b.errors5xx;
  a.inputTokens += b.inputTokens;
  a.outputTokens += b.outputTokens;
  a.cachedTokens += b.cachedTokens;
  a.costMicros += b.costMicros;
  b.latency.forEach((n, i) => a.latency[i] += n);
  b.ttft.forEach((n, i) => a.ttft[i] += n);
}

/**
 * A percentile from a histogram, interpolated within its bucket (the open
 * last bucket answers its lower bound).
 *
 * @example
 * ```ts
 * import { percentile } from "./usage_buckets.ts";
 *
 * // Ten calls, all in the 50-100 ms bucket.
 * percentile([0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0], 0.5); // 75
 * ```
 *
 * @param histogram Counts per bucket.
 * @param q The quantile, 0 to 1.
 * @returns Milliseconds, or `null` with no samples.
 */
export function percentile(histogram: number[], q: number): number | null {
  const total = histogram.reduce((sum, n) => sum + n, 0);
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < histogram.length; i++) {
    const n = histogram[i];
    if (n > 0 && seen + n >= rank) {
      const low = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1];
      const high = LATENCY_BOUNDS_MS[i] ?? low;
      return low + (high - low) * Math.min(1, (rank - seen) / n);
    }
    seen += n;
  }
  return LATENCY_BOUNDS_MS.at(-1)!;
}

/**
 * Deletes buckets past their retention.
 *
 * @param kv The gateway's KV.
 * @param now The current time.
 * @param dayRetentionDays How long day buckets are kept.
 * @returns How many keys were deleted.
 */
export async function sweepUsage(
  kv: Deno.Kv,
  now: number,
  dayRetentionDays: number,
): Promise<number> {
  let deleted = 0;
  for (const granularity of ["m", "h", "d"] as const) {
    const cutoff = now - retentionMs(granularity, dayRetentionDays);
    let op = kv.atomic();
    let pending = 0;
    for await (
      const { key } of kv.list({
        start: usageBound(granularity, 0),
        end: usageBound(granularity, cutoff),
      }, { limit: 5_000 })
    ) {
      op.delete(key);
      if (++pending === 500) {
        await op.commit();
        deleted += pending;
        op = kv.atomic();
        pending = 0;
      }
    }
    if (pending > 0) {
      await op.commit();
      deleted += pending;
    }
  }
  return deleted;
}

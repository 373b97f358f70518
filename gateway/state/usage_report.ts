/**
 * Usage reports over a time range, built from the aggregates of
 * `usage_buckets.ts`: totals, a time series, and breakdowns by caller, model
 * and provider, with latency and TTFT percentiles from the histograms. A 30-day
 * report reads 30 day-buckets per group, whatever the traffic was.
 *
 * @module
 */
import { getCaller } from "./callers.ts";
import { GatewayError } from "../errors.ts";
import type { CallerLimits } from "./limits/limits.ts";
import {
  emptyCounters,
  type Granularity,
  mergeCounters,
  percentile,
  readUsage,
  type UsageCounters,
  type UsageRow,
} from "./usage_buckets.ts";

/** The ranges a report covers, and the bucket size each reads. */
export const RANGES: Record<
  string,
  { ms: number; granularity: Granularity; step: number }
> = {
  "1h": { ms: 3_600_000, granularity: "m", step: 60_000 },
  "24h": { ms: 86_400_000, granularity: "h", step: 3_600_000 },
  "7d": { ms: 7 * 86_400_000, granularity: "h", step: 3_600_000 },
  "30d": { ms: 30 * 86_400_000, granularity: "d", step: 86_400_000 },
};

/** Summary figures of a set of counters. */
export interface UsageFigures {
  /** Calls. */
  requests: number;
  /** Calls answered 4xx and 5xx. */
  errors: { "4xx": number; "5xx": number };
  /** Share of calls answered 4xx or 5xx. */
  errorRate: number;
  /** Prompt tokens, cached included. */
  inputTokens: number;
  /** Completion tokens. */
  outputTokens: number;
  /** Cached prompt tokens. */
  cachedTokens: number;
  /** Cost, USD. */
  costUsd: number;
  /** Latency percentiles, ms (from the histogram; `null` without calls). */
  latencyMs: { p50: number | null; p95: number | null; p99: number | null };
  /** TTFT percentiles of streamed calls, ms. */
  ttftMs: { p50: number | null; p95: number | null; p99: number | null };
}

/** A report over one range. */
export interface UsageReport {
  /** The range's name. */
  range: string;
  /** Start and end, ISO 8601. */
  from: string;
  /** End. */
  to: string;
  /** The bucket size the series uses, ms. */
  stepMs: number;
  /** Everything in the range. */
  totals: UsageFigures;
  /** One point per bucket (empty buckets included), oldest first. */
  series: ({ time: number } & UsageFigures)[];
  /** By caller key id (admin reports only). */
  byCaller?: ({ callerId: string } & UsageFigures)[];
  /** By model. */
  byModel: ({ model: string } & UsageFigures)[];
  /** By provider. */
  byProvider: ({ provider: string } & UsageFigures)[];
  /**
   * Spend per bucket of each model, USD, one number per point of `series`
   * (the models of `byModel`, in its order), for a chart stacked by model.
   */
  spendByModel: { model: string; costUsd: number[] }[];
  /** The caller's limits, in a report of one caller (`null`: none set). */
  limits?: CallerLimits | null;
}

/** The figures of a set of counters. */
export function figures(c: UsageCounters): UsageFigures {
  const errors = c.errors4xx + c.errors5xx;
  const pct = (h: number[], q: number) => {
    const value = percentile(h, q);
    return value === null ? null : Math.round(value * 10) / 10;
  };
  return {
    requests: c.requests,
    errors: { "4xx": c.errors4xx, "5xx": c.errors5xx },
    errorRate: c.requests === 0 ? 0 : errors / c.requests,
    inputTokens: c.inputTokens,
    outputTokens: c.outputTokens,
    cachedTokens: c.cachedTokens,
    costUsd: c.costMicros / 1_000_000,
    latencyMs: {
      p50: pct(c.latency, 0.5),
      p95: pct(c.latency, 0.95),
      p99: pct(c.latency, 0.99),
    },
    ttftMs: {
      p50: pct(c.ttft, 0.5),
      p95: pct(c.ttft, 0.95),
      p99: pct(c.ttft, 0.99),
    },
  };
}

function groupBy<K extends string>(
  rows: UsageRow[],
  key: (row: UsageRow) => string,
  name: K,
): ({ [P in K]: string } & UsageFigures)[] {
  const groups = new Map<string, UsageCounters>();
  for (const row of rows) {
    const id = key(row);
    let counters = groups.get(id);
    if (!counters) groups.set(id, counters = emptyCounters());
    mergeCounters(counters, row.counters);
  }
  return [...groups].map(([id, counters]) =>
    ({
      [name]: id,
      ...figures(counters),
    }) as { [P in K]: string } & UsageFigures
  ).sort((a, b) => b.costUsd - a.costUsd || b.requests - a.requests);
}

/**
 * Builds the report of one range.
 *
 * @param kv The gateway's KV.
 * @param range `1h`, `24h`, `7d` or `30d`.
 * @param options `callerId`: only that caller (a caller's own page), with their limits; `byCaller`: add the breakdown by caller; `now`: the clock.
 * @returns The report.
 * @throws {GatewayError} A 400 for an unknown range.
 */
export async function usageReport(
  kv: Deno.Kv,
  range: string,
  options: { callerId?: string; byCaller?: boolean; now?: number } = {},
): Promise<UsageReport> {
  const spec = RANGES[range];
  if (!spec) {
    throw new GatewayError(
      400,
      `Invalid query parameter "range": expected one of ${
        Object.keys(RANGES).join(", ")
      }`,
      { code: "invalid_request", param: "range" },
    );
  }
  const now = options.now ?? Date.now();
  const end = now - (now % spec.step) + spec.step;
  const start = end - spec.ms;
  const rows = await readUsage(
    kv,
    spec.granularity,
    start,
    end,
    options.callerId,
  );
  const total = emptyCounters();
  const byTime = new Map<number, UsageCounters>();
  for (const row of rows) {
    mergeCounters(total, row.counters);
    let point = byTime.get(row.time);
    if (!point) byTime.set(row.time, point = emptyCounters());
    mergeCounters(point, row.counters);
  }
  const series: UsageReport["series"] = [];
  for (let time = start; time < end; time += spec.step) {
    series.push({ time, ...figures(byTime.get(time) ?? emptyCounters()) });
  }
  const byModel = groupBy(rows, (r) => r.model, "model");
  const spend = new Map(
    byModel.map((row) => [row.model, series.map(() => 0)]),
  );
  for (const row of rows) {
    const index = (row.time - start) / spec.step;
    const costs = spend.get(row.model);
    if (costs && index >= 0 && index < costs.length) {
      costs[index] += row.counters.costMicros;
    }
  }
  const caller = options.callerId === undefined
    ? undefined
    : await getCaller(kv, options.callerId);
  return {
    range,
    from: new Date(start).toISOString(),
    to: new Date(end).toISOString(),
    stepMs: spec.step,
    totals: figures(total),
    series,
    ...(options.byCaller &&
      { byCaller: groupBy(rows, (r) => r.callerId, "callerId") }),
    byModel,
    byProvider: groupBy(rows, (r) => r.provider, "provider"),
    spendByModel: [...spend].map(([model, micros]) => ({
      model,
      costUsd: micros.map((m) => m / 1_000_000),
    })),
    ...(caller !== undefined && { limits: caller?.limits ?? null }),
  };
}

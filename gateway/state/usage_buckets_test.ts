import assert from "node:assert/strict";
import type { TraceRecord } from "./traces.ts";
import {
  bucketStart,
  percentile,
  readUsage,
  sweepUsage,
  UsageSums,
} from "./usage_buckets.ts";
import { usageReport } from "./usage_report.ts";

const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);

function trace(overrides: Partial<TraceRecord> = {}): TraceRecord {
  return {
    requestId: crypto.randomUUID(),
    traceId: "t",
    callerId: "ck_a",
    model: "gpt-4o-mini",
    route: "chat",
    provider: "openai",
    status: 200,
    stream: false,
    inputTokens: 10,
    outputTokens: 5,
    cachedTokens: 0,
    costMicros: 7,
    latencyMs: 40,
    time: T0 + 5_000,
    ...overrides,
  };
}

async function commit(kv: Deno.Kv, traces: TraceRecord[]) {
  const sums = new UsageSums();
  for (const t of traces) sums.add(t);
  assert.ok((await sums.writeTo(kv.atomic()).commit()).ok);
}

Deno.test("sums merge within a commit and add up across commits, per bucket size and group", async () => {
  using kv = await Deno.openKv(":memory:");
  await commit(kv, [
    trace(),
    trace({ status: 502, costMicros: 0, latencyMs: 3_000 }),
    trace({
      model: "claude-haiku-4-5",
      provider: "anthropic",
      stream: true,
      ttftMs: 20,
    }),
  ]);
  await commit(kv, [trace({ callerId: "ck_b", time: T0 + 61_000 })]);
  const minutes = await readUsage(kv, "m", T0, T0 + 120_000);
  assert.equal(minutes.length, 3); // a/gpt, a/claude in minute 0; b/gpt in minute 1
  const gpt = minutes.find((r) =>
    r.callerId === "ck_a" && r.model === "gpt-4o-mini"
  )!;
  assert.equal(gpt.counters.requests, 2);
  assert.equal(gpt.counters.errors5xx, 1);
  assert.equal(gpt.counters.costMicros, 7);
  assert.equal(gpt.counters.inputTokens, 20);
  const days = await readUsage(kv, "d", T0, T0 + 86_400_000);
  assert.equal(days.reduce((n, r) => n + r.counters.requests, 0), 4);
  assert.equal(
    (await readUsage(kv, "h", T0, T0 + 3_600_000, "ck_b")).length,
    1,
    "a caller's own rows only",
  );
});

Deno.test("percentiles interpolate within histogram buckets", () => {
  // LATENCY_BOUNDS_MS starts 5, 10, 25, 50, …
  assert.equal(percentile([0, 0, 0, 0], 0.5), null);
  assert.equal(percentile([0, 0, 10, 0], 0.5), 17.5); // half way into (10, 25]
  assert.equal(percentile([10, 0, 0, 0], 1), 5);
});

Deno.test("a report fills every bucket of its range and breaks usage down by caller, model and provider", async () => {
  using kv = await Deno.openKv(":memory:");
  await commit(kv, [
    trace(),
    trace({
      callerId: "ck_b",
      model: "claude-haiku-4-5",
      provider: "anthropic",
      costMicros: 20,
    }),
  ]);
  const report = await usageReport(kv, "1h", {
    byCaller: true,
    now: T0 + 10_000,
  });
  assert.equal(report.series.length, 60);
  assert.equal(report.totals.requests, 2);
  assert.equal(report.totals.costUsd, 0.000027);
  assert.deepEqual(report.byCaller?.map((r) => r.callerId), ["ck_b", "ck_a"]);
  assert.deepEqual(report.byProvider.map((r) => r.provider), [
    "anthropic",
    "openai",
  ]);
  const mine = await usageReport(kv, "30d", {
    callerId: "ck_a",
    now: T0 + 10_000,
  });
  assert.equal(mine.series.length, 30);
  assert.equal(mine.totals.requests, 1);
  assert.equal(mine.byCaller, undefined);
  await assert.rejects(
    usageReport(kv, "2y"),
    /expected one of 1h, 24h, 7d, 30d/,
  );
});

Deno.test("the sweep deletes buckets past their retention and keeps the rest", async () => {
  using kv = await Deno.openKv(":memory:");
  const old = T0 - 3 * 86_400_000;
  await commit(kv, [trace({ time: old }), trace()]);
  await sweepUsage(kv, T0 + 1_000, 400);
  // Minute buckets live 48 hours: the old one's went, hour and day stay.
  assert.equal((await readUsage(kv, "m", old - 1, T0 + 60_000)).length, 1);
  assert.equal((await readUsage(kv, "h", old - 1, T0 + 3_600_000)).length, 2);
  await sweepUsage(kv, T0 + 1_000, 1);
  assert.equal((await readUsage(kv, "d", 0, T0 + 86_400_000)).length, 1);
  assert.equal(bucketStart(T0 + 59_999, "m"), T0);
});

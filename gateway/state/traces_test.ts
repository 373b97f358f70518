import assert from "node:assert/strict";
import { listTraces, storeTrace, tracesResponse } from "./traces.ts";
import type { TraceRecord } from "./traces.ts";
import { GatewayError } from "../errors.ts";

function traceAt(
  time: number,
  overrides: Partial<TraceRecord> = {},
): TraceRecord {
  return {
    requestId: `req_${time}`,
    traceId: "t-default",
    callerId: "ck_a",
    model: "gpt-4o",
    route: "chat",
    provider: "openai",
    status: 200,
    stream: false,
    inputTokens: 1,
    outputTokens: 1,
    cachedTokens: 0,
    costMicros: 1,
    latencyMs: 1,
    time,
    ...overrides,
  };
}

async function withKv(fn: (kv: Deno.Kv) => Promise<void>): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  try {
    await fn(kv);
  } finally {
    kv.close();
  }
}

Deno.test("listTraces() returns one caller's traces newest first, up to the limit", async () => {
  await withKv(async (kv) => {
    for (const time of [1_000, 3_000, 2_000]) {
      await storeTrace(kv, traceAt(time));
    }
    await storeTrace(kv, traceAt(4_000, { callerId: "ck_b" }));
    const traces = await listTraces(kv, "ck_a");
    assert.deepEqual(traces.map((trace) => trace.requestId), [
      "req_3000",
      "req_2000",
      "req_1000",
    ]);
    assert.deepEqual(
      (await listTraces(kv, "ck_a", { limit: 1 })).map((trace) => trace.time),
      [3_000],
    );
    assert.deepEqual(
      (await listTraces(kv, "ck_b")).map((trace) => trace.requestId),
      ["req_4000"],
    );
  });
});

Deno.test("listTraces() filters by trace id through the secondary index", async () => {
  await withKv(async (kv) => {
    await storeTrace(kv, traceAt(1_000, { traceId: "agent-run-1" }));
    await storeTrace(kv, traceAt(2_000, { traceId: "agent-run-2" }));
    await storeTrace(kv, traceAt(3_000, { traceId: "agent-run-1" }));
    await storeTrace(
      kv,
      traceAt(4_000, { traceId: "agent-run-1", callerId: "ck_other" }),
    );
    const traces = await listTraces(kv, "ck_a", { traceId: "agent-run-1" });
    assert.deepEqual(traces.map((trace) => trace.requestId), [
      "req_3000",
      "req_1000",
    ]);
  });
});

Deno.test("listTraces() reads index entries that still hold a copy of the record", async () => {
  await withKv(async (kv) => {
    await storeTrace(kv, traceAt(3_000, { traceId: "agent-run-1" }));
    // As the index was written before it held only the key.
    const old = traceAt(1_000, { traceId: "agent-run-1" });
    await kv.set(
      ["traces_by_trace_id", "ck_a", "agent-run-1", "00000000zz"],
      old,
    );
    const traces = await listTraces(kv, "ck_a", { traceId: "agent-run-1" });
    assert.deepEqual(traces.map((trace) => trace.requestId), [
      "req_3000",
      "req_1000",
    ]);
  });
});

Deno.test("tracesResponse() answers only the caller's traces and rejects a bad limit", async () => {
  await withKv(async (kv) => {
    await storeTrace(kv, traceAt(1_000, { traceId: "x" }));
    await storeTrace(kv, traceAt(2_000, { traceId: "y" }));
    const caller = { id: "ck_a", name: "a" };
    const all = await tracesResponse(kv, caller, new URLSearchParams());
    assert.equal(all.object, "list");
    assert.equal(all.data.length, 2);
    const filtered = await tracesResponse(
      kv,
      caller,
      new URLSearchParams("trace_id=x&limit=5"),
    );
    assert.deepEqual(filtered.data.map((trace) => trace.traceId), ["x"]);
    assert.deepEqual(
      (await tracesResponse(kv, { id: "ck_z", name: "z" }, {})).data,
      [],
    );
    await assert.rejects(
      tracesResponse(kv, caller, { limit: "0" }),
      GatewayError,
    );
    await assert.rejects(
      tracesResponse(kv, caller, { limit: "many" }),
      /limit/,
    );
  });
});

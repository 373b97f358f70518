import assert from "node:assert/strict";
import { listTraces, recordTrace, tracesResponse } from "./tracing.ts";
import type { TraceRecord } from "./tracing.ts";
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
      await recordTrace(kv, traceAt(time));
    }
    await recordTrace(kv, traceAt(4_000, { callerId: "ck_b" }));
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
    await recordTrace(kv, traceAt(1_000, { traceId: "agent-run-1" }));
    await recordTrace(kv, traceAt(2_000, { traceId: "agent-run-2" }));
    await recordTrace(kv, traceAt(3_000, { traceId: "agent-run-1" }));
    await recordTrace(
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
    await recordTrace(kv, traceAt(3_000, { traceId: "agent-run-1" }));
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
    await recordTrace(kv, traceAt(1_000, { traceId: "x" }));
    await recordTrace(kv, traceAt(2_000, { traceId: "y" }));
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

interface OtlpAttribute {
  key: string;
  value: {
    stringValue?: string;
    intValue?: string | number;
    doubleValue?: number;
    boolValue?: boolean;
  };
}

interface OtlpSpan {
  name: string;
  attributes: OtlpAttribute[];
}

Deno.test("recordSpan() exports a span with GenAI attributes through Deno's OpenTelemetry", async () => {
  const bodies: string[] = [];
  const receiver = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      if (new URL(request.url).pathname === "/v1/traces") {
        bodies.push(
          await request.text(),
        );
      } else await request.body?.cancel();
      return Response.json({});
    },
  );
  try {
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("../../tests/fixtures/emit_span.ts", import.meta.url).pathname,
      ],
      env: {
        OTEL_DENO: "true",
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.addr.port}`,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_BSP_SCHEDULE_DELAY: "100",
        OTEL_METRIC_EXPORT_INTERVAL: "100",
      },
      stdout: "null",
      stderr: "piped",
      signal: AbortSignal.timeout(20_000),
    });
    const { code, stderr } = await child.output();
    assert.equal(code, 0, new TextDecoder().decode(stderr));

    const spans: OtlpSpan[] = bodies.flatMap((body) =>
      JSON.parse(body).resourceSpans.flatMap((
        resource: { scopeSpans: { spans: OtlpSpan[] }[] },
      ) => resource.scopeSpans.flatMap((scope) => scope.spans))
    );
    const span = spans.find((candidate) =>
      candidate.name === "chat claude-haiku-4-5"
    );
    assert.ok(
      span,
      `no gateway span among ${JSON.stringify(spans.map((s) => s.name))}`,
    );
    const attributes = Object.fromEntries(
      span.attributes.map((
        attribute,
      ) => [attribute.key, Object.values(attribute.value)[0]]),
    );
    assert.equal(attributes["gen_ai.operation.name"], "chat");
    assert.equal(attributes["gen_ai.provider.name"], "anthropic");
    assert.equal(attributes["gen_ai.system"], "anthropic");
    assert.equal(attributes["gen_ai.request.model"], "claude-haiku-4-5");
    assert.equal(Number(attributes["gen_ai.usage.input_tokens"]), 42);
    assert.equal(Number(attributes["gen_ai.usage.output_tokens"]), 7);
    assert.equal(attributes["mcpkit.caller_id"], "ck_span");
    assert.equal(attributes["mcpkit.request_id"], "req_span");
    assert.equal(attributes["mcpkit.trace_id"], "trace_span");
    assert.equal(Number(attributes["mcpkit.cost_micros"]), 1234);
    assert.equal(Number(attributes["http.response.status_code"]), 200);
  } finally {
    await receiver.shutdown();
  }
});

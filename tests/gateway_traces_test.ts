/**
 * Tracing end to end: one trace record per call with the spec's fields,
 * `Trace-Id` grouping, `GET /traces` scoped to the caller, rejected calls
 * traced at no cost, abandoned streams billed and cancelled upstream, and a
 * GenAI span exported over OTLP/HTTP by a gateway process.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createCaller } from "../gateway/state/callers.ts";
import { listLedger } from "../gateway/state/credits/ledger.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { providerKeyId } from "../gateway/upstream/key_pool.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import type { RouteName } from "../gateway/conventions.ts";
import type { TraceRecord } from "../gateway/state/traces.ts";
import { startHarness } from "./_gateway_harness.ts";
import { callBody, callPath, readSse } from "./_gateway_routes.ts";
import {
  delay,
  expectedCost,
  ledgerEntryOf,
  postJson,
  spawnGateway,
} from "./_gateway_e2e.ts";

async function traces(
  url: string,
  key: string,
  query = "",
): Promise<TraceRecord[]> {
  const response = await fetch(`${url}/traces${query}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(response.status, 200);
  const body = await response.json();
  assert.equal(body.object, "list");
  return body.data;
}

Deno.test("every call has a trace record with the request id, trace id, caller, model, route, provider, key id, status, tokens, cost and timings", async () => {
  await using h = await startHarness();
  const usage = { inputTokens: 900, cachedTokens: 300, outputTokens: 77 };
  h.sim.setDefaultBehaviour({ usage, chunkDelayMs: 5 });
  const cases: [RouteName, string, boolean][] = [
    ["chat", "gpt-4o", false],
    ["chat", "claude-haiku-4-5", true],
    ["messages", "claude-sonnet-5-5", false],
    ["responses", "gpt-5.1", true],
    ["gemini", "gemini-2.5-computer-use-preview", true],
  ];
  for (const [route, modelId, stream] of cases) {
    const label = `${modelId} on ${route} stream=${stream}`;
    const before = h.sim.requests.length;
    const response = await h.post(
      callPath(route, modelId, stream),
      callBody(route, modelId, stream),
    );
    assert.equal(response.status, 200, label);
    if (stream) await readSse(response);
    else await response.body?.cancel();
    const requestId = response.headers.get("x-request-id")!;
    const traceId = response.headers.get("trace-id")!;
    assert.match(requestId, /\S/);
    assert.match(traceId, /\S/);
    await ledgerEntryOf(h.kv, h.caller.id, requestId);
    const [trace] = await traces(h.url, h.caller.key, "?limit=1");
    const upstreamKey = h.sim.requests[before].key!;
    assert.equal(trace.requestId, requestId, label);
    assert.equal(trace.traceId, traceId, label);
    assert.equal(trace.callerId, h.caller.id, label);
    assert.equal(trace.model, modelId, label);
    assert.equal(trace.route, route, label);
    assert.equal(trace.provider, h.sim.requests[before].provider, label);
    assert.equal(
      trace.providerKeyId,
      providerKeyId(trace.provider!, upstreamKey),
      label,
    );
    assert.equal(trace.status, 200, label);
    assert.equal(trace.stream, stream, label);
    assert.deepEqual(
      [trace.inputTokens, trace.cachedTokens, trace.outputTokens],
      [usage.inputTokens, usage.cachedTokens, usage.outputTokens],
      label,
    );
    assert.equal(trace.costMicros, expectedCost(usage, modelId), label);
    assert.ok(trace.latencyMs >= 0, label);
    if (stream) {
      assert.ok(typeof trace.ttftMs === "number", `${label}: no ttft`);
      assert.ok(trace.ttftMs! <= trace.latencyMs, label);
    } else {
      assert.equal(trace.ttftMs, undefined, label);
    }
  }
  assert.equal((await traces(h.url, h.caller.key)).length, cases.length);
});

Deno.test("a Trace-Id header groups calls, is echoed, and GET /traces returns the caller's own newest first; another caller sees none of it", async () => {
  await using h = await startHarness();
  const ids: string[] = [];
  for (const [i, traceId] of ["run-a", "run-b", "run-a", "run-a"].entries()) {
    const response = await h.post(
      "/chat/completions",
      callBody("chat", "gpt-4o", false, `step ${i}`),
      h.auth({ "Trace-Id": traceId }),
    );
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("trace-id"), traceId);
    await response.body?.cancel();
    ids.push(response.headers.get("x-request-id")!);
    await delay(2); // distinct start times, so "newest first" is a real order
  }
  const runA = await traces(h.url, h.caller.key, "?trace_id=run-a");
  assert.deepEqual(runA.map((trace) => trace.requestId), [
    ids[3],
    ids[2],
    ids[0],
  ]);
  assert.ok(runA.every((trace) => trace.traceId === "run-a"));
  const limited = await traces(h.url, h.caller.key, "?trace_id=run-a&limit=2");
  assert.deepEqual(limited.map((trace) => trace.requestId), [ids[3], ids[2]]);
  const all = await traces(h.url, h.caller.key, "?limit=10");
  assert.deepEqual(all.map((trace) => trace.requestId), ids.toReversed());
  for (let i = 1; i < all.length; i++) {
    assert.ok(all[i - 1].time >= all[i].time);
  }

  const other = await createCaller(h.kv, {
    name: "other",
    creditsMicros: usdToMicros(3),
  });
  assert.deepEqual(await traces(h.url, other.key), []);
  assert.deepEqual(await traces(h.url, other.key, "?trace_id=run-a"), []);
  const credits = await fetch(`${h.url}/credits`, {
    headers: { authorization: `Bearer ${other.key}` },
  });
  assert.deepEqual(await credits.json(), { balance: 3, currency: "USD" });
  // A call without Trace-Id gets a fresh one.
  const fresh = await postJson(
    `${h.url}/chat/completions`,
    other.key,
    callBody("chat", "gpt-4o", false),
  );
  await fresh.body?.cancel();
  const freshId = fresh.headers.get("trace-id");
  assert.ok(freshId && !["run-a", "run-b"].includes(freshId));
  assert.equal(
    (await traces(h.url, other.key, `?trace_id=${freshId}`)).length,
    1,
  );
  assert.equal((await traces(h.url, h.caller.key)).length, 4);
});

Deno.test("a call's trace is listed by GET /traces as soon as the call has been answered, on a KV file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await using h = await startHarness({ kvPath: join(dir, "gateway.kv") });
    for (let i = 0; i < 20; i++) {
      const response = await h.post(
        "/chat/completions",
        callBody("chat", "gpt-4o", false),
      );
      assert.equal(response.status, 200);
      await response.body?.cancel();
      const [latest] = await traces(h.url, h.caller.key, "?limit=1");
      assert.equal(
        latest?.requestId,
        response.headers.get("x-request-id"),
        `call ${i}: its trace is not listed yet`,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("rejected calls (400, 404, 402) are traced with cost 0 and charge nothing", async () => {
  await using h = await startHarness({ credits: 0.001 });
  const rejected: [string, unknown, number][] = [
    ["/chat/completions", "{not json", 400],
    ["/chat/completions", { model: "gpt-4o" }, 400],
    ["/chat/completions", callBody("chat", "no-such-model", false), 404],
    ["/messages", callBody("messages", "gpt-4o", false), 400],
    [
      "/chat/completions",
      { ...callBody("chat", "gpt-4o", false), max_tokens: 100_000 },
      402,
    ],
  ];
  const requestIds: string[] = [];
  for (const [path, body, status] of rejected) {
    const response = await h.post(path, body);
    assert.equal(response.status, status, await response.text());
    requestIds.push(response.headers.get("x-request-id")!);
  }
  const traced = await traces(h.url, h.caller.key);
  assert.equal(traced.length, rejected.length);
  for (const [i, [, , status]] of rejected.entries()) {
    const trace = traced.find((t) => t.requestId === requestIds[i]);
    assert.ok(trace, `no trace for the ${status}`);
    assert.equal(trace.status, status);
    assert.equal(trace.costMicros, 0);
    assert.equal(trace.callerId, h.caller.id);
    assert.ok(trace.error, "the error is recorded");
  }
  assert.equal(h.sim.requests.length, 0);
  const ledger = await listLedger(h.kv, h.caller.id);
  assert.deepEqual(ledger.map((entry) => entry.kind), ["topup"]);
});

Deno.test("an abandoned stream is billed for what was generated and its upstream request is cancelled", async () => {
  await using h = await startHarness({
    sim: {
      behaviour: {
        chunkDelayMs: 50,
        reply: "lorem ipsum dolor sit amet ".repeat(20),
      },
    },
  });
  const abort = new AbortController();
  const response = await fetch(`${h.url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...h.auth() },
    body: JSON.stringify(callBody("chat", "gpt-4o", true)),
    signal: abort.signal,
  });
  assert.equal(response.status, 200);
  const requestId = response.headers.get("x-request-id")!;
  const reader = response.body!.pipeThrough(new TextDecoderStream())
    .getReader();
  let received = "";
  while ((received.match(/"content":"/g) ?? []).length < 3) {
    const { value, done } = await reader.read();
    assert.ok(!done, "the stream ended before it was abandoned");
    received += value;
  }
  abort.abort();
  await reader.cancel().catch(() => {});
  await h.sim.waitFor(() => h.sim.aborted === 1, 3_000);
  assert.equal(h.sim.requests[0].aborted, true);

  const entry = await ledgerEntryOf(h.kv, h.caller.id, requestId);
  // docs/decisions.md: before the provider reports usage, each content
  // event relayed counts as one output token.
  assert.ok(entry.outputTokens! >= 2, JSON.stringify(entry));
  assert.ok(entry.amountMicros < 0);
  const [trace] = await traces(h.url, h.caller.key, "?limit=1");
  assert.equal(trace.requestId, requestId);
  assert.equal(trace.status, 499);
  assert.equal(trace.costMicros, -entry.amountMicros);
});

interface OtlpSpan {
  name: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

Deno.test("with OTEL_DENO=true a gateway process exports a span with the gen_ai attributes over OTLP/HTTP", async () => {
  const bodies: string[] = [];
  const receiver = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      if (new URL(request.url).pathname === "/v1/traces") {
        bodies.push(await request.text());
      } else await request.body?.cancel();
      return Response.json({});
    },
  );
  const dir = await Deno.makeTempDir();
  const sim = await startSimulator({
    behaviour: {
      usage: { inputTokens: 120, cachedTokens: 0, outputTokens: 34 },
    },
  });
  let gateway;
  try {
    const kvPath = join(dir, "gateway.kv");
    const kv = await Deno.openKv(kvPath);
    const caller = await createCaller(kv, {
      name: "otel",
      creditsMicros: usdToMicros(1),
    });
    kv.close();
    gateway = await spawnGateway({
      ...sim.env(),
      GATEWAY_KV_PATH: kvPath,
      OPENAI_API_KEYS: "sk-otel-test-key",
      OTEL_DENO: "true",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.addr.port}`,
      OTEL_BSP_SCHEDULE_DELAY: "100",
      OTEL_METRIC_EXPORT_INTERVAL: "100",
      // Bounds each exporter's flush at exit (10 s each by default).
      OTEL_EXPORTER_OTLP_TIMEOUT: "2000",
    });
    const response = await postJson(
      `${gateway.url}/chat/completions`,
      caller.key,
      callBody("chat", "gpt-4o", false),
      { "Trace-Id": "otel-run" },
    );
    assert.equal(response.status, 200);
    await response.body?.cancel();
    const requestId = response.headers.get("x-request-id");

    const spanOf = (): OtlpSpan | undefined =>
      bodies.flatMap((body) =>
        JSON.parse(body).resourceSpans.flatMap((
          resource: { scopeSpans: { spans: OtlpSpan[] }[] },
        ) => resource.scopeSpans.flatMap((scope) => scope.spans))
      ).find((span: OtlpSpan) => span.name === "chat gpt-4o") as
        | OtlpSpan
        | undefined;
    const deadline = Date.now() + 10_000;
    while (!spanOf() && Date.now() < deadline) await delay(50);
    const span = spanOf();
    assert.ok(span, `no gateway span in ${bodies.length} exports`);
    const attributes = Object.fromEntries(
      span.attributes.map((a) => [a.key, Object.values(a.value)[0]]),
    );
    assert.equal(attributes["gen_ai.request.model"], "gpt-4o");
    assert.equal(attributes["gen_ai.provider.name"], "openai");
    assert.equal(attributes["gen_ai.operation.name"], "chat");
    assert.equal(Number(attributes["gen_ai.usage.input_tokens"]), 120);
    assert.equal(Number(attributes["gen_ai.usage.output_tokens"]), 34);
    assert.equal(attributes["mcpkit.trace_id"], "otel-run");
    assert.equal(attributes["mcpkit.request_id"], requestId);
    assert.equal(attributes["mcpkit.caller_id"], caller.id);
    const stopped = await gateway.stop();
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.ok(!stopped.stderr.includes("sk-otel-test-key"));
  } finally {
    await gateway?.stop();
    await sim.close();
    await receiver.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

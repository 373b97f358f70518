import assert from "node:assert/strict";

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

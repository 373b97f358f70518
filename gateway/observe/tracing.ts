/**
 * One OpenTelemetry span per gateway call with the GenAI semantic-convention
 * attributes, exported by Deno's built-in OpenTelemetry when `OTEL_DENO=true`.
 *
 * @module
 */

import {
  SpanKind,
  SpanStatusCode,
  trace as otelTrace,
} from "@opentelemetry/api";
import { otelProviderName } from "../upstream/providers/mod.ts";
import type { TraceRecord } from "../state/traces.ts";

/** Extra span attributes for {@linkcode recordSpan}. */
export type SpanAttributes = Record<string, string | number | boolean>;

/**
 * The instrumentation scope of the gateway's spans.
 *
 * @example
 * ```ts
 * import { trace } from "@opentelemetry/api";
 * import { TRACER_NAME } from "./tracing.ts";
 *
 * // The tracer the gateway's spans come from, to add spans of one's own beside them.
 * const tracer = trace.getTracer(TRACER_NAME);
 * tracer.startSpan("my-step").end();
 * ```
 */
export const TRACER_NAME = "@org/mcpkit/gateway";

/**
 * Records one finished call as an OpenTelemetry span named `{operation} {model}`
 * (`chat gpt-4o`, `generate_content gemini-2.5-pro`), timed from
 * `trace.time` to `trace.time + trace.latencyMs`, with the GenAI
 * semantic-convention attributes and the gateway's own (`mcpkit.*`). Without
 * `OTEL_DENO=true` the OpenTelemetry API is a no-op and this costs nearly
 * nothing. Called inside a `Deno.serve` handler, the span is a child of the
 * request's server span.
 *
 * @example
 * ```ts
 * import { recordSpan } from "./tracing.ts";
 *
 * // A no-op unless the process runs with OTEL_DENO=true.
 * recordSpan({
 *   requestId: "req_1", traceId: "t1", callerId: "ck_1", model: "gpt-4o", route: "chat",
 *   provider: "openai", status: 200, stream: false, inputTokens: 3, outputTokens: 5,
 *   cachedTokens: 0, costMicros: 12, latencyMs: 40, time: Date.now(),
 * }, { "mcpkit.example": true });
 * ```
 *
 * @param trace The call's trace record.
 * @param extra More attributes to set on the span.
 * @returns Nothing; the span is ended and queued for export.
 */
export function recordSpan(
  trace: TraceRecord,
  extra: SpanAttributes = {},
): void {
  const operation = trace.route === "gemini" ? "generate_content" : "chat";
  const attributes: SpanAttributes = {
    "gen_ai.operation.name": operation,
    "gen_ai.usage.input_tokens": trace.inputTokens,
    "gen_ai.usage.output_tokens": trace.outputTokens,
    "gen_ai.usage.cache_read.input_tokens": trace.cachedTokens,
    "http.response.status_code": trace.status,
    "mcpkit.route": trace.route,
    "mcpkit.request_id": trace.requestId,
    "mcpkit.trace_id": trace.traceId,
    "mcpkit.stream": trace.stream,
    "mcpkit.cost_micros": trace.costMicros,
    "mcpkit.cost_usd": trace.costMicros / 1_000_000,
  };
  if (trace.model !== undefined) {
    attributes["gen_ai.request.model"] = trace.model;
  }
  if (trace.provider !== undefined) {
    attributes["gen_ai.provider.name"] = otelProviderName(trace.provider);
    // The older name of the same attribute, still read by many back ends.
    attributes["gen_ai.system"] = otelProviderName(trace.provider);
  }
  if (trace.callerId !== undefined) {
    attributes["mcpkit.caller_id"] = trace.callerId;
  }
  if (trace.providerKeyId !== undefined) {
    attributes["mcpkit.provider_key_id"] = trace.providerKeyId;
  }
  if (trace.ttftMs !== undefined) attributes["mcpkit.ttft_ms"] = trace.ttftMs;
  if (trace.status >= 400) attributes["error.type"] = String(trace.status);

  const span = otelTrace.getTracer(TRACER_NAME).startSpan(
    `${operation} ${trace.model ?? "unknown"}`,
    {
      kind: SpanKind.CLIENT,
      startTime: trace.time,
      attributes: { ...attributes, ...extra },
    },
  );
  if (trace.status >= 400) {
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: trace.error ?? `HTTP ${trace.status}`,
    });
  }
  span.end(trace.time + trace.latencyMs);
}

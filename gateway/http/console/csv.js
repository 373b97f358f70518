// Usage and traces as CSV downloads.
import { h } from "./dom.js";
import { groupLabel } from "./format.js";

function csvCell(value) {
  if (value === null || value === undefined) return "";
  let text = String(value);
  // A spreadsheet would run a cell starting with = + @ (or - then more) as a formula.
  if (typeof value === "string" && /^([=+@\t\r]|-.)/.test(text)) {
    text = `'${text}`;
  }
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** CSV text (RFC 4180) from a header row and rows of values. */
export function csv(header, rows) {
  return [header, ...rows].map((row) => row.map(csvCell).join(",")).join(
    "\r\n",
  ) + "\r\n";
}

/** Offers `text` as a file download. */
export function download(filename, text) {
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
  const link = h("a", { href: url, download: filename, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Usage figures as CSV: one row per caller, model and provider, and the total. */
export function usageCsv(report, callerNames = new Map()) {
  const row = (group, id, name, f) => [
    group,
    id,
    name,
    f.requests,
    f.errors["4xx"],
    f.errors["5xx"],
    f.inputTokens,
    f.outputTokens,
    f.cachedTokens,
    f.costUsd,
    f.latencyMs.p50,
    f.latencyMs.p95,
    f.latencyMs.p99,
    f.ttftMs.p50,
    f.ttftMs.p95,
    f.ttftMs.p99,
  ];
  return csv(
    [
      "group",
      "id",
      "name",
      "requests",
      "errors_4xx",
      "errors_5xx",
      "input_tokens",
      "output_tokens",
      "cached_tokens",
      "cost_usd",
      "latency_p50_ms",
      "latency_p95_ms",
      "latency_p99_ms",
      "ttft_p50_ms",
      "ttft_p95_ms",
      "ttft_p99_ms",
    ],
    [
      row("total", "", "", report.totals),
      ...(report.byCaller ?? []).map((r) =>
        row("caller", r.callerId, callerNames.get(r.callerId) ?? "", r)
      ),
      ...report.byModel.map((r) =>
        row("model", r.model, groupLabel(r.model), r)
      ),
      ...report.byProvider.map((r) =>
        row("provider", r.provider, groupLabel(r.provider), r)
      ),
    ],
  );
}

/** Traces as CSV, one row per call. */
export function tracesCsv(traces) {
  return csv(
    [
      "time",
      "request_id",
      "trace_id",
      "caller_id",
      "caller_name",
      "route",
      "model",
      "provider",
      "status",
      "stream",
      "input_tokens",
      "output_tokens",
      "cached_tokens",
      "cost_usd",
      "latency_ms",
      "ttft_ms",
      "error",
    ],
    traces.map((t) => [
      new Date(t.time).toISOString(),
      t.requestId,
      t.traceId,
      t.callerId,
      t.callerName ?? "",
      t.route,
      t.model ?? "",
      t.provider ?? "",
      t.status,
      t.stream,
      t.inputTokens,
      t.outputTokens,
      t.cachedTokens,
      t.costMicros / 1e6,
      t.latencyMs,
      t.ttftMs ?? "",
      t.error ?? "",
    ]),
  );
}

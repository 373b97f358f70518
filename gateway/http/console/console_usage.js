// The console's usage tabs: the overview (totals, charts, usage CSV) and the
// breakdowns by model and by provider.
import { card, h, percentileCard, table } from "./dom.js";
import { count, groupLabel, ms, percent, usd } from "./format.js";
import { chart, spendChart } from "./charts.js";
import { download, usageCsv } from "./csv.js";
import { get, rangeBar, state } from "./console_shell.js";

/** The overview: totals, charts and the usage CSV over the range. */
export async function overviewTab() {
  const report = await get(`/admin/usage?range=${state.range}`);
  const keys = await get("/admin/keys");
  const t = report.totals;
  return [
    rangeBar(
      h("button", {
        type: "button",
        "data-testid": "usage-csv",
        onclick: () =>
          download(
            `usage-${state.range}.csv`,
            usageCsv(
              report,
              new Map(keys.data.map((c) => [c.id, c.name])),
            ),
          ),
      }, "Download usage CSV"),
    ),
    h(
      "div",
      { class: "cards" },
      card("Spend", usd(t.costUsd), "total-spend"),
      card("Requests", count(t.requests), "total-requests"),
      card("Error rate", percent(t.errorRate, t.requests), "error-rate"),
      percentileCard("Latency", t.latencyMs, "latency"),
      percentileCard("Time to first token (streams)", t.ttftMs, "ttft"),
      card(
        "Tokens in / out",
        `${count(t.inputTokens)} / ${count(t.outputTokens)}`,
        "tokens",
      ),
    ),
    h(
      "div",
      { class: "charts" },
      chart("Requests and errors", report, [
        { label: "requests", color: "#1c7ed6", value: (p) => p.requests },
        {
          label: "errors",
          color: "#d9480f",
          value: (p) => p.errors["4xx"] + p.errors["5xx"],
        },
      ], "chart-requests"),
      spendChart(report),
      chart("Latency (ms)", report, [
        { label: "p50", color: "#1c7ed6", value: (p) => p.latencyMs.p50 },
        { label: "p95", color: "#f08c00", value: (p) => p.latencyMs.p95 },
        { label: "p99", color: "#d9480f", value: (p) => p.latencyMs.p99 },
      ], "chart-latency"),
      chart("Time to first token (ms)", report, [
        { label: "p50", color: "#7048e8", value: (p) => p.ttftMs.p50 },
        { label: "p95", color: "#ae3ec9", value: (p) => p.ttftMs.p95 },
      ], "chart-ttft"),
    ),
  ];
}

/** Usage by model over the range. */
export async function modelsTab() {
  const report = await get(`/admin/usage?range=${state.range}`);
  return [
    rangeBar(),
    breakdown(report.byModel, "Model", (r) => r.model, "models-table"),
  ];
}

/** Usage by provider over the range. */
export async function providersTab() {
  const report = await get(`/admin/usage?range=${state.range}`);
  return [
    rangeBar(),
    breakdown(
      report.byProvider,
      "Provider",
      (r) => r.provider,
      "providers-table",
    ),
  ];
}

function breakdown(rows, label, key, testid) {
  return table(
    [
      { label, value: (r) => groupLabel(key(r)) },
      { label: "Requests", num: true, value: (r) => count(r.requests) },
      { label: "Spend", num: true, value: (r) => usd(r.costUsd) },
      {
        label: "Error rate",
        num: true,
        value: (r) => percent(r.errorRate, r.requests),
      },
      {
        label: "Tokens in / out",
        num: true,
        value: (r) => `${count(r.inputTokens)} / ${count(r.outputTokens)}`,
      },
      {
        label: "Latency p50 / p95",
        num: true,
        value: (r) => `${ms(r.latencyMs.p50)} / ${ms(r.latencyMs.p95)}`,
      },
      { label: "TTFT p50", num: true, value: (r) => ms(r.ttftMs.p50) },
    ],
    rows,
    { testid },
  );
}

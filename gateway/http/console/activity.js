// A caller's own page: balance, spend and requests over time by model, and
// the recent calls. Signed in with the caller's key; every request the page
// makes is the caller's own (the gateway scopes them to the key).
import { api, signedInPage } from "./session.js";
import { card, fields, h, ranges, table } from "./dom.js";
import { count, groupLabel, ms, percent, time, usd } from "./format.js";
import { chart, spendChart } from "./charts.js";
import { traceColumns, traceFields } from "./traces.js";
import { download, tracesCsv, usageCsv } from "./csv.js";

const state = { range: "24h" };

const render = signedInPage({
  storageKey: "mcpkit.key",
  signInOptions: {
    title: "Your gateway activity",
    label: "API key",
    hint: "Sign in with your gateway key. It stays in this tab only.",
    check: (candidate) => api(candidate, "/v1/credits"),
  },
  title: "Your gateway activity",
  content: async (get) => {
    const [credits, report, traces] = await Promise.all([
      get("/v1/credits"),
      get(`/v1/usage?range=${state.range}`),
      get("/v1/traces?limit=50"),
    ]);
    const t = report.totals;
    return [
      h(
        "div",
        { class: "toolbar" },
        ranges(state.range, (range) => {
          state.range = range;
          render();
        }),
        h("button", {
          type: "button",
          "data-testid": "usage-csv",
          onclick: () => download(`usage-${state.range}.csv`, usageCsv(report)),
        }, "Download usage CSV"),
        h("button", {
          type: "button",
          "data-testid": "traces-csv",
          onclick: async () =>
            download(
              "calls.csv",
              tracesCsv((await get("/v1/traces?limit=1000")).data),
            ),
        }, "Download calls CSV"),
      ),
      h(
        "div",
        { class: "cards" },
        card("Balance", usd(credits.balance), "balance"),
        card(`Spend (${state.range})`, usd(t.costUsd), "total-spend"),
        card(`Requests (${state.range})`, count(t.requests), "total-requests"),
        card("Error rate", percent(t.errorRate, t.requests), "error-rate"),
        card("Latency p50", ms(t.latencyMs.p50), "latency"),
      ),
      h(
        "div",
        { class: "charts" },
        spendChart(report),
        chart("Requests", report, [
          { label: "requests", color: "#1c7ed6", value: (p) => p.requests },
        ], "chart-requests"),
      ),
      h("h2", { text: "Your limits" }),
      limitsOf(report.limits),
      h("h2", { text: "By model" }),
      table(
        [
          { label: "Model", value: (r) => groupLabel(r.model) },
          { label: "Requests", num: true, value: (r) => count(r.requests) },
          { label: "Spend", num: true, value: (r) => usd(r.costUsd) },
          {
            label: "Tokens in / out",
            num: true,
            value: (r) => `${count(r.inputTokens)} / ${count(r.outputTokens)}`,
          },
        ],
        report.byModel,
        { testid: "models-table" },
      ),
      h("h2", { text: "Recent calls" }),
      state.trace
        ? h(
          "section",
          { class: "panel", "aria-label": "Call detail" },
          traceFields(state.trace),
        )
        : h("p", { class: "muted", text: "Pick a call to see its detail." }),
      table(
        traceColumns(),
        traces.data,
        {
          testid: "traces-table",
          empty: "No calls yet.",
          onRow: (trace) => {
            state.trace = trace;
            render();
          },
        },
      ),
    ];
  },
});

/** The operator's limits on this key, as the caller sees them. */
function limitsOf(limits) {
  if (!limits) {
    return h("p", {
      class: "muted",
      "data-testid": "limits",
      text: "No limits beyond your balance.",
    });
  }
  return fields([
    [
      "Requests per minute",
      limits.rpm === undefined ? null : count(limits.rpm),
    ],
    ["Tokens per minute", limits.tpm === undefined ? null : count(limits.tpm)],
    [
      "Budget",
      limits.spend
        ? `${usd(limits.spend.amount)} per ${limits.spend.period} (UTC)`
        : null,
    ],
    ["Models you may call", limits.models?.join(", ") ?? null],
    [
      "Key expires",
      limits.expiresAt ? time(Date.parse(limits.expiresAt)) : null,
    ],
  ], "limits");
}

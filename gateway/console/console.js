// The operator console: usage over time (overall, by caller, model and
// provider), the provider key pool, a trace browser, and caller management,
// all through the admin API with the admin token of this tab.
import {
  api,
  card,
  chart,
  count,
  h,
  ms,
  percent,
  percentiles,
  ranges,
  signedInPage,
  spendChart,
  table,
  time,
  traceColumns,
  usd,
} from "./common.js";

const state = { tab: "overview", range: "24h", traceFilter: {} };
const TABS = [
  ["overview", "Overview"],
  ["callers", "Callers"],
  ["models", "Models"],
  ["providers", "Providers"],
  ["keys", "Provider keys"],
  ["traces", "Traces"],
];
let call;

const render = signedInPage({
  storageKey: "mcpkit.admin",
  signInOptions: {
    title: "mcpkit gateway console",
    label: "Admin token",
    hint: "Sign in with GATEWAY_ADMIN_TOKEN. It stays in this tab only.",
    check: (candidate) => api(candidate, "/admin/keys"),
  },
  title: "mcpkit gateway",
  nav: () =>
    h(
      "nav",
      {},
      TABS.map(([id, label]) =>
        h("button", {
          type: "button",
          "data-tab": id,
          "aria-current": String(state.tab === id),
          onclick: () => {
            state.tab = id;
            render();
          },
        }, label)
      ),
    ),
  content: (fetcher) => {
    call = fetcher;
    return PAGES[state.tab]();
  },
});

const get = (path) => call(path);

function rangeBar() {
  return ranges(state.range, (range) => {
    state.range = range;
    render();
  });
}

const PAGES = {
  async overview() {
    const report = await get(`/admin/usage?range=${state.range}`);
    const t = report.totals;
    return [
      rangeBar(),
      h(
        "div",
        { class: "cards" },
        card("Spend", usd(t.costUsd), "total-spend"),
        card("Requests", count(t.requests), "total-requests"),
        card("Error rate", percent(t.errorRate), "error-rate"),
        card("Latency p50 · p95 · p99", percentiles(t.latencyMs), "latency"),
        card("TTFT p50 · p95 · p99", percentiles(t.ttftMs), "ttft"),
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
  },

  async callers() {
    const [keys, report] = await Promise.all([
      get("/admin/keys"),
      get(`/admin/usage?range=${state.range}`),
    ]);
    const usage = new Map(report.byCaller.map((row) => [row.callerId, row]));
    const notice = h("div", { "data-testid": "caller-notice" });
    const name = h("input", {
      placeholder: "name",
      required: true,
      "data-testid": "new-caller-name",
    });
    const credits = h("input", {
      placeholder: "credits (USD)",
      type: "number",
      min: "0",
      step: "any",
      value: "10",
      "data-testid": "new-caller-credits",
    });
    const create = h(
      "form",
      {
        class: "inline",
        onsubmit: async (event) => {
          event.preventDefault();
          try {
            const made = await call("/admin/keys", {
              method: "POST",
              body: JSON.stringify({
                name: name.value,
                credits: Number(credits.value),
              }),
            });
            state.notice =
              `Created "${made.name}". Its key, shown once: ${made.key}`;
            render();
          } catch (error) {
            notice.replaceChildren(
              h("p", { class: "error", text: error.message }),
            );
          }
        },
      },
      name,
      credits,
      h("button", {
        class: "primary",
        type: "submit",
        "data-testid": "create-caller",
      }, "Create caller"),
    );
    if (state.notice) {
      notice.append(
        h("div", {
          class: "notice",
          "data-testid": "created-key",
          text: state.notice,
        }),
      );
      state.notice = undefined;
    }
    const topUp = async (caller) => {
      const amount = Number(
        prompt(`Add how many USD to "${caller.name}"?`, "5"),
      );
      if (!amount) return;
      await call(`/admin/keys/${caller.id}/credits`, {
        method: "POST",
        body: JSON.stringify({ amount }),
      });
      render();
    };
    const revoke = async (caller) => {
      if (!confirm(`Revoke "${caller.name}"? Its key stops working at once.`)) {
        return;
      }
      await call(`/admin/keys/${caller.id}`, { method: "DELETE" });
      render();
    };
    return [
      rangeBar(),
      notice,
      create,
      table(
        [
          { label: "Name", value: (c) => c.name },
          { label: "Id", value: (c) => c.id },
          { label: "Balance", num: true, value: (c) => usd(c.balance) },
          {
            label: `Requests (${state.range})`,
            num: true,
            value: (c) => count(usage.get(c.id)?.requests),
          },
          {
            label: `Spend (${state.range})`,
            num: true,
            value: (c) => usd(usage.get(c.id)?.costUsd ?? 0),
          },
          {
            label: "Errors",
            num: true,
            value: (c) => percent(usage.get(c.id)?.errorRate),
          },
          {
            label: "",
            value: (c) =>
              h(
                "span",
                {},
                h("button", {
                  type: "button",
                  "data-action": "topup",
                  "data-caller": c.id,
                  onclick: () => topUp(c),
                }, "Top up"),
                " ",
                h("button", {
                  type: "button",
                  "data-action": "revoke",
                  "data-caller": c.id,
                  onclick: () => revoke(c),
                }, "Revoke"),
              ),
          },
        ],
        keys.data,
        { testid: "callers-table" },
      ),
    ];
  },

  async models() {
    const report = await get(`/admin/usage?range=${state.range}`);
    return [
      rangeBar(),
      breakdown(report.byModel, "Model", (r) => r.model, "models-table"),
    ];
  },

  async providers() {
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
  },

  async keys() {
    const health = await get("/admin/provider-keys");
    const rows = health.data ?? health;
    return [
      h("p", {
        class: "muted",
        text:
          "Each provider key by its id: what it is doing now and its use of the last minute against its limits.",
      }),
      table(
        [
          { label: "Provider", value: (k) => k.provider },
          { label: "Key id", value: (k) => k.keyId },
          { label: "State", value: (k) => stateOf(k) },
          { label: "In flight", num: true, value: (k) => count(k.inFlight) },
          {
            label: "RPM",
            num: true,
            value: (k) =>
              `${count(k.requestsLastMinute)}${
                k.rpm ? ` / ${count(k.rpm)}` : ""
              }`,
          },
          {
            label: "TPM",
            num: true,
            value: (k) =>
              `${count(k.tokensLastMinute)}${
                k.tpm ? ` / ${count(k.tpm)}` : ""
              }`,
          },
        ],
        rows,
        { testid: "keys-table" },
      ),
    ];
  },

  async traces() {
    const f = state.traceFilter;
    const keys = await get("/admin/keys");
    const field = (name, placeholder) =>
      h("input", {
        name,
        placeholder,
        value: f[name] ?? "",
        "data-filter": name,
      });
    const callerSelect = h(
      "select",
      { name: "caller", "data-filter": "caller" },
      h("option", { value: "" }, "every caller"),
      keys.data.map((c) =>
        h("option", { value: c.id, selected: f.caller === c.id }, c.name)
      ),
    );
    const form = h(
      "form",
      {
        class: "inline",
        "data-testid": "trace-filter",
        onsubmit: (event) => {
          event.preventDefault();
          state.traceFilter = Object.fromEntries(
            [...new FormData(event.target)].filter(([, v]) => v !== "")
              // The browser's local time, sent as an instant.
              .map(([k, v]) =>
                k === "since" ? [k, new Date(v).toISOString()] : [k, v]
              ),
          );
          state.trace = undefined;
          render();
        },
      },
      callerSelect,
      field("model", "model"),
      field("route", "route"),
      field("status", "status (200, 5xx)"),
      field("trace_id", "trace id"),
      h(
        "label",
        { class: "muted" },
        "since ",
        h("input", {
          type: "datetime-local",
          name: "since",
          "data-filter": "since",
        }),
      ),
      h("button", {
        class: "primary",
        type: "submit",
        "data-testid": "apply-filter",
      }, "Filter"),
    );
    const query = new URLSearchParams({ ...f, limit: "200" });
    const traces = (await get(`/admin/traces?${query}`)).data;
    const detail = state.trace
      ? h("pre", {
        class: "detail",
        "data-testid": "trace-detail",
        text: JSON.stringify(state.trace, null, 2),
      })
      : null;
    return [
      form,
      detail,
      table(
        traceColumns([
          { label: "Caller", value: (t) => t.callerName ?? t.callerId },
          { label: "Route", value: (t) => t.route },
        ]),
        traces,
        {
          testid: "traces-table",
          onRow: (trace) => {
            state.trace = trace;
            render();
          },
        },
      ),
    ];
  },
};

function breakdown(rows, label, key, testid) {
  return table(
    [
      { label, value: key },
      { label: "Requests", num: true, value: (r) => count(r.requests) },
      { label: "Spend", num: true, value: (r) => usd(r.costUsd) },
      { label: "Error rate", num: true, value: (r) => percent(r.errorRate) },
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

function stateOf(key) {
  if (key.state === "healthy") return key.inFlight > 0 ? "in use" : "ready";
  const until = key.coolUntil ? ` until ${time(key.coolUntil)}` : "";
  if (key.state === "cooling") return `cooling down${until}`;
  if (key.state === "refused") {
    return `refused by the provider (revoked?)${until}`;
  }
  return "probing";
}

// The operator console: usage over time (overall, by caller, model and
// provider), callers with their limits, the model catalog, the provider key
// pool and a trace browser, all through the admin API with the admin token of
// this tab.
import { api, signedInPage } from "./session.js";
import { card, h, percentileCard, ranges, table } from "./dom.js";
import {
  count,
  groupLabel,
  limitLines,
  ms,
  percent,
  time,
  usd,
} from "./format.js";
import { chart, spendChart } from "./charts.js";
import { traceColumns, traceFields } from "./traces.js";
import { download, tracesCsv, usageCsv } from "./csv.js";

const TRACE_PAGE = 200;
const state = {
  tab: "overview",
  range: "24h",
  traceFilter: {},
  // Cursors of the trace pages before the one shown (`""`: the newest page).
  tracePages: [""],
};
const TABS = [
  ["overview", "Overview"],
  ["callers", "Callers"],
  ["models", "Models"],
  ["catalog", "Catalog"],
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
      { "aria-label": "Console pages" },
      TABS.map(([id, label]) =>
        h("button", {
          type: "button",
          "data-tab": id,
          "aria-current": state.tab === id ? "page" : undefined,
          onclick: () => {
            state.tab = id;
            state.editing = undefined;
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

function rangeBar(...extra) {
  return h(
    "div",
    { class: "toolbar" },
    ranges(state.range, (range) => {
      state.range = range;
      render();
    }),
    ...extra,
  );
}

/** A labelled form field. */
function field(label, input) {
  return h("label", { class: "field" }, h("span", { text: label }), input);
}

/** An editor panel; the page does not auto-refresh while one is open. */
function panel(title, testid, ...children) {
  return h(
    "section",
    { class: "panel", "data-editing": "", "data-testid": testid },
    h("h2", { text: title }),
    ...children,
  );
}

function closeEditor() {
  state.editing = undefined;
  render();
}

function formError() {
  return h("p", { class: "error", role: "alert", "data-testid": "form-error" });
}

/** Runs a change; shows its error in `message`, or closes the editor. */
async function submit(message, change) {
  message.textContent = "";
  try {
    await change();
    closeEditor();
  } catch (error) {
    message.textContent = error.message;
  }
}

const PAGES = {
  async overview() {
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
  },

  async callers() {
    const [keys, report] = await Promise.all([
      get("/admin/keys"),
      get(`/admin/usage?range=${state.range}`),
    ]);
    const usage = new Map(report.byCaller.map((row) => [row.callerId, row]));
    const editing = state.editing;
    const editor = editing?.kind === "topup"
      ? topUpPanel(keys.data.find((c) => c.id === editing.id))
      : editing?.kind === "limits"
      ? limitsPanel(keys.data.find((c) => c.id === editing.id))
      : editing?.kind === "revoke"
      ? revokePanel(keys.data.find((c) => c.id === editing.id))
      : null;
    return [
      rangeBar(),
      createdKey(),
      createCallerForm(),
      editor,
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
            value: (c) =>
              percent(usage.get(c.id)?.errorRate, usage.get(c.id)?.requests),
          },
          {
            label: "Limits",
            value: (c) =>
              h(
                "span",
                { class: "limits", "data-limits": c.id },
                limitLines(c.limits).map((line) => h("span", { text: line })),
              ),
          },
          {
            label: "Actions",
            value: (c) =>
              h(
                "span",
                { class: "actions" },
                h("button", {
                  type: "button",
                  "data-action": "topup",
                  "data-caller": c.id,
                  onclick: () => {
                    state.editing = { kind: "topup", id: c.id };
                    render();
                  },
                }, "Top up"),
                h("button", {
                  type: "button",
                  "data-action": "limits",
                  "data-caller": c.id,
                  onclick: () => {
                    state.editing = { kind: "limits", id: c.id };
                    render();
                  },
                }, "Limits"),
                h("button", {
                  type: "button",
                  "data-action": "revoke",
                  "data-caller": c.id,
                  onclick: () => {
                    state.editing = { kind: "revoke", id: c.id };
                    render();
                  },
                }, "Revoke"),
              ),
          },
        ],
        keys.data,
        { testid: "callers-table", empty: "No callers yet." },
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

  async catalog() {
    const models = (await get("/admin/models")).data;
    const editing = state.editing;
    const editor = editing?.kind === "model"
      ? modelPanel(models.find((m) => m.id === editing.id))
      : null;
    const price = (value) => value === undefined ? "—" : `$${value}`;
    return [
      h(
        "div",
        { class: "toolbar" },
        h("p", {
          class: "muted",
          text:
            "Prices are USD per million tokens. A change reaches every gateway process within seconds; calls already running keep the price they reserved.",
        }),
        h("button", {
          type: "button",
          class: "primary",
          "data-testid": "add-model",
          onclick: () => {
            state.editing = { kind: "model" };
            render();
          },
        }, "Add model"),
      ),
      editor,
      table(
        [
          { label: "Model", value: (m) => m.id },
          { label: "Provider", value: (m) => m.provider },
          { label: "Upstream id", value: (m) => m.upstream },
          { label: "Routes", value: (m) => m.routes.join(", ") },
          { label: "Input", num: true, value: (m) => price(m.pricing.input) },
          {
            label: "Cached input",
            num: true,
            value: (m) => price(m.pricing.cachedInput),
          },
          { label: "Output", num: true, value: (m) => price(m.pricing.output) },
          {
            label: "Max output",
            num: true,
            value: (m) => count(m.maxOutputTokens),
          },
          {
            label: "Falls back to",
            value: (m) => m.alternates?.join(", ") ?? "",
          },
          { label: "Lifecycle", value: (m) => lifecycle(m) },
          {
            label: "Actions",
            value: (m) =>
              h(
                "span",
                { class: "actions" },
                h("button", {
                  type: "button",
                  "data-action": "edit-model",
                  "data-model": m.id,
                  onclick: () => {
                    state.editing = { kind: "model", id: m.id };
                    render();
                  },
                }, "Edit"),
                h("button", {
                  type: "button",
                  "data-action": "remove-model",
                  "data-model": m.id,
                  onclick: async () => {
                    if (!confirm(`Remove "${m.id}" from the catalog?`)) return;
                    await call(modelPath(m.id), { method: "DELETE" });
                    await served((entry) => entry === undefined, m.id);
                    render();
                  },
                }, "Remove"),
              ),
          },
        ],
        models,
        { testid: "catalog-table", empty: "The catalog is empty." },
      ),
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
        { testid: "keys-table", empty: "No provider keys configured." },
      ),
    ];
  },

  async traces() {
    const f = state.traceFilter;
    const keys = await get("/admin/keys");
    const input = (name, placeholder) =>
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
        class: "inline filters",
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
          state.tracePages = [""];
          render();
        },
      },
      field("Caller", callerSelect),
      field("Model", input("model", "any")),
      field("Route", input("route", "any")),
      field("Status", input("status", "200, 4xx, 5xx")),
      field("Trace id", input("trace_id", "any")),
      field(
        "Since (local time)",
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
    const cursor = state.tracePages.at(-1);
    const query = new URLSearchParams({
      ...f,
      limit: String(TRACE_PAGE),
      ...(cursor ? { before: cursor } : {}),
    });
    const page = await get(`/admin/traces?${query}`);
    const first = (state.tracePages.length - 1) * TRACE_PAGE;
    const pager = h(
      "div",
      { class: "toolbar", "data-testid": "trace-pager" },
      h("button", {
        type: "button",
        "data-testid": "newer",
        disabled: state.tracePages.length === 1,
        onclick: () => {
          state.tracePages.pop();
          render();
        },
      }, "← Newer"),
      h("span", {
        class: "muted",
        "data-testid": "trace-range",
        text: page.data.length === 0
          ? "No calls match."
          : `Calls ${count(first + 1)}–${count(first + page.data.length)}`,
      }),
      h("button", {
        type: "button",
        "data-testid": "older",
        disabled: !page.next,
        onclick: () => {
          state.tracePages.push(page.next);
          render();
        },
      }, "Older →"),
      h("button", {
        type: "button",
        class: "right",
        "data-testid": "traces-csv",
        onclick: async () => {
          const all = await get(
            `/admin/traces?${new URLSearchParams({ ...f, limit: "1000" })}`,
          );
          download("traces.csv", tracesCsv(all.data));
        },
      }, "Download CSV (newest 1,000)"),
    );
    const detail = state.trace
      ? h(
        "section",
        { class: "panel", "aria-label": "Trace detail" },
        h(
          "div",
          { class: "toolbar" },
          h("h2", { text: "Call detail" }),
          h("button", {
            type: "button",
            class: "right",
            "data-testid": "close-detail",
            onclick: () => {
              state.trace = undefined;
              render();
            },
          }, "Close"),
        ),
        traceFields(state.trace),
      )
      : h("p", {
        class: "muted",
        "data-testid": "trace-hint",
        text: "Pick a call to see its detail.",
      });
    return [
      form,
      detail,
      pager,
      table(
        traceColumns([
          { label: "Caller", value: (t) => t.callerName ?? t.callerId },
          { label: "Route", value: (t) => t.route },
        ]),
        page.data,
        {
          testid: "traces-table",
          empty: "No calls match.",
          onRow: (trace) => {
            state.trace = trace;
            render();
          },
        },
      ),
    ];
  },
};

function createdKey() {
  if (!state.created) return null;
  const { name, key } = state.created;
  state.created = undefined;
  const status = h("span", { class: "muted", role: "status" });
  return h(
    "div",
    { class: "notice", "data-testid": "created-key" },
    h("p", {
      text: `Created "${name}". Its key is shown this once; copy it now:`,
    }),
    h(
      "div",
      { class: "copy" },
      h("code", { "data-testid": "created-key-value", text: key }),
      h("button", {
        type: "button",
        "data-testid": "copy-key",
        onclick: async () => {
          try {
            await navigator.clipboard.writeText(key);
            status.textContent = "Copied.";
          } catch {
            // No clipboard (a page not served over HTTPS or localhost): select it.
            getSelection().selectAllChildren(
              document.querySelector("[data-testid=created-key-value]"),
            );
            status.textContent = "Selected: press Ctrl+C to copy.";
          }
        },
      }, "Copy key"),
      status,
    ),
  );
}

function createCallerForm() {
  const name = h("input", {
    name: "name",
    required: true,
    maxlength: "200",
    "data-testid": "new-caller-name",
  });
  const credits = h("input", {
    name: "credits",
    type: "number",
    min: "0",
    step: "any",
    value: "10",
    "data-testid": "new-caller-credits",
  });
  const message = formError();
  return h(
    "form",
    {
      class: "inline",
      "data-testid": "create-caller-form",
      onsubmit: async (event) => {
        event.preventDefault();
        message.textContent = "";
        try {
          const made = await call("/admin/keys", {
            method: "POST",
            body: JSON.stringify({
              name: name.value,
              credits: Number(credits.value),
            }),
          });
          state.created = { name: made.name, key: made.key };
          render();
        } catch (error) {
          message.textContent = error.message;
        }
      },
    },
    field("New caller's name", name),
    field("Opening credit (USD)", credits),
    h("button", {
      class: "primary",
      type: "submit",
      "data-testid": "create-caller",
    }, "Create caller"),
    message,
  );
}

function topUpPanel(caller) {
  if (!caller) return null;
  const amount = h("input", {
    name: "amount",
    type: "number",
    step: "any",
    required: true,
    value: "5",
    "data-testid": "topup-amount",
  });
  const message = formError();
  return panel(
    `Add credit to "${caller.name}" (balance ${usd(caller.balance)})`,
    "topup-panel",
    h(
      "form",
      {
        class: "inline",
        onsubmit: (event) => {
          event.preventDefault();
          submit(
            message,
            () =>
              call(`/admin/keys/${encodeURIComponent(caller.id)}/credits`, {
                method: "POST",
                body: JSON.stringify({ amount: Number(amount.value) }),
              }),
          );
        },
      },
      field("Amount (USD; negative takes credit away)", amount),
      h("button", {
        class: "primary",
        type: "submit",
        "data-testid": "topup-submit",
      }, "Add credit"),
      h("button", { type: "button", onclick: closeEditor }, "Cancel"),
      message,
    ),
  );
}

function revokePanel(caller) {
  if (!caller) return null;
  const message = formError();
  return panel(
    `Revoke "${caller.name}"?`,
    "revoke-panel",
    h("p", {
      text:
        "Its key stops working at once, on every gateway process. This cannot be undone: the caller needs a new key.",
    }),
    h(
      "div",
      { class: "toolbar" },
      h("button", {
        type: "button",
        class: "danger",
        "data-testid": "revoke-confirm",
        onclick: () =>
          submit(
            message,
            () =>
              call(`/admin/keys/${encodeURIComponent(caller.id)}`, {
                method: "DELETE",
              }),
          ),
      }, "Revoke the key"),
      h("button", { type: "button", onclick: closeEditor }, "Cancel"),
      message,
    ),
  );
}

/** `datetime-local` wants local time without a zone. */
function localInput(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000)
    .toISOString().slice(0, 16);
}

function limitsPanel(caller) {
  if (!caller) return null;
  const limits = caller.limits ?? {};
  const number = (name, value, attrs = {}) =>
    h("input", {
      name,
      type: "number",
      min: "0",
      step: "1",
      value: value ?? "",
      "data-limit": name,
      ...attrs,
    });
  const rpm = number("rpm", limits.rpm);
  const tpm = number("tpm", limits.tpm);
  const budget = number("spend", limits.spend?.amount, { step: "any" });
  const period = h(
    "select",
    { name: "period", "data-limit": "period" },
    ["day", "week", "month"].map((p) =>
      h("option", { value: p, selected: limits.spend?.period === p }, p)
    ),
  );
  const models = h("input", {
    name: "models",
    value: limits.models?.join(", ") ?? "",
    placeholder: "every model",
    "data-limit": "models",
  });
  const expires = h("input", {
    name: "expiresAt",
    type: "datetime-local",
    value: localInput(limits.expiresAt),
    "data-limit": "expiresAt",
  });
  const message = formError();
  const save = (value) =>
    submit(message, () =>
      call(`/admin/keys/${encodeURIComponent(caller.id)}`, {
        method: "PATCH",
        body: JSON.stringify({ limits: value }),
      }));
  return panel(
    `Limits of "${caller.name}"`,
    "limits-panel",
    h("p", {
      class: "muted",
      text:
        "Leave a field empty for no limit. The budget is a spend cap per calendar period (UTC), on top of the balance.",
    }),
    h(
      "form",
      {
        class: "inline",
        onsubmit: (event) => {
          event.preventDefault();
          const next = {};
          if (rpm.value) next.rpm = Number(rpm.value);
          if (tpm.value) next.tpm = Number(tpm.value);
          if (budget.value) {
            next.spend = { amount: Number(budget.value), period: period.value };
          }
          const allowed = models.value.split(",").map((m) => m.trim())
            .filter(Boolean);
          if (allowed.length) next.models = allowed;
          if (expires.value) {
            next.expiresAt = new Date(expires.value).toISOString();
          }
          save(Object.keys(next).length ? next : null);
        },
      },
      field("Requests per minute", rpm),
      field("Tokens per minute", tpm),
      field("Budget (USD)", budget),
      field("Budget period", period),
      field("Allowed models (comma-separated)", models),
      field("Expires (local time)", expires),
      h("button", {
        class: "primary",
        type: "submit",
        "data-testid": "limits-save",
      }, "Save limits"),
      h("button", {
        type: "button",
        "data-testid": "limits-clear",
        onclick: () => save(null),
      }, "Remove all limits"),
      h("button", { type: "button", onclick: closeEditor }, "Cancel"),
      message,
    ),
  );
}

/**
 * Waits (up to 10 s) until this process serves the change to model `id`:
 * the live catalog reaches every process within a few seconds, and the table
 * should show what is charged, not what was asked for.
 */
async function served(done, id) {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const models = (await get("/admin/models")).data;
    if (done(models.find((m) => m.id === id))) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(
    `Saved, but this gateway does not serve the change to "${id}" yet; reload in a moment`,
  );
}

function modelPath(id) {
  return `/admin/models/${id.split("/").map(encodeURIComponent).join("/")}`;
}

function modelPanel(entry) {
  const isNew = entry === undefined;
  const m = entry ?? {
    id: "",
    provider: "openai",
    upstream: "",
    routes: ["chat"],
    pricing: { input: 0, output: 0 },
    maxOutputTokens: 4096,
  };
  const text = (name, value, attrs = {}) =>
    h("input", {
      name,
      value: value ?? "",
      "data-model-field": name,
      ...attrs,
    });
  const money = (name, value) =>
    text(name, value, { type: "number", min: "0", step: "any" });
  const id = text("id", m.id, { required: true });
  const provider = text("provider", m.provider, { required: true });
  const upstream = text("upstream", m.upstream, { required: true });
  const routes = text("routes", m.routes.join(", "), { required: true });
  const input = money("input", m.pricing.input);
  const cached = money("cachedInput", m.pricing.cachedInput);
  const output = money("output", m.pricing.output);
  const maxOutput = text("maxOutputTokens", m.maxOutputTokens, {
    type: "number",
    min: "1",
    step: "1",
  });
  const alternates = text("alternates", m.alternates?.join(", "));
  const life = m.lifecycle ?? {};
  const deprecated = text("deprecated", life.deprecated?.slice(0, 10), {
    type: "date",
  });
  const retires = text("retires", life.retires?.slice(0, 10), { type: "date" });
  const successor = text("successor", life.successor);
  const reroute = h("input", {
    type: "checkbox",
    name: "reroute",
    checked: life.reroute === true,
    "data-model-field": "reroute",
  });
  const message = formError();
  const list = (value) =>
    value.split(",").map((part) => part.trim()).filter(Boolean);
  return panel(
    isNew ? "Add a model" : `Edit "${m.id}"`,
    "model-panel",
    h(
      "form",
      {
        class: "inline",
        onsubmit: (event) => {
          event.preventDefault();
          const { id: _id, ...rest } = m;
          const pricing = {
            ...m.pricing,
            input: Number(input.value),
            output: Number(output.value),
          };
          if (cached.value === "") delete pricing.cachedInput;
          else pricing.cachedInput = Number(cached.value);
          const body = {
            ...rest,
            provider: provider.value.trim(),
            upstream: upstream.value.trim(),
            routes: list(routes.value),
            pricing,
            maxOutputTokens: Number(maxOutput.value),
          };
          if (list(alternates.value).length) {
            body.alternates = list(alternates.value);
          } else delete body.alternates;
          // Dates as typed keep their time of day when unchanged.
          const keep = (typed, stored) =>
            typed === stored?.slice(0, 10) ? stored : typed;
          const lifecycle = {
            ...(deprecated.value &&
              { deprecated: keep(deprecated.value, life.deprecated) }),
            ...(retires.value &&
              { retires: keep(retires.value, life.retires) }),
            ...(successor.value.trim() &&
              { successor: successor.value.trim() }),
            ...(reroute.checked && { reroute: true }),
          };
          if (Object.keys(lifecycle).length) body.lifecycle = lifecycle;
          else delete body.lifecycle;
          const target = isNew ? id.value.trim() : m.id;
          submit(message, async () => {
            const saved = await call(modelPath(target), {
              method: "PUT",
              body: JSON.stringify(body),
            });
            message.textContent = "Saved; waiting for the gateway to serve it…";
            await served((entry) =>
              entry?.id === target &&
              JSON.stringify(entry) === JSON.stringify(saved), target);
          });
        },
      },
      isNew ? field("Model id", id) : null,
      field("Provider", provider),
      field("Upstream id", upstream),
      field("Routes (comma-separated)", routes),
      field("Input $/M tokens", input),
      field("Cached input $/M", cached),
      field("Output $/M tokens", output),
      field("Max output tokens", maxOutput),
      field("Falls back to", alternates),
      field("Deprecated from", deprecated),
      field("Retires on", retires),
      field("Successor", successor),
      h(
        "label",
        { class: "field checkbox" },
        h("span", { text: "After retirement" }),
        h("span", {}, reroute, " serve the successor"),
      ),
      h("button", {
        class: "primary",
        type: "submit",
        "data-testid": "model-save",
      }, "Save model"),
      h("button", { type: "button", onclick: closeEditor }, "Cancel"),
      message,
    ),
  );
}

/** A catalog entry's end of life: deprecated from, retires on, successor. */
function lifecycle(entry) {
  const life = entry.lifecycle;
  if (!life) return "";
  const day = (iso) => iso.slice(0, 10);
  const parts = [];
  if (life.deprecated) parts.push(`deprecated ${day(life.deprecated)}`);
  if (life.retires) parts.push(`retires ${day(life.retires)}`);
  if (life.successor) {
    parts.push(
      `${life.reroute ? "then served by" : "successor"} ${life.successor}`,
    );
  }
  return h("span", {
    class: "warn",
    "data-lifecycle": entry.id,
    text: parts.join(" · "),
  });
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

function stateOf(key) {
  if (key.state === "healthy") return key.inFlight > 0 ? "in use" : "ready";
  const until = key.coolUntil
    ? ` until ${time(Date.parse(key.coolUntil))}`
    : "";
  if (key.state === "cooling") return `cooling down${until}`;
  if (key.state === "refused") {
    return `refused by the provider (revoked?)${until}`;
  }
  return "probing";
}

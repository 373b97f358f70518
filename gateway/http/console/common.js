// Shared by the operator console and the caller page: sign-in kept for this
// tab only (sessionStorage: never a URL, never a cookie), authenticated
// fetches, formatting, tables, CSV and charts (uPlot, served by the gateway).
// Every string reaches the page as text (`textContent`, text nodes), never as
// HTML, so nothing a caller or provider sent can run here.

/** Creates an element with attributes and children (children as text). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "text") el.textContent = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** A credential kept in this tab's sessionStorage. */
export function credential(name) {
  return {
    get: () => sessionStorage.getItem(name),
    set: (value) => sessionStorage.setItem(name, value),
    clear: () => sessionStorage.removeItem(name),
  };
}

/** Thrown for a 401: the page signs out. */
export class Unauthorized extends Error {}

/** Fetches JSON with `Authorization: Bearer <token>`. */
export async function api(token, path, init = {}) {
  const response = await fetch(path, {
    ...init,
    headers: {
      authorization: `Bearer ${token}`,
      ...(init.body ? { "content-type": "application/json" } : {}),
      ...init.headers,
    },
  });
  const body = await response.json().catch(() => ({}));
  if (response.status === 401) throw new Unauthorized(body?.error?.message);
  if (!response.ok) {
    throw new Error(
      body?.error?.message ?? `${response.status} ${response.statusText}`,
    );
  }
  return body;
}

/** The sign-in form; `check(token)` resolves when the token works. */
export function signIn(root, { title, label, hint, check, onSignedIn }) {
  const input = h("input", {
    id: "signin-token",
    type: "password",
    autocomplete: "off",
    "data-testid": "signin-token",
  });
  const message = h("p", {
    class: "error",
    role: "alert",
    "data-testid": "signin-error",
  });
  const form = h(
    "form",
    {
      class: "signin",
      onsubmit: async (event) => {
        event.preventDefault();
        message.textContent = "";
        const token = input.value.trim();
        if (!token) return;
        try {
          await check(token);
          onSignedIn(token);
        } catch (error) {
          message.textContent = error instanceof Unauthorized
            ? `Wrong ${label.toLowerCase()}: it was not accepted.`
            : error.message;
        }
      },
    },
    h("h1", { text: title }),
    h("p", { class: "muted", text: hint }),
    h("label", { for: "signin-token", text: label }),
    input,
    h("button", {
      class: "primary",
      type: "submit",
      "data-testid": "signin-submit",
    }, "Sign in"),
    message,
  );
  root.replaceChildren(form);
  input.focus();
}

const REFRESH_MS = 10_000;

/**
 * A signed-in page: the sign-in form until a credential works, then a header
 * (title, `nav`, auto-refresh, sign-out) over what `content(call)` builds,
 * where `call(path, init)` fetches with the credential. A 401 signs out.
 * Auto-refresh (off by default, remembered for the tab) rebuilds the content
 * every 10 s in place, except while a field has the focus or an editor is
 * open (`[data-editing]`), so it never eats what someone is typing.
 *
 * @returns `render()`, to rebuild the page after a change.
 */
export function signedInPage(
  { storageKey, signInOptions, title, nav, content },
) {
  const root = document.getElementById("app");
  const stored = credential(storageKey);
  const autoRefresh = credential(`${storageKey}.refresh`);
  const call = (path, init) => api(stored.get(), path, init);
  let timer;
  let main;
  const start = () => {
    if (stored.get()) return render();
    clearInterval(timer);
    signIn(root, {
      ...signInOptions,
      onSignedIn: (value) => {
        stored.set(value);
        render();
      },
    });
  };
  const signOut = () => {
    stored.clear();
    start();
  };
  const fill = async (target) => {
    target.setAttribute("aria-busy", "true");
    try {
      const parts = (await content(call)).filter((part) =>
        part !== null && part !== undefined && part !== false
      );
      if (target === main) target.replaceChildren(...parts);
    } catch (error) {
      if (error instanceof Unauthorized) return signOut();
      target.replaceChildren(
        h("p", { class: "error", role: "alert", text: error.message }),
      );
    } finally {
      target.removeAttribute("aria-busy");
    }
  };
  const refresh = () => {
    const busy = document.activeElement?.matches?.("input, select, textarea") ||
      main?.querySelector("[data-editing]");
    if (main?.isConnected && !busy) fill(main);
  };
  const setTimer = () => {
    clearInterval(timer);
    if (autoRefresh.get() === "on") timer = setInterval(refresh, REFRESH_MS);
  };
  async function render() {
    // What was shown stays until its replacement is ready (no flash, and the
    // scroll position holds); `aria-busy` marks the wait.
    const shown = main?.isConnected ? [...main.childNodes] : [];
    main = h(
      "main",
      { "data-testid": "page" },
      shown.length ? shown : h("p", { class: "muted", text: "Loading…" }),
    );
    const toggle = h("input", {
      type: "checkbox",
      id: "auto-refresh",
      "data-testid": "auto-refresh",
      checked: autoRefresh.get() === "on",
      onchange: (event) => {
        if (event.target.checked) autoRefresh.set("on");
        else autoRefresh.clear();
        setTimer();
      },
    });
    root.replaceChildren(
      h(
        "header",
        {},
        h("h1", { text: title }),
        nav ? nav() : null,
        h(
          "div",
          { class: "header-tools" },
          h(
            "label",
            { class: "toggle", for: "auto-refresh" },
            toggle,
            " Auto-refresh",
          ),
          h("button", {
            type: "button",
            onclick: signOut,
            "data-testid": "signout",
          }, "Sign out"),
        ),
      ),
      main,
    );
    setTimer();
    await fill(main);
  }
  // After the calling module has finished loading (its pages are defined below the call).
  queueMicrotask(start);
  return render;
}

/** USD with enough digits for small amounts. */
export function usd(value) {
  if (value === null || value === undefined) return "—";
  if (value < 1) return `$${value.toFixed(6)}`;
  // Cents where the amount is whole cents; else to the micro-USD, so a
  // balance a few calls below $10 never reads "$10.00".
  const cents = value.toFixed(2);
  return Math.abs(Number(cents) - value) < 5e-7
    ? `$${cents}`
    : `$${value.toFixed(6).replace(/0+$/, "")}`;
}

/** A count with separators. */
export function count(value) {
  return (value ?? 0).toLocaleString("en-US");
}

/** Milliseconds, or a dash. */
export function ms(value) {
  return value === null || value === undefined ? "—" : `${count(value)} ms`;
}

/** A percentage; a dash where there were no requests to take it of. */
export function percent(value, requests) {
  if (!requests) return "—";
  return `${((value ?? 0) * 100).toFixed(1)}%`;
}

/** A time in UTC, to the second. */
export function time(epochMs) {
  return `${
    new Date(epochMs).toISOString().replace("T", " ").slice(0, 19)
  } UTC`;
}

/** The name a model or provider of the usage report is shown under. */
export function groupLabel(name) {
  return name === "-" ? "refused before routing" : name;
}

/** A stat card. */
export function card(label, value, testid) {
  return h(
    "div",
    { class: "card" },
    h("div", { class: "label", text: label }),
    h("div", { class: "value", "data-testid": testid, text: value }),
  );
}

/** A card of three percentiles, each with its name, wrapping where narrow. */
export function percentileCard(label, p, testid) {
  const value = p.p50 === null
    ? h("div", { class: "value", "data-testid": testid, text: "—" })
    : h(
      "div",
      { class: "value split", "data-testid": testid },
      ["p50", "p95", "p99"].map((q) =>
        h(
          "span",
          { "data-percentile": q },
          h("small", { text: q }),
          ` ${ms(p[q])}`,
        )
      ),
    );
  return h(
    "div",
    { class: "card" },
    h("div", { class: "label", text: label }),
    value,
  );
}

/** Labelled fields (`[label, value]`; a `null` value is left out). */
export function fields(pairs, testid) {
  return h(
    "dl",
    { class: "fields", "data-testid": testid },
    pairs.filter(([, value]) => value !== null && value !== undefined).map((
      [label, value],
    ) => [
      h("dt", { text: label }),
      h("dd", { "data-field": label }, value),
    ]),
  );
}

/**
 * A table from column specs `{label, value(row), num?}`, in a box that
 * scrolls sideways on a narrow screen.
 */
export function table(columns, rows, { testid, onRow, empty } = {}) {
  return h(
    "div",
    { class: "table-scroll" },
    h(
      "table",
      { "data-testid": testid },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          columns.map((c) =>
            h("th", { class: c.num ? "num" : "", scope: "col", text: c.label })
          ),
        ),
      ),
      h(
        "tbody",
        {},
        rows.length === 0
          ? h(
            "tr",
            {},
            h("td", {
              colspan: columns.length,
              class: "muted",
              text: empty ?? "Nothing in this range.",
            }),
          )
          : rows.map((row) =>
            h(
              "tr",
              {
                class: onRow ? "clickable" : "",
                tabindex: onRow ? "0" : undefined,
                onclick: onRow ? () => onRow(row) : undefined,
                onkeydown: onRow
                  ? (event) => event.key === "Enter" && onRow(row)
                  : undefined,
              },
              columns.map((c) => {
                const value = c.value(row);
                return h(
                  "td",
                  { class: c.num ? "num" : "" },
                  value instanceof Node ? value : String(value ?? ""),
                );
              }),
            )
          ),
      ),
    ),
  );
}

/** The range buttons. */
export function ranges(current, onChange) {
  return h(
    "div",
    { class: "ranges", "data-testid": "ranges" },
    ["1h", "24h", "7d", "30d"].map((range) =>
      h("button", {
        type: "button",
        "aria-pressed": String(range === current),
        "data-range": range,
        onclick: () => onChange(range),
      }, range)
    ),
  );
}

const CHART_HEIGHT = 180;

/**
 * Draws a uPlot chart in `box` once the box is on the page, and keeps it as
 * wide as the box when the window or layout changes.
 */
function plot(box, options, data) {
  requestAnimationFrame(() => {
    const width = () => Math.max(200, box.clientWidth - 16);
    // deno-lint-ignore no-undef
    const chart = new uPlot(
      { ...options, width: width(), height: CHART_HEIGHT },
      data,
      box,
    );
    box.dataset.width = String(width());
    const observer = new ResizeObserver(() => {
      if (!box.isConnected) {
        observer.disconnect();
        chart.destroy();
        return;
      }
      if (Number(box.dataset.width) === width()) return;
      box.dataset.width = String(width());
      chart.setSize({ width: width(), height: CHART_HEIGHT });
    });
    observer.observe(box);
  });
}

/**
 * A time-series chart of some series of a usage report. The data are also on
 * the element (`data-points`, `data-total`) for tests and scripts.
 */
export function chart(
  title,
  report,
  series,
  testid,
  format = (v) => String(v),
) {
  const x = report.series.map((p) => p.time / 1000);
  const columns = series.map((s) => report.series.map((p) => s.value(p)));
  const total = columns.reduce(
    (sum, col) => sum + col.reduce((a, b) => a + (b ?? 0), 0),
    0,
  );
  const box = h("figure", {
    class: "chart",
    "data-testid": testid,
    "data-points": String(x.length),
    "data-total": String(total),
  }, h("figcaption", { text: title }));
  plot(box, {
    legend: { show: true, live: false },
    series: [
      {},
      ...series.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: 2,
        fill: s.fill,
        points: { show: true, size: 5 },
        value: (_u, v) => v === null || v === undefined ? "—" : format(v),
      })),
    ],
    axes: [{}, { size: 76, values: (_u, ticks) => ticks.map(format) }],
  }, [x, ...columns]);
  return box;
}

/** Axis and legend format for USD. */
export function usdTick(value) {
  return value === 0 ? "$0" : `$${Number(value.toPrecision(2))}`;
}

const PALETTE = [
  "#1c7ed6",
  "#2b8a3e",
  "#f08c00",
  "#ae3ec9",
  "#0ca678",
  "#d9480f",
  "#868e96",
];

/**
 * Spend over time stacked by model: the report's `spendByModel`, the six
 * largest models and the rest as "other". Each band is drawn as the running
 * sum up to it, the largest sum first, so the bands sit on one another.
 */
export function spendChart(report) {
  const models = report.spendByModel ?? [];
  const shown = models.slice(0, 6).map((m) => ({
    label: groupLabel(m.model),
    values: m.costUsd,
  }));
  if (models.length > 6) {
    shown.push({
      label: "other",
      values: report.series.map((_, i) =>
        models.slice(6).reduce((sum, m) => sum + m.costUsd[i], 0)
      ),
    });
  }
  const x = report.series.map((p) => p.time / 1000);
  const stacked = [];
  let running = report.series.map(() => 0);
  for (const band of shown) {
    running = running.map((sum, i) => sum + band.values[i]);
    stacked.push(running);
  }
  const total = shown.reduce(
    (sum, band) => sum + band.values.reduce((a, b) => a + b, 0),
    0,
  );
  const box = h("figure", {
    class: "chart",
    "data-testid": "chart-spend",
    "data-points": String(x.length),
    "data-total": String(total),
    "data-models": shown.map((band) => band.label).join(","),
  }, h("figcaption", { text: "Spend by model (USD)" }));
  // Drawn top band first so each lower band paints over the one above it.
  const order = shown.map((_, i) => shown.length - 1 - i);
  plot(box, {
    legend: { show: true, live: false },
    series: [
      {},
      ...order.map((i) => ({
        label: shown[i].label,
        stroke: PALETTE[i % PALETTE.length],
        fill: `${PALETTE[i % PALETTE.length]}55`,
        width: 1,
        points: { show: false },
        value: (_u, _v, _s, idx) =>
          idx === null ? "" : usdTick(shown[i].values[idx]),
      })),
    ],
    axes: [{}, { size: 76, values: (_u, ticks) => ticks.map(usdTick) }],
  }, [x, ...order.map((i) => stacked[i])]);
  if (shown.length === 0) {
    box.append(h("p", { class: "muted", text: "No spend in this range." }));
  }
  return box;
}

/**
 * The columns of a trace table: time, model, provider, status, tokens,
 * cost, latency, error and trace id, with `extra` columns after the time.
 */
export function traceColumns(extra = []) {
  return [
    { label: "Time (UTC)", value: (t) => time(t.time).slice(0, 19) },
    ...extra,
    { label: "Model", value: (t) => t.model ?? "—" },
    { label: "Provider", value: (t) => t.provider ?? "—" },
    { label: "Status", num: true, value: (t) => t.status },
    {
      label: "Tokens",
      num: true,
      value: (t) => count(t.inputTokens + t.outputTokens),
    },
    { label: "Cost", num: true, value: (t) => usd(t.costMicros / 1e6) },
    { label: "Latency", num: true, value: (t) => ms(t.latencyMs) },
    {
      label: "Error",
      value: (t) =>
        t.error
          ? h("span", { class: "error clip", title: t.error, text: t.error })
          : "",
    },
    { label: "Trace id", value: (t) => t.traceId },
  ];
}

/** A trace as labelled fields: dates as dates, money in USD. */
export function traceFields(t) {
  const charged = t.charged;
  return fields([
    ["Time", time(t.time)],
    ["Caller", t.callerName ? `${t.callerName} (${t.callerId})` : t.callerId],
    ["Route", t.route],
    ["Model", t.model ?? "— (refused before routing)"],
    ["Provider", t.provider ?? "—"],
    ["Provider key", t.providerKeyId ?? null],
    ["Status", String(t.status)],
    ["Stream", t.stream ? "yes" : "no"],
    ["Cost", usd(t.costMicros / 1e6)],
    [
      "Tokens",
      `${count(t.inputTokens)} in (${count(t.cachedTokens)} cached) · ${
        count(t.outputTokens)
      } out`,
    ],
    [
      "Charged as",
      charged
        ? `${count(charged.input)} input · ${
          count(charged.cacheRead)
        } cache read · ${
          count(charged.cacheWrite5m + charged.cacheWrite1h)
        } cache write · ${count(charged.output)} output (${
          count(charged.reasoning)
        } reasoning)`
        : null,
    ],
    ["Estimated", t.estimated?.length ? t.estimated.join(", ") : null],
    ["Latency", ms(t.latencyMs)],
    ["Time to first token", t.ttftMs === undefined ? null : ms(t.ttftMs)],
    [
      "Attempts",
      t.attempts?.length
        ? t.attempts.map((a) =>
          `${a.model} (${a.provider}): ${a.status}${
            a.error ? ` ${a.error}` : ""
          }`
        ).join(" → ")
        : null,
    ],
    ["Error", t.error ?? null],
    ["Trace id", t.traceId],
    ["Request id", t.requestId],
    ["Request body", body(t.requestBody)],
    ["Response body", body(t.responseBody)],
  ], "trace-detail");
}

/** A kept body (when the operator turned that on), pretty when it is JSON. */
function body(text) {
  if (typeof text !== "string") return null;
  let shown = text;
  try {
    shown = JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    // Cut short or not JSON: shown as kept.
  }
  return h("pre", { class: "body", text: shown });
}

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

/** A caller's limits in words, one line each (none: "No limits"). */
export function limitLines(limits) {
  if (!limits) return ["No limits"];
  const lines = [];
  const per = (n, unit) => `${count(n)} ${unit}${n === 1 ? "" : "s"}/min`;
  if (limits.rpm !== undefined) lines.push(per(limits.rpm, "request"));
  if (limits.tpm !== undefined) lines.push(per(limits.tpm, "token"));
  if (limits.spend) {
    lines.push(`Budget ${usd(limits.spend.amount)} per ${limits.spend.period}`);
  }
  if (limits.models) lines.push(`Models: ${limits.models.join(", ")}`);
  if (limits.expiresAt) {
    lines.push(`Expires ${time(Date.parse(limits.expiresAt))}`);
  }
  return lines.length ? lines : ["No limits"];
}

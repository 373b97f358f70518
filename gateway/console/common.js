// Shared by the operator console and the caller page: sign-in kept for this
// tab only (sessionStorage: never a URL, never a cookie), authenticated
// fetches, formatting, tables and charts (uPlot, served by the gateway).

/** Creates an element with attributes and children. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "text") el.textContent = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
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
    type: "password",
    autocomplete: "off",
    placeholder: label,
    "data-testid": "signin-token",
  });
  const message = h("p", { class: "error", "data-testid": "signin-error" });
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

/**
 * A signed-in page: the sign-in form until a credential works, then a header
 * (title, `nav`, sign-out) over what `content(call)` builds, where `call(path,
 * init)` fetches with the credential. A 401 signs out.
 *
 * @returns `render()`, to rebuild the page after a change.
 */
export function signedInPage(
  { storageKey, signInOptions, title, nav, content },
) {
  const root = document.getElementById("app");
  const stored = credential(storageKey);
  const call = (path, init) => api(stored.get(), path, init);
  const start = () => {
    if (stored.get()) return render();
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
  async function render() {
    const main = h(
      "main",
      { "data-testid": "page" },
      h("p", { class: "muted", text: "Loading…" }),
    );
    root.replaceChildren(
      h(
        "header",
        {},
        h("h1", { text: title }),
        nav ? nav() : null,
        h("button", {
          type: "button",
          class: "right",
          onclick: signOut,
          "data-testid": "signout",
        }, "Sign out"),
      ),
      main,
    );
    try {
      main.replaceChildren(...await content(call));
    } catch (error) {
      if (error instanceof Unauthorized) return signOut();
      main.replaceChildren(h("p", { class: "error", text: error.message }));
    }
  }
  // After the calling module has finished loading (its pages are defined below the call).
  queueMicrotask(start);
  return render;
}

/** USD with enough digits for small amounts. */
export function usd(value) {
  if (value === null || value === undefined) return "–";
  return `$${value < 1 ? value.toFixed(6) : value.toFixed(2)}`;
}

/** A count with separators. */
export function count(value) {
  return (value ?? 0).toLocaleString("en-US");
}

/** Milliseconds, or a dash. */
export function ms(value) {
  return value === null || value === undefined ? "–" : `${value} ms`;
}

/** A percentage. */
export function percent(value) {
  return `${((value ?? 0) * 100).toFixed(1)}%`;
}

/** A time. */
export function time(epochMs) {
  return new Date(epochMs).toISOString().replace("T", " ").slice(0, 19);
}

/** Three percentiles on one line. */
export function percentiles(p) {
  return p.p50 === null ? "–" : `${p.p50} · ${p.p95} · ${p.p99} ms`;
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

/** A table from column specs `{label, value(row), num?}`. */
export function table(columns, rows, { testid, onRow } = {}) {
  return h(
    "table",
    { "data-testid": testid },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        columns.map((c) =>
          h("th", { class: c.num ? "num" : "", text: c.label })
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
            text: "Nothing in this range.",
          }),
        )
        : rows.map((row) =>
          h(
            "tr",
            {
              class: onRow ? "clickable" : "",
              onclick: onRow ? () => onRow(row) : undefined,
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

/**
 * A time-series chart of some series of a usage report, sized to its box once
 * the box is on the page. The data are also on the element (`data-points`,
 * `data-total`) for tests and scripts.
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
  const box = h("div", {
    class: "chart",
    "data-testid": testid,
    "data-points": String(x.length),
    "data-total": String(total),
  }, h("h3", { text: title }));
  requestAnimationFrame(() => {
    // deno-lint-ignore no-undef
    new uPlot(
      {
        width: Math.max(280, box.clientWidth - 16),
        height: 180,
        legend: { show: true, live: false },
        series: [
          {},
          ...series.map((s) => ({
            label: s.label,
            stroke: s.color,
            width: 2,
            fill: s.fill,
            points: { show: true, size: 5 },
            value: (_u, v) => v === null || v === undefined ? "–" : format(v),
          })),
        ],
        axes: [{}, { size: 76, values: (_u, ticks) => ticks.map(format) }],
      },
      [x, ...columns],
      box,
    );
  });
  return box;
}

/** Axis and legend format for USD. */
export function usdTick(value) {
  return value === 0 ? "$0" : `$${Number(value.toPrecision(2))}`;
}

/** The spend chart both pages show. */
export function spendChart(report) {
  return chart(
    "Spend (USD)",
    report,
    [
      {
        label: "spend",
        color: "#2b8a3e",
        fill: "rgba(43,138,62,0.1)",
        value: (p) => p.costUsd,
      },
    ],
    "chart-spend",
    usdTick,
  );
}

/**
 * The columns of a trace table: time, model, status, tokens, cost, latency,
 * trace id, with `extra` columns inserted after the time.
 */
export function traceColumns(extra = []) {
  return [
    { label: "Time", value: (t) => time(t.time) },
    ...extra,
    { label: "Model", value: (t) => t.model ?? "–" },
    { label: "Status", num: true, value: (t) => t.status },
    {
      label: "Tokens",
      num: true,
      value: (t) => count(t.inputTokens + t.outputTokens),
    },
    { label: "Cost", num: true, value: (t) => usd(t.costMicros / 1e6) },
    { label: "Latency", num: true, value: (t) => ms(t.latencyMs) },
    { label: "Trace id", value: (t) => t.traceId },
  ];
}

// The console's trace browser: filters, pages of 200 past the newest, a
// trace opened as fields, and the traces CSV.
import { h, table } from "./dom.js";
import { count } from "./format.js";
import { traceColumns, traceFields } from "./traces.js";
import { download, tracesCsv } from "./csv.js";
import { field, get, render, state } from "./console_shell.js";

const TRACE_PAGE = 200;

/** The trace browser. */
export async function tracesTab() {
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
}

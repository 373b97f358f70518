// Building the page: elements from plain values, and the widgets both pages
// share (cards, labelled fields, tables, range buttons).
// Every string reaches the page as text (`textContent`, text nodes), never as
// HTML, so nothing a caller or provider sent can run here.
import { ms } from "./format.js";

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

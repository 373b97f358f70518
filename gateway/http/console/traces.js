// A trace as a table row and as labelled fields.
// Every string reaches the page as text (`textContent`, text nodes), never as
// HTML, so nothing a caller or provider sent can run here.
import { fields, h } from "./dom.js";
import { count, ms, time, usd } from "./format.js";

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

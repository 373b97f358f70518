// Charts of a usage report, drawn by uPlot (served by the gateway itself).
import { h } from "./dom.js";
import { groupLabel, usdTick } from "./format.js";

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

/**
 * The report's summary per scenario and its reward distribution (an inline
 * SVG with a table beside it for readers without the chart).
 *
 * @module
 */
import type { EvalResult } from "../run/result.ts";
import { countsAsFailure, rewardStats } from "../run/stats.ts";
import { esc, isScored, num, usd } from "./html.ts";

export function summarySection(results: EvalResult[]): string {
  // Rewards as the runner's statistics read them: a number, or null (an
  // error, which they score 0 when the agent had acted).
  const clean = results.map((r) => ({
    ...r,
    reward: isScored(r) ? num(r.reward) : null,
    ...(r.reward !== null && !isScored(r) && !r.error &&
      { error: "The reward is not a finite number" }),
  }));
  const groups = new Map<string, EvalResult[]>();
  for (const result of clean) {
    groups.set(result.scenario, [
      ...(groups.get(result.scenario) ?? []),
      result,
    ]);
  }
  const most = Math.max(1, ...clean.map((r) => num(r.repeat) + 1));
  const ks = most > 1 ? [1, most] : [1];
  const row = (name: string, list: EvalResult[], tag: "td" | "th" = "td") => {
    const sum = (f: (r: EvalResult) => number) =>
      list.reduce((total, r) => total + f(r), 0);
    const stats = rewardStats(list);
    const fixed = (value: number | undefined) =>
      value === undefined || Number.isNaN(value) ? "–" : value.toFixed(3);
    const cells = [
      String(list.length),
      fixed(stats.mean),
      stats.ci95 > 0 ? `±${stats.ci95.toFixed(3)}` : "–",
      ...ks.map((k) => fixed(stats.passAt.get(k))),
      String(stats.countedAsFailures),
      String(stats.notScored),
      (sum((r) => num(r.steps)) / Math.max(1, list.length)).toFixed(1),
      String(sum((r) => num(r.tokens?.input) + num(r.tokens?.output))),
      usd(sum((r) => num(r.cost_usd))),
    ];
    return `<tr><${tag} scope="row">${esc(name)}</${tag}>${
      cells.map((cell) => `<td class="n">${esc(cell)}</td>`).join("")
    }</tr>`;
  };
  const heads = [
    "runs",
    "mean reward",
    "95% interval",
    ...ks.map((k) => `pass@${k}`),
    "errors as 0",
    "not scored",
    "mean steps",
    "tokens",
    "cost",
  ];
  return `<table>
<thead><tr><th scope="col">scenario</th>${
    heads.map((h) => `<th scope="col" class="n">${h}</th>`).join("")
  }</tr></thead>
<tbody>
${[...groups].map(([name, list]) => row(name, list, "th")).join("\n")}
</tbody>
<tfoot>${row("total", clean)}</tfoot>
</table>`;
}

/**
 * The reward histogram: ten bins over 0–1 (wider when rewards fall
 * outside), and errored runs (no reward) as a bar of their own.
 */
export function distribution(results: EvalResult[]): string {
  const scored = results.filter(isScored).map((r) => num(r.reward));
  const errors = results.length - scored.length;
  const low = Math.min(0, ...scored);
  const high = Math.max(1, ...scored);
  const bins = 10;
  const width = (high - low) / bins;
  const counts = Array.from({ length: bins }, () => 0);
  for (const reward of scored) {
    counts[Math.min(bins - 1, Math.floor((reward - low) / width))]++;
  }
  const most = Math.max(1, errors, ...counts);
  const [w, h, left, bottom, top] = [640, 220, 40, 40, 18];
  // The error bar, half a slot of gap, then the bins.
  const slot = (w - left - 10) / (bins + 1.5);
  const binX = (i: number) => left + (i + 1.5) * slot;
  const scale = (h - bottom - top) / most;
  const base = h - bottom;
  const bar = (x0: number, n: number, kind: string, title: string) => {
    const x = x0 + 4;
    const barH = n * scale;
    const mid = (x + (slot - 8) / 2).toFixed(1);
    return `<g><title>${esc(title)}</title>${
      n > 0
        ? `<rect class="bar${kind}" x="${x.toFixed(1)}" y="${
          (base - barH).toFixed(1)
        }" width="${(slot - 8).toFixed(1)}" height="${
          barH.toFixed(1)
        }"/><text x="${mid}" y="${
          (base - barH - 4).toFixed(1)
        }" text-anchor="middle">${n}</text>`
        : ""
    }</g>`;
  };
  const bars = [
    bar(left, errors, " errors", `${errors} run(s) ended in an error`),
    `<text x="${(left + slot / 2).toFixed(1)}" y="${
      base + 16
    }" text-anchor="middle">error</text>`,
    ...counts.map((n, i) => {
      const from = low + i * width;
      return bar(
        binX(i),
        n,
        "",
        `rewards ${from.toFixed(2)} to ${(from + width).toFixed(2)}${
          i === bins - 1 ? " (inclusive)" : ""
        }: ${n} run(s)`,
      );
    }),
    ...Array.from(
      { length: bins + 1 },
      (_, i) =>
        `<text x="${binX(i).toFixed(1)}" y="${
          base + 16
        }" text-anchor="middle">${esc((low + i * width).toFixed(1))}</text>`,
    ),
  ].join("");
  const sorted = [...scored].sort((a, b) => a - b);
  const median = sorted.length
    ? (sorted[Math.floor((sorted.length - 1) / 2)] +
      sorted[Math.ceil((sorted.length - 1) / 2)]) / 2
    : 0;
  const asZero = results.filter((r) => r.error && countsAsFailure(r)).length;
  return `<figure>
<svg viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" role="img" aria-labelledby="dist-caption">
<line class="axis" x1="${left}" y1="${base}" x2="${w - 10}" y2="${base}"/>
<line class="axis" x1="${left}" y1="${top}" x2="${left}" y2="${base}"/>
<text x="${left - 6}" y="${top + 4}" text-anchor="end">${most}</text>
<text x="${left - 6}" y="${base}" text-anchor="end">0</text>
<text x="${(w + left) / 2}" y="${h - 4}" text-anchor="middle">reward</text>
${bars}
</svg>
<figcaption id="dist-caption">${scored.length} run(s) with a reward: median ${
    median.toFixed(3)
  }${
    errors > 0
      ? `; ${errors} run(s) ended in an error (no reward, in red), ${asZero} of them scored 0 in the mean and pass@k`
      : "; no errors"
  }</figcaption>
</figure>`;
}

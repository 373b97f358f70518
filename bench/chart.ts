/**
 * The latency-against-offered-load chart, drawn as SVG by hand (log scale
 * latency, one colour per target, p50 solid and p99 dashed) and converted to
 * PNG with `rsvg-convert`.
 *
 * @module
 */

/** One line of the chart. */
export interface Series {
  /** Legend text. */
  label: string;
  /** Stroke colour. */
  color: string;
  /** Dashed (for p99). */
  dashed: boolean;
  /** Points: offered rate, latency ms. */
  points: [number, number][];
}

const WIDTH = 900;
const HEIGHT = 540;
const PAD = { left: 80, right: 250, top: 50, bottom: 60 };

/**
 * Draws the chart.
 *
 * @param title Title line.
 * @param series The lines.
 * @returns SVG text.
 */
export function latencyChart(title: string, series: Series[]): string {
  const xs = series.flatMap((s) => s.points.map(([x]) => x));
  const ys = series.flatMap((s) => s.points.map(([, y]) => y)).filter((y) =>
    y > 0
  );
  const xMax = Math.max(...xs);
  const yMinExp = Math.floor(Math.log10(Math.min(...ys)));
  const yMaxExp = Math.ceil(Math.log10(Math.max(...ys)));
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const x = (v: number) => PAD.left + (v / xMax) * plotW;
  const y = (v: number) =>
    PAD.top + plotH -
    ((Math.log10(Math.max(v, 10 ** yMinExp)) - yMinExp) /
        (yMaxExp - yMinExp)) * plotH;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" font-family="sans-serif" font-size="13">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${PAD.left}" y="28" font-size="16" font-weight="bold">${title}</text>`,
  ];
  for (let e = yMinExp; e <= yMaxExp; e++) {
    const label = e >= 0 ? String(10 ** e) : (10 ** e).toFixed(-e);
    parts.push(
      `<line x1="${PAD.left}" x2="${PAD.left + plotW}" y1="${y(10 ** e)}" y2="${
        y(10 ** e)
      }" stroke="#ddd"/>`,
      `<text x="${PAD.left - 8}" y="${
        y(10 ** e) + 4
      }" text-anchor="end">${label}</text>`,
    );
  }
  const rates = [...new Set(xs)].sort((a, b) => a - b);
  for (const rate of rates) {
    parts.push(
      `<line x1="${x(rate)}" x2="${x(rate)}" y1="${PAD.top}" y2="${
        PAD.top + plotH
      }" stroke="#eee"/>`,
      `<text x="${x(rate)}" y="${
        PAD.top + plotH + 18
      }" text-anchor="middle">${rate}</text>`,
    );
  }
  parts.push(
    `<rect x="${PAD.left}" y="${PAD.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`,
    `<text x="${PAD.left + plotW / 2}" y="${
      HEIGHT - 15
    }" text-anchor="middle">offered load (requests/s)</text>`,
    `<text transform="translate(22 ${
      PAD.top + plotH / 2
    }) rotate(-90)" text-anchor="middle">latency (ms, log scale)</text>`,
  );
  series.forEach((s, i) => {
    const path = s.points.map(([px, py]) => `${x(px)},${y(py)}`).join(" ");
    const dash = s.dashed ? ` stroke-dasharray="6 4"` : "";
    parts.push(
      `<polyline points="${path}" fill="none" stroke="${s.color}" stroke-width="2"${dash}/>`,
      ...s.points.map(([px, py]) =>
        `<circle cx="${x(px)}" cy="${y(py)}" r="3" fill="${s.color}"/>`
      ),
    );
    const ly = PAD.top + 10 + i * 22;
    const lx = PAD.left + plotW + 20;
    parts.push(
      `<line x1="${lx}" x2="${
        lx + 30
      }" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"${dash}/>`,
      `<text x="${lx + 38}" y="${ly + 4}">${s.label}</text>`,
    );
  });
  parts.push("</svg>");
  return parts.join("\n");
}

/**
 * Writes the SVG and converts it to PNG beside it.
 *
 * @param svg The chart.
 * @param pngPath Where the PNG goes (the SVG goes next to it).
 */
export async function writeChart(svg: string, pngPath: string): Promise<void> {
  const svgPath = pngPath.replace(/\.png$/, ".svg");
  await Deno.writeTextFile(svgPath, svg);
  const output = await new Deno.Command("rsvg-convert", {
    args: ["-o", pngPath, svgPath],
    stderr: "piped",
  }).output();
  if (!output.success) {
    throw new Error(
      `Cannot convert "${svgPath}" to PNG: ${
        new TextDecoder().decode(output.stderr)
      }`,
    );
  }
}

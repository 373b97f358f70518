/**
 * The eval report: one self-contained HTML file from a results file
 * (`deno task eval report <results.jsonl>`, or `--report` on a run). It holds
 * the summary per scenario, the reward distribution (inline SVG), and per
 * task its trajectory step by step (model text, tool calls with arguments,
 * results, screenshots, refusals, safety checks), reward and subscores,
 * tokens, cost and the gateway trace id. It loads nothing (its CSP allows
 * only inline styles and `data:` images), needs no script (a `<details>`
 * per task, a CSS-only filter), and escapes every string it shows: results
 * carry what models and environments wrote.
 *
 * Screenshots are not kept in the results' lines (a computer-use run sends
 * one per action, and JSONL lines would grow without bound): the runner's
 * command line writes each image once, named by its SHA-256, into the
 * folder beside the results (`eval-results.images/` for
 * `eval-results.jsonl`; see {@linkcode storeImages}), and the report embeds
 * them when it is built.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import type {
  Trajectory,
  TrajectoryImage,
  TrajectoryStep,
  TrajectoryToolCall,
} from "./agents/trajectory.ts";
import { rewardStats } from "./stats.ts";
import type { EvalResult } from "./result.ts";
import { REPORT_CSS } from "./report/_style.ts";

/** The page's Content-Security-Policy: nothing is fetched, no script runs. */
export const REPORT_CSP =
  "default-src 'none'; img-src data:; style-src 'unsafe-inline'";

const IMAGE_TYPES: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/gif": "gif",
  "image/webp": "webp",
};
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The file extension of an image type we show; none for any other (own keys only: not "toString"). */
function imageExt(type: unknown): string | undefined {
  return typeof type === "string" && Object.hasOwn(IMAGE_TYPES, type)
    ? IMAGE_TYPES[type]
    : undefined;
}
const SHA256 = /^[0-9a-f]{64}$/;
/** A stored image larger than this is not embedded. */
const MAX_IMAGE_FILE_BYTES = 20 * 1024 * 1024;

/**
 * The folder of a results file's images: its name without `.jsonl`, plus
 * `.images`.
 *
 * @example
 * ```ts
 * import { imagesDirFor } from "./report.ts";
 * imagesDirFor("runs/eval-results.jsonl"); // "runs/eval-results.images"
 * ```
 *
 * @param resultsPath The results file.
 * @returns The folder.
 */
export function imagesDirFor(resultsPath: string): string {
  return `${resultsPath.replace(/\.jsonl$/i, "")}.images`;
}

async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    bytes as Uint8Array<ArrayBuffer>,
  );
  return Array.from(
    new Uint8Array(digest),
    (byte) => byte.toString(16).padStart(2, "0"),
  ).join("");
}

/**
 * A result with every inline image of its trajectory written once into
 * `dir` (as `<sha256>.<ext>`) and replaced by a reference, so its JSONL line
 * stays small. Images of a type a browser cannot show, or that are not
 * base64, are dropped from the copy (the reference says so).
 *
 * @example
 * ```ts ignore
 * import { imagesDirFor, storeImages } from "./report.ts";
 * const line = JSON.stringify(await storeImages(result, imagesDirFor(out)));
 * ```
 *
 * @param result The result.
 * @param dir The images folder (made when needed).
 * @returns The result with image references.
 */
export async function storeImages(
  result: EvalResult,
  dir: string,
): Promise<EvalResult> {
  if (!result.trajectory) return result;
  let made = false;
  const store = async (image: TrajectoryImage): Promise<TrajectoryImage> => {
    if (!("data" in image)) return image;
    const ext = imageExt(image.mimeType);
    if (!ext || !BASE64.test(image.data)) {
      return {
        mimeType: String(image.mimeType).slice(0, 100),
        sha256: "",
        bytes: 0,
      };
    }
    const bytes = new Uint8Array(Buffer.from(image.data, "base64"));
    const sha256 = await sha256Hex(bytes);
    if (!made) {
      await Deno.mkdir(dir, { recursive: true });
      made = true;
    }
    await Deno.writeFile(`${dir}/${sha256}.${ext}`, bytes, { createNew: true })
      .catch((error) => {
        if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
      });
    return { mimeType: image.mimeType, sha256, bytes: bytes.length };
  };
  const trajectory: Trajectory = {
    prompt: await Promise.all(
      result.trajectory.prompt.map(async (message) =>
        message.image
          ? { ...message, image: await store(message.image) }
          : message
      ),
    ),
    steps: await Promise.all(
      result.trajectory.steps.map(async (step) => ({
        ...step,
        tool_calls: await Promise.all(
          step.tool_calls.map(async (call) =>
            call.result
              ? {
                ...call,
                result: {
                  ...call.result,
                  images: await Promise.all(call.result.images.map(store)),
                },
              }
              : call
          ),
        ),
      })),
    ),
  };
  return { ...result, trajectory };
}

/** What {@linkcode readResults} read. */
export interface ResultsFile {
  /** The results, in task order. */
  results: EvalResult[];
  /** Lines that were not a result (not JSON, or without a task and scenario). */
  skipped: number;
}

/**
 * Reads a results file's lines; a line that is not a result is counted,
 * not fatal.
 *
 * @param text The JSONL text.
 * @returns The results and how many lines were skipped.
 */
export function readResults(text: string): ResultsFile {
  const results: EvalResult[] = [];
  let skipped = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      skipped++;
      continue;
    }
    const result = value as EvalResult;
    if (
      typeof result !== "object" || result === null ||
      !Number.isSafeInteger(result.task) || typeof result.scenario !== "string"
    ) {
      skipped++;
      continue;
    }
    results.push(result);
  }
  results.sort((a, b) => a.task - b.task);
  return { results, skipped };
}

/** Options of {@linkcode renderReport}. */
export interface ReportOptions {
  /** What the report is of (e.g. the results file's name). */
  title?: string;
  /** Lines of the results file that were not results. */
  skipped?: number;
  /** Reads a stored image (see {@linkcode storeImages}); absent: stored images show as missing. */
  readImage?: (sha256: string, ext: string) => Uint8Array | undefined;
  /** When the report was made (default now). */
  now?: Date;
}

/**
 * Escapes text for HTML (element content and quoted attributes).
 *
 * @example
 * ```ts
 * import { escapeHtml } from "./report.ts";
 * escapeHtml(`<img src=x onerror="alert(1)">`);
 * // "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"
 * ```
 *
 * @param value Anything; non-strings are turned into text first.
 * @returns The escaped text.
 */
export function escapeHtml(value: unknown): string {
  return String(value ?? "").replace(/[&<>"']/g, (c) =>
    ({
      "&": "&amp;",
      "<": "&lt;",
      ">": "&gt;",
      '"': "&quot;",
      "'": "&#39;",
    })[c]!);
}

const esc = escapeHtml;

function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

function usd(value: unknown): string {
  return `$${num(value).toFixed(6)}`;
}

function json(value: unknown): string {
  if (typeof value === "string") {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2) ?? String(value);
}

/** Whether a run has a reward (an errored run has none: it is not a zero). */
function isScored(result: EvalResult): boolean {
  return !result.error && typeof result.reward === "number" &&
    Number.isFinite(result.reward);
}

type Status = "passed" | "partial" | "failed" | "errored";

function statusOf(result: EvalResult): Status {
  if (result.error) return "errored";
  const reward = num(result.reward);
  if (reward >= 1) return "passed";
  return reward > 0 ? "partial" : "failed";
}

function summaryTable(results: EvalResult[]): string {
  // Rewards as the runner's statistics read them: a number, or null (an error).
  const clean = results.map((r) => ({
    ...r,
    reward: isScored(r) ? num(r.reward) : null,
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
      stats.runs - stats.errors > 1 ? `±${stats.ci95.toFixed(3)}` : "–",
      ...ks.map((k) => fixed(stats.passAt.get(k))),
      String(stats.errors),
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
    "errors",
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
function distribution(results: EvalResult[]): string {
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
  const mean = scored.reduce((a, b) => a + b, 0) / Math.max(1, scored.length);
  return `<figure>
<svg viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" role="img" aria-labelledby="dist-caption">
<line class="axis" x1="${left}" y1="${base}" x2="${w - 10}" y2="${base}"/>
<line class="axis" x1="${left}" y1="${top}" x2="${left}" y2="${base}"/>
<text x="${left - 6}" y="${top + 4}" text-anchor="end">${most}</text>
<text x="${left - 6}" y="${base}" text-anchor="end">0</text>
<text x="${(w + left) / 2}" y="${h - 4}" text-anchor="middle">reward</text>
${bars}
</svg>
<figcaption id="dist-caption">${scored.length} scored run(s): mean reward ${
    mean.toFixed(3)
  }, median ${median.toFixed(3)}${
    errors > 0
      ? `; ${errors} run(s) ended in an error (no reward, in red)`
      : "; no errors"
  }</figcaption>
</figure>`;
}

function imageTag(
  image: TrajectoryImage | undefined,
  alt: string,
  options: ReportOptions,
): string {
  if (!image || typeof image !== "object") return "";
  const type = String(image.mimeType ?? "");
  const ext = imageExt(type);
  if (!ext) {
    return `<p class="missing">An image of type ${
      esc(type.slice(0, 100))
    } (not shown)</p>`;
  }
  let data: string | undefined;
  if ("data" in image) {
    data = typeof image.data === "string" && BASE64.test(image.data)
      ? image.data
      : undefined;
  } else if (typeof image.sha256 === "string" && SHA256.test(image.sha256)) {
    const bytes = options.readImage?.(image.sha256, ext);
    if (bytes) data = Buffer.from(bytes).toString("base64");
  }
  if (!data) {
    return `<p class="missing">${esc(alt)}: the image is missing${
      "sha256" in image ? ` (${esc(String(image.sha256).slice(0, 64))})` : ""
    }</p>`;
  }
  return `<img src="data:${type};base64,${data}" alt="${
    esc(alt)
  }" loading="lazy">`;
}

function toolCall(
  call: TrajectoryToolCall,
  where: string,
  options: ReportOptions,
): string {
  const parts = [
    `<div class="call${call.refused ? " refused" : ""}">`,
    `<p><strong>Tool call</strong> <code>${esc(call.name)}</code>${
      call.refused
        ? ' <span class="badge error">refused: not a tool of this task</span>'
        : ""
    }</p>`,
    `<pre aria-label="arguments">${esc(json(call.arguments))}</pre>`,
  ];
  const checks = Array.isArray(call.safety_checks) ? call.safety_checks : [];
  if (checks.length > 0) {
    parts.push(
      `<p><strong>Safety checks</strong> (acknowledged)</p><ul>${
        checks.map((check) =>
          `<li><code>${esc(check?.code ?? check?.id)}</code> ${
            esc(check?.message ?? "")
          }</li>`
        ).join("")
      }</ul>`,
    );
  }
  const result = call.result;
  if (!result || typeof result !== "object") {
    parts.push(
      `<p class="missing">No result: the run failed during this call</p>`,
    );
  } else {
    parts.push(
      `<p><strong>Result</strong>${
        result.is_error ? ' <span class="badge error">error</span>' : ""
      }</p>`,
    );
    if (result.text) {
      parts.push(
        `<pre${result.is_error ? ' class="error"' : ""}>${
          esc(result.text)
        }</pre>`,
      );
    }
    const images = Array.isArray(result.images) ? result.images : [];
    if (images.length > 0) {
      parts.push(
        `<div class="shots">${
          images.map((image, i) =>
            imageTag(image, `${where}, screenshot ${i + 1}`, options)
          ).join("")
        }</div>`,
      );
    }
  }
  parts.push("</div>");
  return parts.join("\n");
}

function stepItem(
  step: TrajectoryStep,
  task: number,
  options: ReportOptions,
): string {
  const calls = Array.isArray(step.tool_calls) ? step.tool_calls : [];
  const where = `Task ${task}, step ${num(step.step)}`;
  return `<li id="task-${task}-step-${num(step.step)}">
<p class="step-head">Model call ${num(step.step)} <span class="muted">· HTTP ${
    num(step.status)
  } · ${num(step.tokens?.input)} in / ${
    num(step.tokens?.output)
  } out tokens · ${usd(step.cost_usd)}${
    step.replayed ? " · replayed from a recording" : ""
  }</span></p>
${step.text ? `<pre aria-label="model text">${esc(step.text)}</pre>` : ""}
${
    calls.length === 0 && !step.text
      ? '<p class="muted">(no text, no tool calls)</p>'
      : ""
  }
${
    calls.map((call, i) => toolCall(call, `${where}, call ${i + 1}`, options))
      .join("\n")
  }
</li>`;
}

function taskSection(result: EvalResult, options: ReportOptions): string {
  const status = statusOf(result);
  const task = num(result.task);
  const trajectory = result.trajectory;
  const subscores = Array.isArray(result.subscores) ? result.subscores : [];
  const checks = Array.isArray(result.safety_checks)
    ? result.safety_checks
    : [];
  const facts: [string, string][] = [
    ["scenario", `<code>${esc(result.scenario)}</code>`],
    ["arguments", `<code>${esc(JSON.stringify(result.args ?? {}))}</code>`],
    [
      "reward",
      `${num(result.reward).toFixed(3)}${
        result.done === false ? " (not done)" : ""
      }`,
    ],
    ...(result.content !== undefined
      ? [["evaluation", esc(result.content)] as [string, string]]
      : []),
    ...(result.error
      ? [["error", `<span class="error-text">${esc(result.error)}</span>`] as [
        string,
        string,
      ]]
      : []),
    ...(num(result.repeat) > 0
      ? [["repeat", String(num(result.repeat))] as [string, string]]
      : []),
    ...(num(result.attempts) > 1
      ? [["attempts", String(num(result.attempts))] as [string, string]]
      : []),
    ...(result.error_kind
      ? [["error kind", esc(result.error_kind)] as [string, string]]
      : []),
    ["model calls", String(num(result.steps))],
    [
      "tokens",
      `${num(result.tokens?.input)} in / ${num(result.tokens?.output)} out`,
    ],
    ["cost", usd(result.cost_usd)],
    ["convention", esc(result.convention)],
    ["trace id", `<code>${esc(result.trace_id)}</code>`],
    ["duration", `${(num(result.duration_ms) / 1000).toFixed(1)} s`],
    ["refused tool calls", String(num(result.refused_tool_calls))],
    ["safety checks", String(checks.length)],
  ];
  const subscoreTable = subscores.length === 0 ? "" : `<h3>Subscores</h3>
<table><thead><tr><th scope="col">name</th><th scope="col" class="n">weight</th><th scope="col" class="n">value</th></tr></thead><tbody>
${
    subscores.map((s) =>
      `<tr><td>${esc(s?.name)}</td><td class="n">${
        num(s?.weight)
      }</td><td class="n">${num(s?.value).toFixed(3)}</td></tr>`
    ).join("\n")
  }
</tbody></table>`;
  const prompt = Array.isArray(trajectory?.prompt) ? trajectory.prompt : [];
  const steps = Array.isArray(trajectory?.steps) ? trajectory.steps : [];
  const promptHtml = prompt.length === 0 ? "" : `<h3>Prompt</h3>
${
    prompt.map((message, i) =>
      `<p class="muted">${esc(message?.role)}</p>${
        message?.image
          ? imageTag(
            message.image,
            `Task ${task}, prompt image ${i + 1}`,
            options,
          )
          : `<pre>${esc(message?.text ?? "")}</pre>`
      }`
    ).join("\n")
  }`;
  const stepsHtml = trajectory
    ? `<h3>Trajectory</h3>${
      steps.length === 0
        ? '<p class="muted">No model call was made.</p>'
        : `<ol class="steps">${
          steps.map((step) => stepItem(step, task, options)).join("\n")
        }</ol>`
    }`
    : result.error
    ? '<p class="muted">No trajectory: the run ended before its agent started.</p>'
    : '<p class="muted">No trajectory: this result was written by a runner that did not keep one.</p>';
  return `<article class="task ${status}${
    result.error ? " errored" : ""
  }" id="task-${task}">
<details${status !== "passed" ? " open" : ""}>
<summary><strong>Task ${task}</strong> <code>${esc(result.scenario)}</code>
<span class="badge reward">reward ${num(result.reward).toFixed(3)}</span>${
    result.error ? ' <span class="badge error">error</span>' : ""
  }
<span class="muted">${num(result.steps)} call(s) · ${
    usd(result.cost_usd)
  }</span></summary>
<div class="body">
<dl class="facts">
${facts.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join("\n")}
</dl>
${subscoreTable}
${promptHtml}
${stepsHtml}
</div>
</details>
</article>`;
}

/**
 * The report's HTML.
 *
 * @example
 * ```ts
 * import { renderReport } from "./report.ts";
 * const html = renderReport([], { title: "empty" });
 * html.includes("Content-Security-Policy"); // true
 * ```
 *
 * @param results The results.
 * @param options Title, image reader, skipped lines.
 * @returns One HTML document that loads nothing.
 */
export function renderReport(
  results: EvalResult[],
  options: ReportOptions = {},
): string {
  const title = options.title ?? "eval results";
  const replayed = results.some((r) =>
    r.trajectory?.steps?.some?.((s) => s.replayed)
  );
  const conventions = [...new Set(results.map((r) => String(r.convention)))];
  const errors = results.filter((r) => r.error).length;
  const cost = results.reduce((sum, r) => sum + num(r.cost_usd), 0);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${REPORT_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Eval report: ${esc(title)}</title>
<style>${REPORT_CSS}</style>
</head>
<body>
<header>
<h1>Eval report</h1>
<p class="lede">${
    esc(title)
  } · ${results.length} task(s) · ${errors} error(s) · ${usd(cost)} · ${
    esc(conventions.join(", "))
  } · made ${esc((options.now ?? new Date()).toISOString())}</p>
${
    replayed
      ? '<p class="note">Replayed from a recording: the model answers came from the recording, no model was called, and the cost is $0.</p>'
      : ""
  }
${
    options.skipped
      ? `<p class="note">${options.skipped} line(s) of the results file were not results and are left out.</p>`
      : ""
  }
</header>
<main>
<section id="summary" aria-labelledby="summary-title">
<h2 id="summary-title">Summary</h2>
${summaryTable(results)}
</section>
<section id="distribution" aria-labelledby="distribution-title">
<h2 id="distribution-title">Reward distribution</h2>
${distribution(results)}
</section>
<section id="tasks" aria-labelledby="tasks-title">
<h2 id="tasks-title">Tasks</h2>
<fieldset class="filter"><legend>Show</legend>
<label><input type="radio" name="show" id="show-all" checked> every task</label>
<label><input type="radio" name="show" id="show-below"> reward below 1</label>
<label><input type="radio" name="show" id="show-errors"> errors only</label>
</fieldset>
${results.map((result) => taskSection(result, options)).join("\n")}
</section>
</main>
</body>
</html>
`;
}

/**
 * Reads a results file (and the images beside it) and writes its report.
 *
 * @example
 * ```ts ignore
 * import { writeReport } from "./report.ts";
 * const { path } = await writeReport("eval-results.jsonl");
 * // path === "eval-results.html"
 * ```
 *
 * @param resultsPath The results file.
 * @param htmlPath Where to write the report (default: the results file's name with `.html`).
 * @returns Where it was written and how many tasks it shows.
 * @throws {Error} In one line, when the results file cannot be read.
 */
export async function writeReport(
  resultsPath: string,
  htmlPath?: string,
): Promise<{ path: string; tasks: number }> {
  const text = await Deno.readTextFile(resultsPath).catch((error) => {
    throw new Error(
      `Cannot read the results file ${resultsPath}: ${
        error instanceof Deno.errors.NotFound ? "no such file" : error.message
      }`,
    );
  });
  const { results, skipped } = readResults(text);
  const images = imagesDirFor(resultsPath);
  const path = htmlPath ?? `${resultsPath.replace(/\.jsonl$/i, "")}.html`;
  const html = renderReport(results, {
    title: resultsPath.split("/").at(-1),
    skipped,
    readImage: (sha256, ext) => {
      const file = `${images}/${sha256}.${ext}`;
      try {
        if (Deno.statSync(file).size > MAX_IMAGE_FILE_BYTES) return undefined;
        return Deno.readFileSync(file);
      } catch {
        return undefined;
      }
    },
  });
  await Deno.writeTextFile(path, html);
  return { path, tasks: results.length };
}

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
 * `eval-results.jsonl`; see `images.ts`), and the report embeds them
 * when it is built. The page's parts are in `report/`.
 *
 * @module
 */
import type { EvalResult } from "../run/result.ts";
import { imagesDirFor, MAX_IMAGE_FILE_BYTES } from "./images.ts";
import { readResults } from "../run/results_file.ts";
import { REPORT_CSS } from "./_style.ts";
import { esc, num, usd } from "./html.ts";
import { distribution, summarySection } from "./summary.ts";
import { rewardStats } from "../run/stats.ts";
import { taskSection } from "./task.ts";

/**
 * The page's Content-Security-Policy: nothing is fetched, no script runs.
 *
 * @example
 * ```ts
 * import { renderReport, REPORT_CSP } from "./report.ts";
 *
 * renderReport([]).includes(REPORT_CSP); // true
 * ```
 */
export const REPORT_CSP =
  "default-src 'none'; img-src data:; style-src 'unsafe-inline'";

/** Options of {@linkcode renderReport}. */
export interface ReportOptions {
  /** What the report is of (e.g. the results file's name). */
  title?: string;
  /** Lines of the results file that were not results. */
  skipped?: number;
  /** Reads a stored image (see `storeImages`); absent: stored images show as missing. */
  readImage?: (sha256: string, ext: string) => Uint8Array | undefined;
  /** When the report was made (default now). */
  now?: Date;
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
<p class="lede">${esc(title)} · made ${
    esc((options.now ?? new Date()).toISOString())
  }</p>
${runFacts(results, cost, replayed)}
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
${summarySection(results)}
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

/** The values of a field over the results, each once, or "not recorded". */
function named(values: unknown[], none = "not recorded"): string {
  const seen = [
    ...new Set(values.filter((v) => typeof v === "string" && v !== "")),
  ];
  return seen.length === 0
    ? `<span class="muted">${none}</span>`
    : seen.map((v) => `<code>${esc(v)}</code>`).join(", ");
}

/** What was evaluated and how it went: the top of the report. */
function runFacts(
  results: EvalResult[],
  cost: number,
  replayed: boolean,
): string {
  const stats = rewardStats(results);
  const fixed = (value: number | undefined) =>
    value === undefined || Number.isNaN(value) ? "–" : value.toFixed(3);
  const most = Math.max(1, ...results.map((r) => num(r.repeat) + 1));
  const facts: [string, string][] = [
    ["model", named(results.map((r) => r.model))],
    [
      "gateway",
      replayed
        ? '<span class="muted">none: replayed from a recording</span>'
        : named(results.map((r) => r.gateway)),
    ],
    ["environment", named(results.map((r) => r.environment))],
    [
      "convention",
      named(results.map((r) => r.convention)),
    ],
    [
      "runs",
      `${results.length} of ${
        new Set(results.map((r) => r.task)).size
      } task(s)`,
    ],
    ["mean reward", fixed(stats.mean)],
    [
      most > 1 ? `pass@1 · pass@${most}` : "pass@1",
      most > 1
        ? `${fixed(stats.passAt.get(1))} · ${fixed(stats.passAt.get(most))}`
        : fixed(stats.passAt.get(1)),
    ],
    [
      "errors",
      stats.errors === 0
        ? "none"
        : `${stats.errors}: ${stats.countedAsFailures} counted as failures (reward 0), ${stats.notScored} not scored${
          stats.tasksLeftOut > 0
            ? ` (${stats.tasksLeftOut} task(s) left out of every rate)`
            : ""
        }`,
    ],
    ["cost", usd(cost)],
  ];
  return `<dl class="facts run">
${facts.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join("\n")}
</dl>`;
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

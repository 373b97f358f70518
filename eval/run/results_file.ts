/**
 * The results file: one JSONL line per finished run, only ever appended to.
 * A new eval creates its file exclusively (never another eval's); a resumed
 * one appends the runs it does again after the lines they replace, so a kill
 * at any moment loses no line. Reading keeps, per run, the line that counts
 * ({@linkcode latestPerRun}); the report reads leniently
 * ({@linkcode readResults}), a resume strictly ({@linkcode readResultsToResume}).
 *
 * @module
 */
import { dirname } from "node:path";
import type { EvalResult } from "./result.ts";
import { scoredReward } from "./stats.ts";
import { runIdentity } from "./tasks.ts";

/** What {@linkcode readResults} read. */
export interface ResultsFile {
  /** The results, one per run, in task order. */
  results: EvalResult[];
  /** Lines that were not a result (not JSON, or without a task and scenario). */
  skipped: number;
}

/**
 * The line that counts for each run: a file a resume appended to holds a
 * run's earlier line (an error not scored) before its new one, which keeps
 * the earlier one's cost in `earlier_attempts`. A scored line wins over one
 * not scored; of two alike, the later one.
 *
 * @example
 * ```ts
 * import { latestPerRun } from "./results_file.ts";
 * import { dirname } from "node:path";
import type { EvalResult } from "./result.ts";
 *
 * const stopped = { task: 0, repeat: 0, scenario: "guess", args: {}, reward: null,
 *   error: "Stopped", error_kind: "stopped" } as EvalResult;
 * const done = { ...stopped, reward: 1, error: undefined, error_kind: undefined };
 * latestPerRun([stopped, done]).length; // 1, the finished run
 * ```
 *
 * @param results Lines in file order.
 * @returns One per run, in task and repetition order.
 */
export function latestPerRun(results: EvalResult[]): EvalResult[] {
  const kept = new Map<string, EvalResult>();
  for (const result of results) {
    const key = runIdentity(result);
    const before = kept.get(key);
    if (
      before && scoredReward(before) !== null && scoredReward(result) === null
    ) continue;
    kept.set(key, result);
  }
  return [...kept.values()].sort((a, b) =>
    a.task - b.task || (a.repeat ?? 0) - (b.repeat ?? 0)
  );
}

/**
 * Reads a results file's lines; a line that is not a result is counted,
 * not fatal.
 *
 * @example
 * ```ts
 * import { readResults } from "./results_file.ts";
 *
 * const { results, skipped } = readResults('{"task": 0, "scenario": "guess", "reward": 1}\nnot json\n');
 * results.length; // 1
 * skipped; // 1
 * ```
 *
 * @param text The JSONL text.
 * @returns The results (one per run) and how many lines were skipped.
 */
export function readResults(text: string): ResultsFile {
  const results: EvalResult[] = [];
  let skipped = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const result = parseResult(line);
    if (result === undefined) skipped++;
    else results.push(result);
  }
  return { results: latestPerRun(results), skipped };
}

/** A line as a result, or `undefined` when it is not one. */
function parseResult(line: string): EvalResult | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  const result = value as EvalResult;
  if (
    typeof result !== "object" || result === null || Array.isArray(result) ||
    !Number.isSafeInteger(result.task) || typeof result.scenario !== "string"
  ) return undefined;
  return { ...result, repeat: result.repeat ?? 0 };
}

/** What {@linkcode readResultsToResume} read. */
export interface ResumedFile {
  /** Every result line, in file order. */
  lines: EvalResult[];
  /** Lines torn by a kill mid-write (their runs are done again). */
  torn: number;
  /** Whether the file ends without a newline (a torn last line). */
  endsTorn: boolean;
}

/**
 * Reads a results file to resume, strictly: a line torn by a kill (the
 * start of a JSON object that does not parse) is counted and its run done
 * again; any other line that is not a result refuses the file.
 *
 * @example
 * ```ts
 * import { readResultsToResume } from "./results_file.ts";
 *
 * const { lines, torn } = readResultsToResume(
 *   '{"task": 0, "scenario": "guess", "reward": 1}\n{"task": 1, "sce',
 *   "results.jsonl",
 * );
 * lines.length; // 1
 * torn; // 1
 * ```
 *
 * @param text The file's text.
 * @param file Its name, for the error.
 * @returns Its results and torn lines.
 * @throws {SyntaxError} In one line, naming the line that is not a result.
 */
export function readResultsToResume(text: string, file: string): ResumedFile {
  const lines: EvalResult[] = [];
  let torn = 0;
  text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return;
    const result = parseResult(line);
    if (result) lines.push(result);
    else if (/^\{"/.test(line) && !isJson(line)) torn++;
    else {
      throw new SyntaxError(
        `${file} line ${i + 1} is not an eval result: cannot resume`,
      );
    }
  });
  return { lines, torn, endsTorn: text !== "" && !text.endsWith("\n") };
}

function isJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

/**
 * Creates a new results file, failing if it exists: two evals never share a
 * file, and a results file is never truncated. Without a name it is
 * `eval-results/<time>-<random>.jsonl`, so evals started in the same second
 * (or millisecond) each get their own.
 *
 * @example
 * ```ts ignore
 * import { createResultsFile } from "./results_file.ts";
 *
 * const out = await createResultsFile(); // eval-results/2026-11-26T20-49-01Z-3f9c0a1b.jsonl
 * ```
 *
 * @param given The name asked for (`--out`), if any.
 * @param now The clock (default the system's).
 * @returns The file's name.
 * @throws {Deno.errors.AlreadyExists} In one line, when `given` exists.
 */
export async function createResultsFile(
  given?: string,
  now: () => Date = () => new Date(),
): Promise<string> {
  for (;;) {
    const stamp = now().toISOString().replace(/:/g, "-").replace(
      /\.\d+Z$/,
      "Z",
    );
    const out = given ??
      `eval-results/${stamp}-${crypto.randomUUID().slice(0, 8)}.jsonl`;
    await Deno.mkdir(dirname(out) || ".", { recursive: true });
    try {
      (await Deno.open(out, { createNew: true, write: true })).close();
      return out;
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
      if (given !== undefined) {
        throw new Deno.errors.AlreadyExists(
          `${given} exists: --resume ${given} adds to it; --out takes a new file`,
        );
      }
    }
  }
}

/**
 * Reading a results file leniently, for the report: a line that is not a
 * result is counted, not fatal.
 *
 * @module
 */
import type { EvalResult } from "./result.ts";

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

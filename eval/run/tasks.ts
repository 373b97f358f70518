/**
 * Tasks: a scenario and its arguments, read from a task file one JSON object
 * a line, and the identity of one run of a task across result files.
 *
 * @module
 */

/** One task: a scenario and its arguments. */
export interface EvalTask {
  /** The scenario's name. */
  scenario: string;
  /** Its arguments (sent as prompt arguments, so as strings). */
  args?: Record<string, unknown>;
}

/**
 * The identity of a run across files: task position, scenario, arguments
 * and repetition. A result of an earlier eval with the same key is the
 * same run.
 *
 * @example
 * ```ts
 * import { runIdentity } from "./tasks.ts";
 *
 * runIdentity({ task: 0, scenario: "guess", args: { a: 1, b: 2 } }) ===
 *   runIdentity({ task: 0, repeat: 0, scenario: "guess", args: { b: 2, a: 1 } }); // true
 * ```
 *
 * @param run A result, or a task with its position and repetition.
 * @returns The key.
 */
export function runIdentity(
  run: {
    task: number;
    repeat?: number;
    scenario: string;
    args?: Record<string, unknown>;
  },
): string {
  return JSON.stringify([
    run.task,
    run.repeat ?? 0,
    run.scenario,
    canonical(run.args ?? {}),
  ]);
}

/** A value with its object keys sorted, so equal arguments key equally. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value).sort().map((
        key,
      ) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}

/**
 * Reads a task file: one JSON object `{ "scenario": …, "args": {…} }` per
 * line; blank lines and lines starting with `#` are skipped.
 *
 * @example
 * ```ts
 * import { parseTasks } from "./tasks.ts";
 *
 * parseTasks(`# two guesses
 * {"scenario": "guess", "args": {"target": 7}}
 * {"scenario": "guess"}`);
 * // [{ scenario: "guess", args: { target: 7 } }, { scenario: "guess", args: {} }]
 * ```
 *
 * @param text The file's text.
 * @returns The tasks.
 * @throws {Error} Naming the line that is not a task.
 */
export function parseTasks(text: string): EvalTask[] {
  const tasks: EvalTask[] = [];
  text.split("\n").forEach((line, i) => {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) return;
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch {
      throw new Error(
        `Task line ${i + 1} is not JSON: ${trimmed.slice(0, 80)}`,
      );
    }
    const task = value as EvalTask;
    if (
      typeof task !== "object" || task === null ||
      typeof task.scenario !== "string" ||
      (task.args !== undefined &&
        (typeof task.args !== "object" || Array.isArray(task.args)))
    ) {
      throw new Error(
        `Task line ${i + 1} needs {"scenario": "<name>", "args": {...}}`,
      );
    }
    tasks.push({ scenario: task.scenario, args: task.args ?? {} });
  });
  return tasks;
}

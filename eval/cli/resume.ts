/**
 * `--resume FILE` on the command line: the results file read (one that is
 * not one is a usage error), and refused when it holds runs of other tasks,
 * another model or another environment: a mean over two of either means
 * neither.
 *
 * @module
 */
import type { EvalResult } from "../run/result.ts";
import { readResultsToResume, type ResumedFile } from "../run/results_file.ts";
import { runIdentity } from "../run/tasks.ts";
import { UsageError } from "./options.ts";

/**
 * Reads the results file to resume; a file that is not one is a usage error.
 *
 * @example
 * ```ts
 * import { resumeFile } from "./resume.ts";
 *
 * const { lines } = await resumeFile("eval-results/run.jsonl");
 * ```
 *
 * @param file The file `--resume` names.
 * @returns Its lines, and whether its last line was torn by a kill.
 * @throws {UsageError} When it cannot be read or is not a results file.
 */
export async function resumeFile(file: string): Promise<ResumedFile> {
  let text;
  try {
    text = await Deno.readTextFile(file);
  } catch (error) {
    throw new UsageError(
      `Cannot read the results to resume, ${file}: ${(error as Error).message}`,
    );
  }
  try {
    return readResultsToResume(text, file);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** What a resumed eval runs, to check an earlier results file against. */
export interface ResumedRuns {
  /** The file `--resume` names. */
  file: string | undefined;
  /** The identity of every run planned (task, repeat, scenario, arguments). */
  planned: Set<string>;
  /** The model the eval runs. */
  model: string;
  /** The environment's name. */
  environment: string;
}

/**
 * Refuses to resume from results of other runs: of another task, another
 * model, or another environment.
 *
 * @example
 * ```ts
 * import { refuseOtherRuns } from "./resume.ts";
 *
 * refuseOtherRuns([], {
 *   file: "eval-results/run.jsonl",
 *   planned: new Set(),
 *   model: "gpt-4o-mini",
 *   environment: "game",
 * }); // nothing earlier: nothing to refuse
 * ```
 *
 * @param earlier The results file's lines.
 * @param runs What this eval runs.
 * @throws {UsageError} Naming the first result that is not one of these
 * runs, and how to resume it.
 */
export function refuseOtherRuns(
  earlier: EvalResult[],
  runs: ResumedRuns,
): void {
  const foreign = earlier.find((result) =>
    !runs.planned.has(runIdentity(result))
  );
  if (foreign) {
    throw new UsageError(
      `${runs.file} holds a result of another task (task ${foreign.task}, ${foreign.scenario} ${
        JSON.stringify(foreign.args)
      }, repeat ${foreign.repeat}): resume with the same tasks and --repeat`,
    );
  }

  // One results file, one model: a mean over two models means neither.
  const otherModel = earlier.find((r) =>
    typeof r.model === "string" && r.model !== runs.model
  );
  if (otherModel) {
    throw new UsageError(
      `${runs.file} holds results of the model ${
        JSON.stringify(otherModel.model).slice(0, 100)
      }: resume with --model ${otherModel.model}`,
    );
  }

  // One results file, one environment: rewards of two servers mean neither.
  const otherEnv = earlier.find((r) =>
    typeof r.environment === "string" && r.environment !== runs.environment
  );
  if (otherEnv) {
    throw new UsageError(
      `${runs.file} holds results of the environment ${
        JSON.stringify(otherEnv.environment).slice(0, 100)
      }, not ${runs.environment}: resume against the environment it ran`,
    );
  }
}

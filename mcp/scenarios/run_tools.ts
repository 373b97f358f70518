/**
 * The tools each run may call: a scenario's `excludeTools` and
 * `allowedTools`, kept per run while the run lives, so the server refuses a
 * left-out tool itself on every transport. The runner leaves those tools
 * out of what it gives the agent; a client that reaches the server without
 * the runner (a page in the environment's browser, a process on the host)
 * is refused here.
 *
 * @module
 */
import { globMatch } from "./scenario.ts";

/** A scenario's tool filters (glob patterns). */
export interface ToolFilters {
  /** Tools the run may not call. */
  excludeTools?: string[];
  /** When set, the only tools the run may call. */
  allowedTools?: string[];
}

/**
 * The tool filters of the live runs, by run key and scenario.
 *
 * @example
 * ```ts
 * import { RunToolFilters } from "./run_tools.ts";
 *
 * const filters = new RunToolFilters();
 * filters.set("run:a", "guess", { excludeTools: ["peek"] });
 * filters.refusal("run:a", "peek"); // 'Tool "peek" is left out of this run by scenario "guess"'
 * filters.refusal("run:b", "peek"); // undefined
 * ```
 */
export class RunToolFilters {
  readonly #runs = new Map<string, Map<string, ToolFilters>>();

  /** Runs with filters now. */
  get size(): number {
    return this.#runs.size;
  }

  /**
   * Keeps a run's filters (none: nothing is kept).
   *
   * @param run The run key.
   * @param scenario The scenario's name.
   * @param filters Its filters.
   */
  set(run: string, scenario: string, filters: ToolFilters): void {
    if (!filters.excludeTools?.length && !filters.allowedTools) return;
    const scenarios = this.#runs.get(run) ?? new Map<string, ToolFilters>();
    scenarios.set(scenario, {
      excludeTools: filters.excludeTools,
      allowedTools: filters.allowedTools,
    });
    this.#runs.set(run, scenarios);
  }

  /**
   * Forgets a run's filters (the run ended).
   *
   * @param run The run key.
   * @param scenario The scenario's name.
   */
  delete(run: string, scenario: string): void {
    const scenarios = this.#runs.get(run);
    if (!scenarios) return;
    scenarios.delete(scenario);
    if (scenarios.size === 0) this.#runs.delete(run);
  }

  /**
   * Why a run may not call a tool, if it may not.
   *
   * @param run The run key of the call.
   * @param tool The tool's name.
   * @returns The refusal, one line; `undefined` when the call may go on.
   */
  refusal(run: string, tool: string): string | undefined {
    for (const [scenario, filters] of this.#runs.get(run) ?? []) {
      const excluded = filters.excludeTools?.some((p) => globMatch(tool, p));
      const allowed = !filters.allowedTools ||
        filters.allowedTools.some((p) => globMatch(tool, p));
      if (excluded || !allowed) {
        return `Tool "${tool}" is left out of this run by scenario "${scenario}"`;
      }
    }
    return undefined;
  }
}

/**
 * What a server serves on HUD v6's control channel (`run({ transport:
 * "hud" })`) beside its tools: its scenarios as tasks, the capabilities it
 * published, and the tools that take the agent's display size.
 *
 * @module
 */
import type { Capability } from "../hud/capability.ts";
import { type DisplayTool, isDisplayTool } from "../hud/display.ts";
import type { HudSource } from "../hud/serve.ts";
import type { TaskDefinition } from "../hud/task_run.ts";
import type { RunToolFilters } from "../scenarios/run_tools.ts";
import type {
  ScenarioFunction,
  ScenarioOptions,
} from "../scenarios/scenario.ts";
import type { InitializeContext } from "./initialize.ts";

/** One server's tasks, capabilities and display-sized tools. */
export class HudRegistry {
  readonly #tasks = new Map<string, TaskDefinition>();
  readonly #capabilities: Capability[] = [];
  /** Tools that take the agent's display size, for HUD's harness to size. */
  readonly #displayTools: DisplayTool[] = [];

  /**
   * Serves a scenario as the task of its name.
   *
   * @param options The scenario's options.
   * @param fn The scenario.
   */
  addTask(options: ScenarioOptions, fn: ScenarioFunction): void {
    this.#tasks.set(options.name, { options, fn });
  }

  /**
   * Keeps a tool that takes the agent's display size; any other is ignored.
   *
   * @param tool A tool being added to the server.
   */
  addTool(tool: unknown): void {
    if (isDisplayTool(tool)) this.#displayTools.push(tool);
  }

  /**
   * Publishes a capability, replacing one of the same name.
   *
   * @param capability The capability.
   */
  addCapability(capability: Capability): void {
    const index = this.#capabilities.findIndex((c) =>
      c.name === capability.name
    );
    if (index >= 0) this.#capabilities.splice(index, 1);
    this.#capabilities.push(capability);
  }

  /** The capabilities published, in order. */
  get capabilities(): readonly Capability[] {
    return [...this.#capabilities];
  }

  /**
   * What the control channel serves from this registry.
   *
   * @param runHooks Runs the server's initialize hooks.
   * @param harnessToken The harness token, if any.
   * @param filters Where each held task's tool filters go.
   * @returns The channel's source.
   */
  source(
    runHooks: (ctx: InitializeContext) => Promise<void>,
    harnessToken: string | undefined,
    filters: RunToolFilters,
  ): HudSource {
    return {
      tasks: () => this.#tasks,
      bindings: () => this.#capabilities,
      initialize: () => runHooks(hudInitializeContext()),
      harnessToken,
      filters,
      display: (request) => {
        for (const tool of this.#displayTools) tool.configure(request);
      },
    };
  }
}

/**
 * The initialize hooks' context on the control channel, where they run
 * before the port is bound: no request, so no `_meta` and no progress.
 */
function hudInitializeContext(): InitializeContext {
  return {
    meta: {},
    session: { sendProgressNotification: () => Promise.resolve() },
    progress: () => Promise.resolve(),
    signal: new AbortController().signal,
  };
}

/**
 * The tool side of an agent loop: the gate every tool call passes (only the
 * tools the agent was given are callable; a refusal is counted), and the
 * runner of the environment's `computer` tool for a model's native actions.
 *
 * @module
 */
import type { AgentTool, ToolHost, ToolResult } from "../tool_host.ts";
import { type AgentOutcome, type AgentRun, isObject } from "./loop.ts";
import type { JsonObject } from "./model.ts";

/**
 * The gate every tool call passes: a name the agent was not given (excluded
 * by the scenario, a `_` harness tool, unknown) is answered with an error the
 * model can read and counted, never sent to the environment.
 */
export class ToolGate {
  readonly #env: ToolHost;
  readonly #names: Set<string>;
  readonly #outcome: AgentOutcome;
  readonly #signal?: AbortSignal;

  /**
   * Creates the gate for one run.
   *
   * @param run The run (environment, tools, signal).
   * @param outcome Where refusals are counted.
   */
  constructor(run: AgentRun, outcome: AgentOutcome) {
    this.#env = run.env;
    this.#names = new Set(run.tools.map((tool) => tool.name));
    this.#outcome = outcome;
    this.#signal = run.signal;
  }

  /**
   * Whether the agent was given this tool.
   *
   * @param name The environment's tool name.
   * @returns Whether calls of it go through.
   */
  offers(name: string): boolean {
    return this.#names.has(name);
  }

  /**
   * Calls a tool the agent was given; refuses any other.
   *
   * @param name The environment's tool name.
   * @param args Its arguments.
   * @returns The result, or the refusal.
   */
  async call(name: string, args: Record<string, unknown>): Promise<ToolResult> {
    if (!this.#names.has(name)) return this.refuse(name);
    return await this.#env.callTool(name, args, this.#signal);
  }

  /**
   * Counts and answers a call of a tool the agent was not given.
   *
   * @param name What the model called.
   * @returns The error result the model reads.
   */
  refuse(name: string): ToolResult {
    this.#outcome.refusedToolCalls++;
    const offered = [...this.#names];
    return errorResult(
      `There is no tool "${name.slice(0, 100)}" in this task; the tools are: ${
        offered.length ? offered.join(", ") : "none"
      }`,
    );
  }

  /**
   * Parses a model's JSON arguments, then calls the tool; arguments that are
   * not a JSON object are an error the model reads.
   *
   * @param name The environment's tool name.
   * @param json The arguments as the model wrote them.
   * @returns The result.
   */
  async callJson(name: string, json: unknown): Promise<ToolResult> {
    if (!this.#names.has(name)) return this.refuse(name);
    let args: unknown = json;
    if (typeof json === "string") {
      try {
        args = json.trim() === "" ? {} : JSON.parse(json);
      } catch {
        return errorResult(
          `The arguments of "${name}" are not JSON: ${json.slice(0, 200)}`,
        );
      }
    }
    if (args === undefined || args === null) args = {};
    if (!isObject(args)) {
      return errorResult(`The arguments of "${name}" must be a JSON object`);
    }
    return await this.call(name, args);
  }
}

/**
 * An error result the model reads.
 *
 * @param text What went wrong.
 * @returns The result.
 */
export function errorResult(text: string): ToolResult {
  return { text: `Error: ${text}`, images: [], isError: true };
}

/** What a native computer action becomes: calls of the `computer` tool, or an error the model reads. */
export type ComputerPlan = { calls: JsonObject[] } | { error: string };

/**
 * Runs a native action's calls of the environment's `computer` tool in order:
 * only the last answers with a screenshot (none with `screenshot: false`,
 * beside a `screenshot` or `zoom` call's own picture); the first error stops
 * the rest.
 *
 * @param gate The tool gate.
 * @param plan The calls, or an error to answer with.
 * @param options `screenshot`: whether the last call answers with one (default true).
 * @returns The texts joined, the last call's images.
 */
export async function runComputer(
  gate: ToolGate,
  plan: ComputerPlan,
  options: { screenshot?: boolean } = {},
): Promise<ToolResult> {
  if ("error" in plan) return errorResult(plan.error);
  const texts: string[] = [];
  let last: ToolResult = { text: "", images: [], isError: false };
  for (const [i, call] of plan.calls.entries()) {
    // A screenshot or zoom is its own picture: never asked to leave it out.
    const pictured = call.action === "screenshot" || call.action === "zoom" ||
      (i === plan.calls.length - 1 && options.screenshot !== false);
    last = await gate.call(
      "computer",
      pictured ? call : { ...call, screenshot: false },
    );
    if (last.text) texts.push(last.text);
    if (last.isError) break;
  }
  return { ...last, text: texts.join("\n") };
}

/**
 * The environment's `computer` tool, when the agent was given one shaped as
 * the desktop tools define it (an `action` argument).
 *
 * @param tools The agent's tools.
 * @returns The tool, or `undefined`.
 */
export function computerTool(tools: AgentTool[]): AgentTool | undefined {
  const tool = tools.find((t) => t.name === "computer");
  const properties = tool?.inputSchema.properties;
  return isObject(properties) && "action" in properties ? tool : undefined;
}

/**
 * A pixel from a model's coordinate: a finite number, rounded.
 *
 * @param value The coordinate.
 * @returns The pixel, or `undefined` when it is not a number.
 */
export function pixel(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value)
    ? Math.round(value)
    : undefined;
}

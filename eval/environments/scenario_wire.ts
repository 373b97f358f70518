/**
 * An MCP environment's scenarios as their wire names carry them: prompts
 * named `{env}:{scenario}` listed as scenarios, a prompt's arguments sent as
 * strings and its `_meta` (tool filters, computer environment, network) read
 * as a setup, and the resource `{env}:{scenario}`'s JSON read as an
 * evaluation, checked (an environment's answer may be anything).
 *
 * @module
 */
import type { PromptMessage } from "../tool_host.ts";
import type {
  EvaluationResult,
  ScenarioInfo,
  ScenarioSetup,
} from "./contract.ts";
import { EnvironmentError } from "./target.ts";

/**
 * The scenarios among an environment's prompts: those named `{env}:…`.
 *
 * @example
 * ```ts
 * import { scenariosOfPrompts } from "./scenario_wire.ts";
 *
 * scenariosOfPrompts([{ name: "game:guess" }, { name: "help" }], "game");
 * // [{ name: "guess", description: undefined, arguments: [] }]
 * ```
 *
 * @param prompts The prompts `prompts/list` gave.
 * @param envName The environment's name.
 * @returns Their scenarios, named without the prefix.
 */
export function scenariosOfPrompts(
  prompts: {
    name: string;
    description?: string;
    arguments?: ScenarioInfo["arguments"];
  }[],
  envName: string,
): ScenarioInfo[] {
  const prefix = `${envName}:`;
  return prompts.filter((prompt) => prompt.name.startsWith(prefix)).map((
    prompt,
  ) => ({
    name: prompt.name.slice(prefix.length),
    description: prompt.description,
    arguments: prompt.arguments ?? [],
  }));
}

/**
 * A scenario's arguments as prompt arguments: strings, anything else as JSON.
 *
 * @example
 * ```ts
 * import { promptArguments } from "./scenario_wire.ts";
 *
 * promptArguments({ target: 7, name: "a" }); // { target: "7", name: "a" }
 * ```
 *
 * @param args The task's arguments.
 * @returns Them as strings.
 */
export function promptArguments(
  args: Record<string, unknown>,
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(args).map((
      [key, value],
    ) => [key, typeof value === "string" ? value : JSON.stringify(value)]),
  );
}

/**
 * A scenario's prompt read as its setup: the messages, and the tool filters,
 * computer environment and network of its `_meta`.
 *
 * @example
 * ```ts
 * import { setupOfPrompt } from "./scenario_wire.ts";
 *
 * setupOfPrompt({ messages: [], _meta: { exclude_tools: ["secret"] } }).exclude; // ["secret"]
 * ```
 *
 * @param prompt The prompt `prompts/get` gave.
 * @returns The setup.
 */
export function setupOfPrompt(
  prompt: { messages: unknown[]; _meta?: Record<string, unknown> },
): ScenarioSetup {
  const meta = (prompt._meta ?? {}) as Record<string, unknown>;
  return {
    messages: prompt.messages as unknown as PromptMessage[],
    exclude: Array.isArray(meta.exclude_tools)
      ? meta.exclude_tools.map(String)
      : [],
    allowed: Array.isArray(meta.allowed_tools)
      ? meta.allowed_tools.map(String)
      : undefined,
    ...(typeof meta.computer_environment === "string" &&
      { computerEnvironment: meta.computer_environment }),
    ...(typeof meta.network === "string" && { network: meta.network }),
  };
}

/**
 * The evaluation resource's text read as a result.
 *
 * @example
 * ```ts
 * import { evaluationOfText } from "./scenario_wire.ts";
 *
 * evaluationOfText('{"reward": 1, "done": true}', "guess").reward; // 1
 * ```
 *
 * @param text The resource's text.
 * @param scenario The scenario, for the error message.
 * @returns The evaluation.
 * @throws {EnvironmentError} When the text is not a JSON object or its
 * reward is not a finite number (JSON carries NaN and Infinity as `null`).
 */
export function evaluationOfText(
  text: string | undefined,
  scenario: string,
): EvaluationResult {
  let value: unknown;
  try {
    value = JSON.parse(text ?? "");
  } catch {
    throw new EnvironmentError(
      `The evaluation of "${scenario}" is not JSON: ${
        String(text ?? "").slice(0, 80)
      }`,
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new EnvironmentError(
      `The evaluation of "${scenario}" is not a JSON object`,
    );
  }
  const evaluation = value as EvaluationResult;
  if (evaluation.isError) return evaluation;
  if (
    typeof evaluation.reward !== "number" ||
    !Number.isFinite(evaluation.reward)
  ) {
    throw new EnvironmentError(
      `The reward of "${scenario}" is not a finite number: ${
        JSON.stringify(evaluation.reward) ?? "none"
      }`,
    );
  }
  return evaluation;
}

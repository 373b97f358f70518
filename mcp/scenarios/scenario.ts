/**
 * Scenarios: one async generator per task that sets up state, yields the
 * prompt, receives the agent's answer and yields the reward, served over
 * plain MCP under HUD's v5 names (hud-python up to 0.5.x; HUD v6's control
 * channel is served by `mcp/hud/`):
 *
 * - prompt `{env}:{scenario}`: runs setup with the prompt's arguments and
 *   returns the prompt messages (`_meta` carries `exclude_tools`,
 *   `allowed_tools`, `computer_environment` and `network` when set);
 * - tool `_hud_submit` `{scenario, answer}`: stores the agent's answer;
 * - resource `{env}:{scenario}`: runs evaluation and returns the result JSON.
 *
 * This module holds the scenario's contract and what does not depend on the
 * server: argument coercion, prompt and result shapes, tool-name globs. The
 * runs in progress, the state environments keep per run and the capability
 * that says their runs are isolated are `runs.ts`; the MCP wire is
 * `wire.ts`.
 *
 * @module
 */
import { z } from "zod";
import { formatZodError } from "../primitives/_schema.ts";
import type { ContentBlock } from "../_sdk.ts";
import type { PromptMessage } from "../primitives/prompt.ts";
import type { Shape, ToolArgs, ToolExtra } from "../primitives/tool.ts";

/** Options of `MCPServer.scenario()`. */
export interface ScenarioOptions<S extends Shape = Shape> {
  /** Scenario name; the wire name is `{server name}:{name}`. */
  name: string;
  /** What the task is, for people listing scenarios. */
  description?: string;
  /** Zod shape of the arguments; prompt arguments arrive as strings and are coerced. */
  input?: S;
  /** Glob patterns of tools the agent must not be given (`debug_*`). */
  excludeTools?: string[];
  /** Glob patterns of the only tools the agent may be given. */
  allowedTools?: string[];
  /**
   * The kind of computer the scenario's screen is (`browser`, `desktop`,
   * `mobile`), for models whose computer use asks (Gemini's environment).
   */
  computerEnvironment?: "browser" | "desktop" | "mobile";
  /**
   * The network the run's container needs, when the runner starts one per
   * run (`docker://IMAGE`): `none` (the default) or `host`. A request, not a
   * grant: the runner gives `host` only when its operator allows it
   * (`--docker-network-allow host`) and fails the run otherwise.
   */
  network?: "none" | "host";
}

/** What the agent hands back: text, or content with citations. */
export type ScenarioAnswer = string | {
  content: string | ContentBlock[];
  citations?: unknown[];
};

/** One weighted part of a reward. */
export interface Subscore {
  /** What it measures. */
  name: string;
  /** Its weight in the reward. */
  weight: number;
  /** Its value, usually 0 to 1. */
  value: number;
}

/** The result of evaluating a run. */
export interface ScenarioResult {
  /** The score, usually 0 to 1. */
  reward: number;
  /** Whether the task is over. */
  done: boolean;
  /** An explanation. */
  content?: string;
  /** Anything else the grader keeps. */
  info?: Record<string, unknown>;
  /** Whether evaluation failed. */
  isError?: boolean;
  /** The parts of the reward. */
  subscores?: Subscore[];
}

/** What the first yield may be: the prompt. */
export type ScenarioPrompt = string | ContentBlock | PromptMessage[];

/** What the second yield may be: a reward, or a full result. */
export type ScenarioEvaluation = number | ScenarioResult;

/** What a scenario function receives beside its arguments. */
export interface ScenarioContext {
  /** The request context of the `prompts/get` that started the run. */
  extra: ToolExtra;
  /**
   * The run's key (see {@linkcode runKey}): the same for the prompt, every
   * tool call of the run, the submit and the evaluation. Key per-run state
   * with it ({@linkcode RunState}).
   */
  run: string;
}

/**
 * A scenario: code before the first `yield` is setup, the first yield is
 * the prompt, the value sent back is the answer, the second yield is the
 * result.
 */
export type ScenarioFunction<S extends Shape = Shape> = (
  args: ToolArgs<S>,
  ctx: ScenarioContext,
) => AsyncGenerator<
  ScenarioPrompt | ScenarioEvaluation,
  void | ScenarioEvaluation,
  ScenarioAnswer
>;

/**
 * Coerces prompt arguments (always strings on the wire) to the shape: a
 * string the field rejects is parsed as JSON and tried again, so `"7"`
 * becomes 7, `"true"` true and `'{"a":1}'` an object.
 *
 * @param shape The scenario's input shape.
 * @param args The prompt arguments.
 * @returns The parsed arguments, or an error naming the field.
 */
export function coerceArguments(
  shape: Shape,
  args: Record<string, unknown> | undefined,
): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  const input: Record<string, unknown> = { ...args };
  for (const [key, value] of Object.entries(input)) {
    const field = shape[key];
    if (!field || typeof value !== "string") continue;
    if (z.safeParse(field, value).success) continue;
    try {
      input[key] = JSON.parse(value);
    } catch {
      // leave it: the error below names the field
    }
  }
  const parsed = z.object(shape).safeParse(input);
  return parsed.success
    ? { ok: true, value: parsed.data }
    : { ok: false, error: formatZodError(parsed.error) };
}

/** The prompt messages for the first yield. */
export function promptMessages(value: unknown): PromptMessage[] {
  if (typeof value === "string") {
    return [{ role: "user", content: { type: "text", text: value } }];
  }
  if (Array.isArray(value)) return value as PromptMessage[];
  if (value && typeof value === "object" && "type" in value) {
    return [{ role: "user", content: value as ContentBlock }];
  }
  throw new TypeError(
    "A scenario's first yield must be the prompt: a string, a content item or a list of messages",
  );
}

/**
 * The result of the second yield: a number is a reward with `done: true`;
 * no second yield scores 1.
 */
export function scenarioResult(value: unknown): ScenarioResult {
  if (value === undefined) return { reward: 1, done: true };
  if (typeof value === "number") return { reward: value, done: true };
  if (
    value && typeof value === "object" &&
    typeof (value as ScenarioResult).reward === "number"
  ) {
    const result = value as ScenarioResult;
    return { ...result, done: result.done ?? true };
  }
  throw new TypeError(
    "A scenario's second yield must be a number or { reward, done, ... }",
  );
}

/** The answer as the scenario receives it: text stays text. */
export function normalizeAnswer(value: unknown): ScenarioAnswer {
  if (typeof value === "string") return value;
  if (
    value && typeof value === "object" && "content" in value
  ) return value as ScenarioAnswer;
  return JSON.stringify(value ?? "");
}

/**
 * Whether a tool name matches a glob pattern (`*` any run of characters,
 * `?` one character).
 *
 * @param name The tool name.
 * @param pattern The pattern.
 * @returns Whether it matches.
 */
export function globMatch(name: string, pattern: string): boolean {
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp(`^${source}$`).test(name);
}

/** A scheme-like server name: what `{env}:{scenario}` needs to be a URI. */
export const URI_SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*$/;

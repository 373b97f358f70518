/**
 * What every environment connection takes and answers, however it is
 * reached (stdio, HTTP, a container, a HUD control channel): the options of
 * a connection and their time-outs, a scenario as listed, what its setup
 * gives the agent, and the result of evaluating a run. `environment.ts`
 * implements it; HUD's control channel (`hud_session.ts`, `hud_control.ts`)
 * answers in these shapes without importing that implementation.
 *
 * @module
 */
import type { DisplaySize, PromptMessage } from "../tool_host.ts";
import type { ContainerNetwork } from "./target.ts";

/**
 * How long a tool call may take, ms, by default.
 *
 * @example
 * ```ts
 * import { DEFAULT_TOOL_TIMEOUT_MS } from "./contract.ts";
 * import { Environment } from "./environment.ts";
 *
 * const connect = () =>
 *   Environment.connect({ url: "http://127.0.0.1:8765/mcp" }, {
 *     toolTimeoutMs: DEFAULT_TOOL_TIMEOUT_MS * 2, // a slow environment
 *   });
 * ```
 */
export const DEFAULT_TOOL_TIMEOUT_MS = 120_000;

/**
 * How much longer than the tool time-out the runner waits for a tool's
 * answer, ms: a tool with a limit of its own of at most the tool time-out
 * (bash's 120 s) answers the agent with its own time-out first, so a long
 * command is the agent's to read, never a way to error the run.
 *
 * @example
 * ```ts
 * import { DEFAULT_TOOL_TIMEOUT_MS, TOOL_TIMEOUT_GRACE_MS } from "./contract.ts";
 *
 * (DEFAULT_TOOL_TIMEOUT_MS + TOOL_TIMEOUT_GRACE_MS) / 1000; // 130, when the runner gives up
 * ```
 */
export const TOOL_TIMEOUT_GRACE_MS = 10_000;

/** Options of `Environment.connect`. */
export interface ConnectOptions {
  /** Sent as `_meta.harness_token`, and to a stdio child as `MCP_HARNESS_TOKEN`. */
  harnessToken?: string;
  /** More variables for a stdio child (beside PATH, HOME and the rest the SDK passes). */
  env?: Record<string, string>;
  /** The screen size the agent sees: `_meta.display_width/height` of initialize and of every request (default 1280×800). */
  display?: DisplaySize;
  /** How long a tool call may take, ms (default 120 000). */
  toolTimeoutMs?: number;
  /** Text of one tool result at most, UTF-8 bytes (default 100 000). */
  maxToolResultBytes?: number;
  /** Images of one tool result at most (default 4). */
  maxToolResultImages?: number;
  /** The network of a container runtime's container (default `none`). */
  network?: ContainerNetwork;
}

/** A scenario the environment offers. */
export interface ScenarioInfo {
  /** Its name (without the `{env}:` prefix). */
  name: string;
  /** What it is. */
  description?: string;
  /** Its arguments, as the prompt lists them. */
  arguments: { name: string; description?: string; required?: boolean }[];
}

/** What a scenario's setup gives the agent. */
export interface ScenarioSetup {
  /** The prompt. */
  messages: PromptMessage[];
  /** The tools the agent may not call (`_meta.exclude_tools`). */
  exclude: string[];
  /** The only tools the agent may call, when given (`_meta.allowed_tools`). */
  allowed?: string[];
  /** The computer environment the scenario asks for (`_meta.computer_environment`). */
  computerEnvironment?: string;
  /** The network the scenario's run needs (`_meta.network`). */
  network?: string;
}

/** The result of evaluating a run. */
export interface EvaluationResult {
  /** The score. */
  reward: number;
  /** Whether the task is over. */
  done: boolean;
  /** An explanation. */
  content?: string;
  /** Anything else the grader keeps. */
  info?: Record<string, unknown>;
  /** Whether evaluation failed. */
  isError?: boolean;
  /** Weighted parts of the reward. */
  subscores?: { name: string; weight: number; value: number }[];
}

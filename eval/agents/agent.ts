/**
 * The agent loop: the model through the gateway in its native convention
 * (chat completions, Anthropic Messages, Responses or Gemini; see
 * `agents/`), with the tools the scenario gave it; tool calls go to the
 * environment over MCP, until the model answers or the step limit is
 * reached. Calls of any other tool are refused and counted.
 *
 * @module
 */
import { runChat } from "./chat.ts";
import { runGemini } from "./gemini.ts";
import { type AgentOutcome, emptyOutcome } from "./loop.ts";
import type {
  ComputerUseWire,
  Convention,
  ModelEndpoint,
  ModelFeatures,
  RunPlace,
} from "./model.ts";
import {
  type AgentTool,
  DEFAULT_DISPLAY,
  type DisplaySize,
  type PromptMessage,
  type ToolHost,
} from "../tool_host.ts";
import { runMessages } from "./messages.ts";
import { runResponses } from "./responses.ts";

export { type ChatMessage, chatMessages } from "./chat.ts";
export { type AgentOutcome, emptyOutcome, type SafetyCheck } from "./loop.ts";
export {
  type Convention,
  CONVENTIONS,
  type ModelEndpoint,
  usdToMicros,
} from "./model.ts";

/** Options of {@linkcode runAgent}. */
export interface AgentOptions {
  /** Model calls at most. */
  maxSteps: number;
  /** The `trace-id` every model call carries. */
  traceId: string;
  /** The planned run this is (task position and repetition), carried by every model call. */
  run?: RunPlace;
  /** The wire convention (default `chat`). */
  convention?: Convention;
  /** The screen size the environment was told (default 1280×800). */
  display?: DisplaySize;
  /** How the model's computer use is reached (`/v1/models`' `computer_use`). */
  computerUse?: ComputerUseWire;
  /** What the model refuses (`/v1/models`' `features`). */
  features?: ModelFeatures;
  /** The computer environment the scenario asks for (`browser`, `desktop`, `mobile`). */
  computerEnvironment?: string;
  /** The scenario's excluded tool patterns. */
  excludedTools?: string[];
  /** Stops the loop. */
  signal?: AbortSignal;
  /** Filled in as the loop goes (default a fresh one), so a run that fails keeps its steps and cost. */
  outcome?: AgentOutcome;
}

const LOOPS = {
  chat: runChat,
  messages: runMessages,
  responses: runResponses,
  gemini: runGemini,
} as const;

/**
 * Runs the loop for one prompt.
 *
 * @example
 * ```ts ignore
 * import { runAgent } from "./agent.ts";
 * const outcome = await runAgent(env, endpoint, prompt, tools, {
 *   maxSteps: 10,
 *   traceId: crypto.randomUUID(),
 *   convention: "responses",
 * });
 * ```
 *
 * @param env The environment (tool calls).
 * @param endpoint The gateway, key and model.
 * @param prompt The scenario's prompt messages.
 * @param tools The tools the agent may use.
 * @param options Step limit, trace id, convention, the model's computer use and features, display size, abort signal.
 * @returns The answer and what it cost.
 */
export async function runAgent(
  env: ToolHost,
  endpoint: ModelEndpoint,
  prompt: PromptMessage[],
  tools: AgentTool[],
  options: AgentOptions,
): Promise<AgentOutcome> {
  return await LOOPS[options.convention ?? "chat"]({
    env,
    endpoint,
    prompt,
    tools,
    maxSteps: options.maxSteps,
    traceId: options.traceId,
    ...(options.run && { run: options.run }),
    display: options.display ?? DEFAULT_DISPLAY,
    ...(options.computerUse && { computerUse: options.computerUse }),
    ...(options.features && { features: options.features }),
    ...(options.computerEnvironment &&
      { computerEnvironment: options.computerEnvironment }),
    ...(options.excludedTools && { excludedTools: options.excludedTools }),
    signal: options.signal,
  }, options.outcome ?? emptyOutcome());
}

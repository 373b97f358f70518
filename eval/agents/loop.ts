/**
 * What every convention's agent loop shares: the run it is given, the
 * outcome it fills in (tokens, cost, the trajectory), the model call (cost
 * from `x-gateway-cost`) and the helpers that read model output. The model
 * endpoint and transport are `model.ts`; the gate every tool call passes and
 * the `computer` tool's runner are `tool_gate.ts`.
 *
 * @module
 */
import type {
  AgentTool,
  DisplaySize,
  PromptMessage,
  ToolHost,
  ToolImage,
  ToolResult,
} from "../tool_host.ts";
import {
  emptyTrajectory,
  type Trajectory,
  type TrajectoryStep,
  type TrajectoryToolCall,
} from "./trajectory.ts";
import {
  type ComputerUseWire,
  gatewayTransport,
  type JsonObject,
  type ModelEndpoint,
  type ModelFeatures,
  type RunPlace,
  usdToMicros,
} from "./model.ts";

/** A safety check the model raised and the runner acknowledged. */
export interface SafetyCheck {
  /** The check's id (Responses), or the function call's name (Gemini). */
  id: string;
  /** What kind of check it is. */
  code?: string;
  /** What the model said about it. */
  message?: string;
}

/** What one run of the loop produced. */
export interface AgentOutcome {
  /** The final answer (empty when the step limit cut it short). */
  answer: string;
  /** Model calls made. */
  steps: number;
  /** Tokens over all calls. */
  tokens: { input: number; output: number };
  /** What the gateway charged, micro-USD (sum of `x-gateway-cost`). */
  costMicros: number;
  /** Whether the step limit ended the loop. */
  stepLimitReached: boolean;
  /** Calls of tools the agent was not given (answered with an error, not run). */
  refusedToolCalls: number;
  /** Tool calls past {@linkcode MAX_TOOL_CALLS_PER_TURN} in a turn (answered with an error, not run). */
  excessToolCalls: number;
  /** Safety checks the model raised, each acknowledged so the run could go on. */
  safetyChecks: SafetyCheck[];
  /** What happened, step by step. */
  trajectory: Trajectory;
}

/**
 * An outcome before any model call.
 *
 * @example
 * ```ts
 * import { emptyOutcome } from "./loop.ts";
 *
 * const outcome = emptyOutcome();
 * outcome.steps; // 0
 * outcome.trajectory.steps.length; // 0
 * ```
 *
 * @returns Zero steps, tokens and cost.
 */
export function emptyOutcome(): AgentOutcome {
  return {
    answer: "",
    steps: 0,
    tokens: { input: 0, output: 0 },
    costMicros: 0,
    stepLimitReached: false,
    refusedToolCalls: 0,
    excessToolCalls: 0,
    safetyChecks: [],
    trajectory: emptyTrajectory(),
  };
}

/**
 * Tool calls of one model turn that are run at most; the rest are answered
 * with an error the model reads, and counted: a turn of 8,000 calls would
 * otherwise make a next request and a results line of hundreds of MB.
 *
 * @example
 * ```ts
 * import { MAX_TOOL_CALLS_PER_TURN } from "./loop.ts";
 *
 * MAX_TOOL_CALLS_PER_TURN; // 32
 * ```
 */
export const MAX_TOOL_CALLS_PER_TURN = 32;

/** Everything one agent loop needs. */
export interface AgentRun {
  /** The environment. */
  env: ToolHost;
  /** The gateway, key and model. */
  endpoint: ModelEndpoint;
  /** The scenario's prompt messages. */
  prompt: PromptMessage[];
  /** The tools the agent was given. */
  tools: AgentTool[];
  /** Model calls at most. */
  maxSteps: number;
  /** The `trace-id` every model call carries. */
  traceId: string;
  /** The planned run this is, for the model calls to carry (see {@linkcode ModelRequest.run}). */
  run?: RunPlace;
  /** The screen size the environment was told, agent pixels. */
  display: DisplaySize;
  /**
   * How the model's computer use is reached (`/v1/models`' `computer_use`);
   * absent, or a tool the convention does not speak: the environment's
   * `computer` tool is given as a plain tool.
   */
  computerUse?: ComputerUseWire;
  /** What the model refuses (`/v1/models`' `features`). */
  features?: ModelFeatures;
  /** The computer environment the scenario asks for (`browser`, `desktop`, `mobile`), when it asks. */
  computerEnvironment?: string;
  /** The scenario's excluded tool patterns (`_meta.exclude_tools`). */
  excludedTools?: string[];
  /** Stops the loop. */
  signal?: AbortSignal;
}

/**
 * Calls the model through the endpoint's transport: counts the step and its
 * cost, opens the step in the trajectory, and throws with the gateway's
 * message when the call fails.
 *
 * @param run The run (endpoint, trace id, signal).
 * @param outcome Where the step and cost are counted.
 * @param path The route's path under the gateway, e.g. `/v1/messages`.
 * @param body The request body.
 * @param headers Extra headers (e.g. `anthropic-beta`).
 * @returns The answer's JSON body.
 */
export async function callModel(
  run: AgentRun,
  outcome: AgentOutcome,
  path: string,
  body: JsonObject,
  headers: Record<string, string> = {},
): Promise<JsonObject> {
  run.signal?.throwIfAborted();
  outcome.steps++;
  const send = run.endpoint.transport ?? gatewayTransport(run.endpoint);
  const response = await send({
    path,
    headers: { "trace-id": run.traceId, ...headers },
    body,
    traceId: run.traceId,
    step: outcome.steps,
    ...(run.run && { run: run.run }),
    signal: run.signal,
  });
  let answer: unknown = {};
  try {
    answer = JSON.parse(response.body);
  } catch {
    // Not JSON: reported below.
  }
  const costMicros = response.replayed
    ? 0
    : usdToMicros(response.headers["x-gateway-cost"] ?? null);
  outcome.costMicros += costMicros;
  outcome.trajectory.steps.push({
    step: outcome.steps,
    status: response.status,
    text: "",
    tool_calls: [],
    tokens: { input: 0, output: 0 },
    cost_usd: costMicros / 1_000_000,
    ...(response.replayed && { replayed: true }),
  });
  if (response.status < 200 || response.status > 299) {
    const error = isObject(answer) ? answer.error : undefined;
    const message = isObject(error) && typeof error.message === "string"
      ? error.message
      : response.statusText;
    throw new Error(`The model call failed (${response.status}): ${message}`);
  }
  if (!isObject(answer)) {
    throw new Error("The model call answered something other than JSON");
  }
  return answer;
}

function currentStep(outcome: AgentOutcome): TrajectoryStep {
  const step = outcome.trajectory.steps.at(-1);
  if (!step) throw new Error("No model call was made yet");
  return step;
}

/**
 * Counts a model call's tokens, in the outcome and in its trajectory step.
 *
 * @param outcome The outcome (its last step is the call's).
 * @param input Input tokens.
 * @param output Output tokens.
 */
export function addTokens(
  outcome: AgentOutcome,
  input: number,
  output: number,
): void {
  outcome.tokens.input += input;
  outcome.tokens.output += output;
  const step = currentStep(outcome);
  step.tokens.input += input;
  step.tokens.output += output;
}

/**
 * Keeps the model's text of the current call in the trajectory.
 *
 * @param outcome The outcome (its last step is the call's).
 * @param text What the model wrote.
 */
export function modelSaid(outcome: AgentOutcome, text: string): void {
  currentStep(outcome).text = text;
}

/**
 * Runs one tool call of the current model turn and keeps it in the
 * trajectory: its name and arguments first (so a call that throws is still
 * shown), then its result, whether the gate refused it, and the safety
 * checks it raised.
 *
 * @param outcome The outcome (its last step is the turn's).
 * @param name The name the model called.
 * @param args The arguments as the model sent them.
 * @param act Runs the call.
 * @param safetyChecks The checks the call raised.
 * @returns The call's result.
 */
export async function traceToolCall(
  outcome: AgentOutcome,
  name: string,
  args: unknown,
  act: () => ToolResult | Promise<ToolResult>,
  safetyChecks: SafetyCheck[] = [],
): Promise<ToolResult> {
  const step = currentStep(outcome);
  if (step.tool_calls.length >= MAX_TOOL_CALLS_PER_TURN) {
    // Not run, and kept without its arguments: only that it was made.
    outcome.excessToolCalls++;
    const text =
      `Error: not run: at most ${MAX_TOOL_CALLS_PER_TURN} tool calls per turn are run; make fewer calls per turn`;
    step.tool_calls.push({
      name: String(name).slice(0, 200),
      arguments: null,
      refused: true,
      result: { text, images: [], is_error: true },
    });
    return { text, images: [], isError: true };
  }
  const call: TrajectoryToolCall = {
    name,
    arguments: args,
    ...(safetyChecks.length > 0 && { safety_checks: safetyChecks }),
  };
  step.tool_calls.push(call);
  const refusedBefore = outcome.refusedToolCalls;
  const result = await act();
  call.result = {
    text: result.text,
    images: result.images.map((image) => ({ ...image })),
    is_error: result.isError,
  };
  if (outcome.refusedToolCalls > refusedBefore) call.refused = true;
  return result;
}

/**
 * Adds an image the model was sent after a tool call (e.g. the fresh
 * screenshot a Responses `computer_call_output` must carry) to the call's
 * result in the trajectory.
 *
 * @param outcome The outcome (its last step is the turn's).
 * @param image The image.
 */
export function traceImage(outcome: AgentOutcome, image: ToolImage): void {
  const result = currentStep(outcome).tool_calls.at(-1)?.result;
  if (
    result && !result.images.some((i) => "data" in i && i.data === image.data)
  ) {
    result.images.push({ ...image });
  }
}

/**
 * Whether a value is a JSON object (not an array, not null).
 *
 * @param value Anything.
 * @returns Whether it is a plain object.
 */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A token count from a usage field: a non-negative number, 0 for anything else.
 *
 * @param value The field.
 * @returns The count.
 */
export function tokenCount(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0
    ? value
    : 0;
}

/** A prompt message's content as the conventions carry it: text or an image. */
export type PromptPart = { text: string } | { image: ToolImage };

/**
 * A prompt message's content item as text or an image (an embedded text
 * resource as its text; anything else as its JSON).
 *
 * @param message An MCP prompt message.
 * @returns The part.
 */
export function promptPart(message: PromptMessage): PromptPart {
  const { content } = message;
  if (content.type === "text") return { text: String(content.text ?? "") };
  if (
    content.type === "image" && typeof content.data === "string" &&
    typeof content.mimeType === "string"
  ) {
    return { image: { mimeType: content.mimeType, data: content.data } };
  }
  const resource = content.resource as { text?: unknown } | undefined;
  return {
    text: typeof resource?.text === "string"
      ? resource.text
      : JSON.stringify(content),
  };
}

/**
 * A data URL of an image.
 *
 * @param image The image.
 * @returns `data:<type>;base64,<data>`.
 */
export function dataUrl(image: ToolImage): string {
  return `data:${image.mimeType};base64,${image.data}`;
}

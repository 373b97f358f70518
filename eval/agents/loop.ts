/**
 * What every convention's agent loop shares: the endpoint, the outcome it
 * fills in, the model call (cost from `x-gateway-cost`), the gate every tool
 * call passes (only the tools the agent was given are callable), and the
 * runner of the environment's `computer` tool for native actions.
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

/** The wire conventions the runner speaks, named after the gateway's routes. */
export type Convention = "chat" | "messages" | "responses" | "gemini";

/** Every convention, in the order `--convention` lists them. */
export const CONVENTIONS: readonly Convention[] = [
  "chat",
  "messages",
  "responses",
  "gemini",
];

/** Where the model is. */
export interface ModelEndpoint {
  /** Base URL of the gateway, e.g. `http://localhost:8080` (the route's path is added). */
  gatewayUrl: string;
  /** The caller key. */
  key: string;
  /** The model id. */
  model: string;
  /**
   * How model calls travel (default {@linkcode gatewayTransport} of this
   * endpoint): the one seam every loop's model calls pass, which recording
   * and replay wrap (see `eval/record.ts`).
   */
  transport?: ModelTransport;
}

/** A model call as a loop sends it, before it meets the network. */
export interface ModelRequest {
  /** The route's path under the gateway, e.g. `/v1/messages`. */
  path: string;
  /** Headers the convention needs (`trace-id`, `anthropic-beta`); never the key. */
  headers: Record<string, string>;
  /** The request body. */
  body: JsonObject;
  /** The run's `trace-id`. */
  traceId: string;
  /** The model call's number in the run, from 1. */
  step: number;
  /**
   * The planned run the call belongs to (task position and repetition),
   * when the runner says: a replay plays that run's own recording.
   */
  run?: RunPlace;
  /** Stops the call. */
  signal?: AbortSignal;
}

/** Where a run is in the eval: its task's position and its repetition. */
export interface RunPlace {
  /** The task's position, from 0. */
  task: number;
  /** The repetition, from 0. */
  repeat: number;
}

/** A model call's answer, read whole. */
export interface ModelResponse {
  /** The HTTP status. */
  status: number;
  /** The status text. */
  statusText: string;
  /** Headers, names lower case (`x-gateway-cost` is read from here). */
  headers: Record<string, string>;
  /** The body's text. */
  body: string;
  /** Set when a recording answered, not the gateway. */
  replayed?: boolean;
}

/** Sends one model call and reads its answer whole. */
export type ModelTransport = (request: ModelRequest) => Promise<ModelResponse>;

/**
 * The transport that calls the gateway over HTTP with the endpoint's key.
 *
 * @example
 * ```ts ignore
 * import { gatewayTransport } from "./loop.ts";
 * const send = gatewayTransport({ gatewayUrl: "http://localhost:8080", key: "gk_…", model: "gpt-4o-mini" });
 * ```
 *
 * @param endpoint The gateway and key.
 * @returns The transport.
 */
export function gatewayTransport(
  endpoint: Pick<ModelEndpoint, "gatewayUrl" | "key">,
): ModelTransport {
  const base = endpoint.gatewayUrl.replace(/\/$/, "");
  return async (request) => {
    const response = await fetch(`${base}${request.path}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${endpoint.key}`,
        "content-type": "application/json",
        ...request.headers,
      },
      body: JSON.stringify(request.body),
      signal: request.signal,
    });
    return {
      status: response.status,
      statusText: response.statusText,
      headers: Object.fromEntries(response.headers),
      body: await response.text(),
    };
  };
}

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
  /** Safety checks the model raised, each acknowledged so the run could go on. */
  safetyChecks: SafetyCheck[];
  /** What happened, step by step. */
  trajectory: Trajectory;
}

/**
 * An outcome before any model call.
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
    safetyChecks: [],
    trajectory: emptyTrajectory(),
  };
}

/**
 * A USD amount as the gateway prints it, in micro-USD.
 *
 * @example
 * ```ts
 * import { usdToMicros } from "./loop.ts";
 * usdToMicros("$0.000125"); // 125
 * ```
 *
 * @param text `$0.000125`, `0.5`, or nothing.
 * @returns The amount in micro-USD; 0 for nothing or a non-number.
 */
export function usdToMicros(text: string | null): number {
  if (!text) return 0;
  const value = Number(text.replace(/^\$/, ""));
  return Number.isFinite(value) ? Math.round(value * 1_000_000) : 0;
}

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
  /** Stops the loop. */
  signal?: AbortSignal;
}

/** A JSON object as the providers send it. */
export type JsonObject = Record<string, unknown>;

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
  const call: TrajectoryToolCall = {
    name,
    arguments: args,
    ...(safetyChecks.length > 0 && { safety_checks: safetyChecks }),
  };
  currentStep(outcome).tool_calls.push(call);
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
 * A non-negative count from a usage field, 0 for anything else.
 *
 * @param value The field.
 * @returns The count.
 */
export function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0
    ? value
    : 0;
}

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
 * only the last answers with a screenshot; the first error stops the rest.
 *
 * @param gate The tool gate.
 * @param plan The calls, or an error to answer with.
 * @returns The texts joined, the last call's images.
 */
export async function runComputer(
  gate: ToolGate,
  plan: ComputerPlan,
): Promise<ToolResult> {
  if ("error" in plan) return errorResult(plan.error);
  const texts: string[] = [];
  let last: ToolResult = { text: "", images: [], isError: false };
  for (const [i, call] of plan.calls.entries()) {
    const final = i === plan.calls.length - 1;
    last = await gate.call(
      "computer",
      final ? call : { ...call, screenshot: false },
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

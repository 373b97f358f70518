/**
 * Gemini's computer use, as the simulator's agent speaks it: the
 * `computerUse` tool, the predefined functions (`click_at`, `type_text_at`,
 * `key_combination`) with coordinates normalised to 0–999, a
 * `safety_decision` in the arguments of an action that needs confirming, and
 * the function responses (a screenshot as an `inlineData` part, inside
 * `functionResponse.parts` or beside it) that must carry
 * `safety_acknowledgement: "true"` after such an action.
 *
 * The tool's `environment` (browser, desktop, mobile) must be one the
 * model's catalog facts list, and the agent never calls a function named in
 * `excludedPredefinedFunctions` unless the request declares its own function
 * of that name (the docs' way to replace a predefined action); a step whose
 * only function is excluded is skipped. A model whose verified facts give no
 * computer use refuses the tool. Each refusal is Google's 400
 * `INVALID_ARGUMENT`. Source: the computer use guide
 * (https://ai.google.dev/gemini-api/docs/computer-use) and the official SDK's
 * `ComputerUse` and `Environment` (`@google/genai` 3.1.0).
 *
 * @module
 */

import { asArray, field, isObject, type Json } from "./_json.ts";
import {
  type ComputerAction,
  type ComputerPlan,
  normalise,
  SAFETY_MESSAGE,
  spellKey,
} from "./computer_use.ts";
import { refusesComputerTool, type SimulatedModel } from "./model_facts.ts";
import { BadRequestError } from "./request_flow.ts";
import type { ComputerCall } from "./reply.ts";

/** The environments the API's `Environment` enum names (`@google/genai` 3.1.0). */
const ENVIRONMENTS: ReadonlySet<unknown> = new Set([
  "ENVIRONMENT_UNSPECIFIED",
  "ENVIRONMENT_BROWSER",
  "ENVIRONMENT_MOBILE",
  "ENVIRONMENT_DESKTOP",
]);

/** The functions the `computerUse` tool predefines. */
export const PREDEFINED_FUNCTIONS: ReadonlySet<string> = new Set([
  "open_web_browser",
  "click_at",
  "hover_at",
  "type_text_at",
  "scroll_document",
  "scroll_at",
  "wait_5_seconds",
  "go_back",
  "go_forward",
  "search",
  "navigate",
  "key_combination",
  "drag_and_drop",
]);

/**
 * Whether a Gemini tool entry is the computer-use tool.
 *
 * @param tool One entry of `tools`.
 * @returns `true` for `{computerUse: {...}}` (or `computer_use`).
 */
export function isComputerUseTool(tool: Json): boolean {
  return isObject(field(tool, "computerUse", "computer_use"));
}

/** The `computerUse` tool's settings that change what the agent does. */
export interface GeminiComputerTool {
  /** Predefined functions the model must not call. */
  excluded: ReadonlySet<string>;
}

/**
 * Reads the `computerUse` tool of a request and refuses what the model's
 * facts refuse: the tool on a model without computer use, an environment
 * the API does not know or the model does not take.
 *
 * @param tool The tool entry (`{computerUse: {...}}`).
 * @param index Its place in `tools`, for the error.
 * @param modelId The model the request names.
 * @param model The model's facts, if the catalog has them.
 * @returns The tool's settings.
 * @throws {BadRequestError} With Google's `INVALID_ARGUMENT` wording.
 */
export function readComputerUseTool(
  tool: Json,
  index: number,
  modelId: string,
  model: SimulatedModel | undefined,
): GeminiComputerTool {
  const settings = field(tool, "computerUse", "computer_use") as Json;
  if (refusesComputerTool(model, "computer_use")) {
    throw new BadRequestError(
      `Computer Use is not supported for models/${modelId}.`,
    );
  }
  const environment = settings.environment ?? "ENVIRONMENT_BROWSER";
  if (!ENVIRONMENTS.has(environment)) {
    // The form of Google's error for a JSON value that is not in a proto enum.
    throw new BadRequestError(
      `Invalid value at 'tools[${index}].computer_use.environment' (type.googleapis.com/google.ai.generativelanguage.v1beta.Tool.ComputerUse.Environment), ${
        JSON.stringify(environment)
      }`,
    );
  }
  const facts = model?.computerUse;
  const accepted = facts?.environments ??
    (facts?.environment ? [facts.environment] : undefined);
  if (accepted && !accepted.includes(String(environment))) {
    throw new BadRequestError(
      `Environment ${
        String(environment)
      } is not supported for models/${modelId}; supported: ${
        accepted.join(", ")
      }.`,
    );
  }
  const excluded = asArray(
    field(
      settings,
      "excludedPredefinedFunctions",
      "excluded_predefined_functions",
    ),
  ).map(String);
  return { excluded: new Set(excluded) };
}

/** A function call as Gemini's computer-use model writes it. */
export interface GeminiFunctionCall {
  /** The predefined function. */
  name: string;
  /** Its arguments, coordinates on the 0–999 grid. */
  args: Json;
}

function shape(
  action: ComputerAction,
  width: number,
  height: number,
): GeminiFunctionCall {
  switch (action.type) {
    case "click":
    case "double_click":
      return {
        name: "click_at",
        args: { x: normalise(action.x, width), y: normalise(action.y, height) },
      };
    case "type": {
      const at = action.at ?? { x: width / 2, y: height / 2 };
      return {
        name: "type_text_at",
        args: {
          x: normalise(at.x, width),
          y: normalise(at.y, height),
          text: action.text,
          press_enter: false,
          clear_before_typing: true,
        },
      };
    }
    case "key":
      return {
        name: "key_combination",
        args: {
          keys: action.keys.map((key) => spellKey(key, "gemini")).join("+"),
        },
      };
    case "zoom":
    case "screenshot":
      // Gemini has no screenshot or zoom action (every function response
      // carries a screenshot); a plan for Gemini holds neither, and waiting
      // is the nearest.
      return { name: "wait_5_seconds", args: {} };
  }
}

/**
 * The predefined function that plays an action.
 *
 * @param action The action.
 * @returns The function's name (`click_at`, `type_text_at`, …).
 */
export function geminiFunctionName(action: ComputerAction): string {
  return shape(action, 1000, 1000).name;
}

/**
 * The agent's action as a Gemini function call, with the safety decision
 * when it needs confirming.
 *
 * @example
 * ```ts
 * import { geminiFunctionCall } from "./gemini_computer.ts";
 * geminiFunctionCall({
 *   kind: "computer",
 *   action: { type: "click", x: 412, y: 300 },
 *   actions: [{ type: "click", x: 412, y: 300 }],
 *   screen: { width: 1280, height: 800 },
 *   safetyCheck: false,
 * });
 * // { name: "click_at", args: { x: 322, y: 375 } }
 * ```
 *
 * @param call The agent's next action.
 * @returns The `functionCall` part's content.
 */
export function geminiFunctionCall(call: ComputerCall): GeminiFunctionCall {
  const { name, args } = shape(
    call.action,
    call.screen.width,
    call.screen.height,
  );
  if (!call.safetyCheck) return { name, args };
  return {
    name,
    args: {
      ...args,
      safety_decision: {
        decision: "require_confirmation",
        explanation: SAFETY_MESSAGE,
      },
    },
  };
}

/** What a walk over `contents` learns about the computer-use episode. */
export interface GeminiComputerHistory {
  /** Predefined function calls the model made. */
  calls: number;
  /** For each predefined function response, in order, whether it acknowledged a safety decision. */
  acknowledged: boolean[];
}

/**
 * Counts the predefined function calls and reads the function responses'
 * acknowledgements in a conversation.
 *
 * @param contents The request's `contents`.
 * @returns The history.
 */
export function geminiComputerHistory(
  contents: unknown[],
): GeminiComputerHistory {
  const history: GeminiComputerHistory = { calls: 0, acknowledged: [] };
  for (const content of contents) {
    if (!isObject(content)) continue;
    for (const part of asArray(content.parts)) {
      if (!isObject(part)) continue;
      const call = field(part, "functionCall", "function_call");
      if (isObject(call) && PREDEFINED_FUNCTIONS.has(String(call.name))) {
        history.calls += 1;
      }
      const response = field(part, "functionResponse", "function_response");
      if (
        isObject(response) && PREDEFINED_FUNCTIONS.has(String(response.name))
      ) {
        const body = isObject(response.response) ? response.response : {};
        const ack = body.safety_acknowledgement;
        history.acknowledged.push(ack === "true" || ack === true);
      }
    }
  }
  return history;
}

/**
 * Refuses a request whose function response to the call that needed
 * confirming does not acknowledge it.
 *
 * @param plan The agent's plan.
 * @param history The conversation's computer-use history.
 * @throws {BadRequestError} When the acknowledgement is missing.
 */
export function checkGeminiAcknowledgement(
  plan: ComputerPlan,
  history: GeminiComputerHistory,
): void {
  if (plan.confirmAt === undefined) return;
  if (history.acknowledged.length <= plan.confirmAt) return;
  if (!history.acknowledged[plan.confirmAt]) {
    throw new BadRequestError(
      `* GenerateContentRequest.contents: the function response to call ${
        plan.confirmAt + 1
      } must carry safety_acknowledgement "true": its call asked for confirmation (safety_decision require_confirmation)`,
    );
  }
}

/**
 * The plan without the steps whose predefined function is excluded, unless
 * the request declares its own function of that name (which then plays it).
 *
 * @param plan The agent's plan.
 * @param excluded The tool's `excludedPredefinedFunctions`.
 * @param declared The names of the request's own function declarations.
 * @returns The plan left, or `undefined` when no step is left.
 */
export function withoutExcluded(
  plan: ComputerPlan | undefined,
  excluded: ReadonlySet<string>,
  declared: ReadonlySet<string>,
): ComputerPlan | undefined {
  if (plan === undefined || excluded.size === 0) return plan;
  const actions = plan.actions.filter((action) => {
    const name = geminiFunctionName(action);
    return !excluded.has(name) || declared.has(name);
  });
  return actions.length === 0 ? undefined : { ...plan, actions };
}

/**
 * Gemini's computer use, as the simulator's agent speaks it: the
 * `computerUse` tool, the predefined functions (`click_at`, `type_text_at`,
 * `key_combination`) with coordinates normalised to 0–999, a
 * `safety_decision` in the arguments of an action that needs confirming, and
 * the function responses (a screenshot as an `inlineData` part, inside
 * `functionResponse.parts` or beside it) that must carry
 * `safety_acknowledgement: "true"` after such an action.
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
import { BadRequestError } from "./request_flow.ts";
import type { ComputerCall } from "./reply.ts";

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
    case "screenshot":
      // Gemini has no screenshot action (every function response carries
      // one); a plan for Gemini never holds one, and waiting is the nearest.
      return { name: "wait_5_seconds", args: {} };
  }
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

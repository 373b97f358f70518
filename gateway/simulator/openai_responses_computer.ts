/**
 * OpenAI's computer use in the Responses API, as the simulator's agent speaks
 * it: `computer_call` items (`click`, `double_click`, `type`, `keypress`,
 * `screenshot`) with `pending_safety_checks`, and the history the runner
 * sends back in `input`, where each call is answered by a
 * `computer_call_output` with a `computer_screenshot` and, after a call that
 * carried a check, `acknowledged_safety_checks`. A conversation continued
 * with `previous_response_id` is read from the stored responses
 * (`response_store.ts`), so the episode goes on from the stored actions.
 *
 * @module
 */

import { asArray, isObject, type Json } from "./_json.ts";
import {
  type ComputerAction,
  type ComputerPlan,
  SAFETY_MESSAGE,
  spellKey,
} from "./computer_use.ts";
import { BadRequestError } from "./request_flow.ts";
import { imageSizeFromUrl } from "./image.ts";
import type { ComputerCall, PromptMeter } from "./reply.ts";

/** The code of the safety check a `[confirm]` prompt asks for (one of OpenAI's documented codes). */
const SAFETY_CODE = "sensitive_domain";

/**
 * The id of the safety check on a call: derived from its `call_id`, so the
 * acknowledgement can be checked without state.
 */
function safetyCheckId(callId: string): string {
  return `sc_${callId}`;
}

/**
 * A computer action in the Responses shape.
 *
 * @param action The action.
 * @returns The `action` of a `computer_call` item.
 */
export function responsesAction(action: ComputerAction): Json {
  switch (action.type) {
    case "screenshot":
      return { type: "screenshot" };
    case "click":
      return { type: "click", x: action.x, y: action.y, button: "left" };
    case "double_click":
      return { type: "double_click", x: action.x, y: action.y };
    case "type":
      return { type: "type", text: action.text };
    case "key":
      return {
        type: "keypress",
        keys: action.keys.map((key) => spellKey(key, "openai")),
      };
  }
}

/**
 * The `computer_call` output item of the agent's next action.
 *
 * @param call The action.
 * @param id The response's id suffix.
 * @param done Whether the item is complete (else `in_progress`, as streamed first).
 * @returns The item.
 */
export function computerCallItem(
  call: ComputerCall,
  id: string,
  done: boolean,
): Json {
  const callId = `call_${id}`;
  return {
    id: `cu_${id}`,
    type: "computer_call",
    call_id: callId,
    action: responsesAction(call.action),
    pending_safety_checks: call.safetyCheck
      ? [{
        id: safetyCheckId(callId),
        code: SAFETY_CODE,
        message: SAFETY_MESSAGE,
      }]
      : [],
    status: done ? "completed" : "in_progress",
  };
}

/** What the walk over `input` learns about the computer-use episode. */
export interface ComputerHistory {
  /** `call_id`s of the `computer_call` items, in order. */
  callIds: string[];
  /** Safety-check ids acknowledged per answered `call_id`. */
  acknowledged: Map<string, string[]>;
}

/**
 * Reads one `input` item into the history if it is a `computer_call` or a
 * `computer_call_output`, counting its action and screenshot.
 *
 * @param item The item.
 * @param history The history so far.
 * @param meter Counts the action and the screenshot.
 * @returns Whether the item was one of the two.
 */
export function readComputerItem(
  item: Json,
  history: ComputerHistory,
  meter: PromptMeter,
): boolean {
  if (item.type === "computer_call") {
    meter.json(item.action);
    history.callIds.push(String(item.call_id));
    return true;
  }
  if (item.type === "computer_call_output") {
    const output = isObject(item.output) ? item.output : {};
    meter.image(imageSizeFromUrl(output.image_url), output.detail);
    history.acknowledged.set(
      String(item.call_id),
      asArray(item.acknowledged_safety_checks).map((check) =>
        isObject(check) ? String(check.id) : ""
      ),
    );
    return true;
  }
  return false;
}

/**
 * The screen a `computer_use_preview` tool declares.
 *
 * @param tool One entry of `tools`.
 * @returns `null` for other tools; the screen, or `undefined` when it gives none.
 */
export function computerScreenOf(
  tool: Json,
): { width: number; height: number } | undefined | null {
  if (tool.type !== "computer_use_preview") return null;
  const width = Number(tool.display_width);
  const height = Number(tool.display_height);
  return Number.isInteger(width) && Number.isInteger(height) && width > 0 &&
      height > 0
    ? { width, height }
    : undefined;
}

/**
 * Refuses a request whose answer to the call carrying the safety check does
 * not acknowledge it, as the contract asks of the agent's runner.
 *
 * @param plan The agent's plan.
 * @param history The conversation's computer-use history.
 * @throws {BadRequestError} When the acknowledgement is missing.
 */
export function checkAcknowledgement(
  plan: ComputerPlan,
  history: ComputerHistory,
): void {
  if (plan.confirmAt === undefined) return;
  const callId = history.callIds[plan.confirmAt];
  const acknowledged = callId && history.acknowledged.get(callId);
  if (!acknowledged) return;
  const wanted = safetyCheckId(callId);
  if (!acknowledged.includes(wanted)) {
    throw new BadRequestError(
      `Invalid 'input': the computer_call_output for '${callId}' must acknowledge the pending safety check '${wanted}' in 'acknowledged_safety_checks'`,
    );
  }
}

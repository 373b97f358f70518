/**
 * OpenAI's computer use in the Responses API, as the simulator's agent speaks
 * it: `computer_call` items (`click`, `double_click`, `type`, `keypress`,
 * `screenshot`) with `pending_safety_checks`, one `action` each for the
 * `computer_use_preview` tool, a batched `actions` list for the GA
 * `{"type": "computer"}` tool (source: the computer use guide,
 * https://developers.openai.com/api/docs/guides/tools-computer-use, and the
 * SDK's `ResponseComputerToolCall.actions`, `openai` 7.57.0), and the history the runner
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
    // OpenAI's computer tools have no zoom, so no plan for them holds one.
    case "zoom":
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
 * The `computer_call` output item of the agent's next turn: one `action`
 * for `computer_use_preview`, the batched `actions` list for the GA
 * `computer` tool.
 *
 * @param call The turn's actions.
 * @param id The response's id suffix.
 * @param done Whether the item is complete (else `in_progress`, as streamed first).
 * @param batched Whether the GA tool is declared (a batched `actions` list).
 * @returns The item.
 */
export function computerCallItem(
  call: ComputerCall,
  id: string,
  done: boolean,
  batched = false,
): Json {
  const callId = `call_${id}`;
  return {
    id: `cu_${id}`,
    type: "computer_call",
    call_id: callId,
    ...(batched
      ? { actions: call.actions.map(responsesAction) }
      : { action: responsesAction(call.action) }),
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
  /** For each call, the index of its first action in the plan. */
  firstActions: number[];
  /** Actions the calls held (one per preview call, the list's length per GA call). */
  actions: number;
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
    meter.json(item.actions);
    history.callIds.push(String(item.call_id));
    history.firstActions.push(history.actions);
    history.actions += Array.isArray(item.actions)
      ? Math.max(1, item.actions.length)
      : 1;
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

/** A declared computer tool: the screen it gives, and whether it is the GA (batched) tool. */
export interface ResponsesComputerTool {
  /** `display_width` × `display_height` (preview tool only), when valid. */
  screen?: { width: number; height: number };
  /** `true` for the GA `{"type": "computer"}` tool. */
  batched: boolean;
}

/**
 * The computer tool a `tools` entry declares: OpenAI's GA `computer` (no
 * settings: the screen is the screenshot's) or `computer_use_preview`.
 *
 * @param tool One entry of `tools`.
 * @returns The tool, or `null` for other tools.
 */
export function computerToolOf(tool: Json): ResponsesComputerTool | null {
  if (tool.type === "computer") return { batched: true };
  if (tool.type !== "computer_use_preview") return null;
  return { screen: previewScreen(tool), batched: false };
}

function previewScreen(
  tool: Json,
): { width: number; height: number } | undefined {
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
  const confirmAt = plan.confirmAt;
  const callId = history.callIds[
    history.firstActions.findIndex((first) => first === confirmAt)
  ];
  const acknowledged = callId && history.acknowledged.get(callId);
  if (!acknowledged) return;
  const wanted = safetyCheckId(callId);
  if (!acknowledged.includes(wanted)) {
    throw new BadRequestError(
      `Invalid 'input': the computer_call_output for '${callId}' must acknowledge the pending safety check '${wanted}' in 'acknowledged_safety_checks'`,
    );
  }
}

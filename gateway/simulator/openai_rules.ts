/**
 * What OpenAI's API refuses of a model, from the catalog's facts
 * (`model_facts.ts`), each with the API's 400 `invalid_request_error`:
 *
 * - A computer tool other than the model's: the GA `{"type": "computer"}`
 *   on `computer-use-preview`, or `computer_use_preview` on a GA model (or
 *   either on a model without computer use): `Tool 'computer_use_preview' is
 *   not supported with gpt-5.5.`, `param: "tools"`, no code.
 * - A forced `tool_choice` (`required`, a named tool) where
 *   `features.forcedToolChoice` is `false`: `Unsupported value:
 *   'tool_choice' does not support 'required' with this model.`, in the
 *   form of OpenAI's other `unsupported_value` errors (no OpenAI model
 *   documents this refusal today; the fact is honoured if a catalog entry
 *   sets it).
 *
 * Sources: the computer use guide
 * (https://developers.openai.com/api/docs/guides/tools-computer-use), which
 * gives `computer_use_preview` to `computer-use-preview` alone and the
 * `computer` tool to the GA models; the official SDK's types (`openai`
 * 7.57.0: `ComputerTool`, `ComputerUsePreviewTool`); the refusal's wording
 * as the API returns it.
 *
 * @module
 */

import { asArray, isObject, type Json } from "./_json.ts";
import { refusesComputerTool, type SimulatedModel } from "./model_facts.ts";
import { BadRequestError } from "./request_flow.ts";

/** The Responses API's computer tool types. */
const COMPUTER_TOOLS: ReadonlySet<unknown> = new Set([
  "computer",
  "computer_use_preview",
]);

/**
 * Refuses a computer tool the model does not take; a model without facts is
 * not checked.
 *
 * @param body The Responses request body.
 * @param model The model's facts, if the catalog has them.
 * @throws {BadRequestError} With the API's wording.
 */
export function checkComputerTools(
  body: Json,
  model: SimulatedModel | undefined,
): void {
  for (const tool of asArray(body.tools)) {
    if (!isObject(tool) || !COMPUTER_TOOLS.has(tool.type)) continue;
    const type = String(tool.type);
    if (refusesComputerTool(model, type)) {
      throw new BadRequestError(
        `Tool '${type}' is not supported with ${String(body.model)}.`,
        { param: "tools" },
      );
    }
  }
}

/**
 * Refuses a forced `tool_choice` where the model's facts say it refuses one.
 *
 * @param body The chat or Responses request body.
 * @param model The model's facts, if the catalog has them.
 * @throws {BadRequestError} With the API's wording.
 */
export function checkToolChoice(
  body: Json,
  model: SimulatedModel | undefined,
): void {
  if (model?.features?.forcedToolChoice !== false) return;
  const choice = body.tool_choice;
  // `allowed_tools` forces only in its `required` mode; any other object
  // names a tool (a function, the computer tool, …) and forces it.
  const forced = choice === "required"
    ? "required"
    : !isObject(choice) || typeof choice.type !== "string"
    ? undefined
    : choice.type === "allowed_tools"
    ? (choice.mode === "required" ? "required" : undefined)
    : choice.type;
  if (forced === undefined) return;
  throw new BadRequestError(
    `Unsupported value: 'tool_choice' does not support '${forced}' with this model.`,
    { param: "tool_choice", code: "unsupported_value" },
  );
}

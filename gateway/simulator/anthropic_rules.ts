/**
 * What Anthropic's Messages API refuses of a model, from the catalog's facts
 * (`model_facts.ts`), each with the API's 400 `invalid_request_error` and its
 * wording:
 *
 * - A computer-use tool other than the model's: `'claude-opus-5-5' does not
 *   support tool types: computer_20251124.` followed by `Did you mean one
 *   of` and the accepted type.
 * - The model's tool without the `anthropic-beta` it needs: the tool is not
 *   part of the request schema then, so the API answers as for any unknown
 *   tool type, `tools.0: Input tag 'computer_20251124' found using 'type'
 *   does not match any of the expected tags: …`.
 * - `thinking: {type: "disabled"}` where `features.disabledThinking` is
 *   `false`: `"thinking.type.disabled" is not supported for this model. …`.
 * - `tool_choice` `any` / `tool` where `features.forcedToolChoice` is
 *   `false`: `tool_choice: type "tool" and "any" are not supported for this
 *   model.`
 *
 * Sources: the computer use tool page
 * (https://platform.claude.com/docs/en/agents-and-tools/tool-use/computer-use-tool),
 * Claude Opus 5.5's "What's new" and migration guide
 * (https://platform.claude.com/docs/en/models/opus-5-5/whats-new-opus-5-5,
 * https://platform.claude.com/docs/en/models/opus-5-5/migration-guide) and
 * Claude Sonnet 5.5's, which quote these messages, and the official SDK's
 * `ClientToolUnion` (`@anthropic-ai/sdk` 1.12.0) for the GA tool types.
 *
 * @module
 */

import { asArray, isObject, type Json } from "./_json.ts";
import { refusesComputerTool, type SimulatedModel } from "./model_facts.ts";
import { BadRequestError } from "./request_flow.ts";

/** A Claude computer-use tool type: `computer_20250124`, `computer_toolset_20260801`, … */
const COMPUTER_TOOL = /^computer_(?:toolset_)?\d{8}$/;

/**
 * The client tool types the GA request schema accepts (the SDK's
 * `ClientToolUnion`): what the API lists when a type is not one of them.
 */
const GA_CLIENT_TOOL_TAGS = [
  "bash_20250124",
  "browser_toolset_20260801",
  "computer_toolset_20260801",
  "custom",
  "memory_20250818",
  "text_editor_20250124",
  "text_editor_20250429",
  "text_editor_20250728",
];

/**
 * Whether a `tools` entry is one of Claude's computer-use tools.
 *
 * @param tool One entry of `tools`.
 * @returns `true` for `computer_YYYYMMDD` and `computer_toolset_YYYYMMDD`.
 */
export function isClaudeComputerTool(tool: Json): boolean {
  return typeof tool.type === "string" && COMPUTER_TOOL.test(tool.type);
}

/** The `anthropic-beta` values a request carries (comma-separated, possibly repeated). */
function betasOf(headers: Headers): string[] {
  return (headers.get("anthropic-beta") ?? "").split(",").map((beta) =>
    beta.trim()
  ).filter((beta) => beta !== "");
}

function checkComputerTools(
  body: Json,
  headers: Headers,
  model: SimulatedModel,
  modelId: string,
): void {
  for (const [index, tool] of asArray(body.tools).entries()) {
    if (!isObject(tool) || !isClaudeComputerTool(tool)) continue;
    const type = String(tool.type);
    const wanted = model.computerUse;
    if (refusesComputerTool(model, type)) {
      const hint = wanted ? ` Did you mean one of: ${wanted.tool}?` : "";
      throw new BadRequestError(
        `'${modelId}' does not support tool types: ${type}.${hint}`,
      );
    }
    if (wanted?.beta && !betasOf(headers).includes(wanted.beta)) {
      throw new BadRequestError(
        `tools.${index}: Input tag '${type}' found using 'type' does not match any of the expected tags: ${
          GA_CLIENT_TOOL_TAGS.map((tag) => `'${tag}'`).join(", ")
        }`,
      );
    }
  }
}

/**
 * Refuses what the model's facts say the real API refuses; a model without
 * facts is not checked.
 *
 * @param body The Messages request body.
 * @param headers The request's headers (`anthropic-beta`).
 * @param model The model's facts, if the catalog has them.
 * @throws {BadRequestError} With the API's wording, for the first rule broken.
 */
export function checkAnthropicRules(
  body: Json,
  headers: Headers,
  model: SimulatedModel | undefined,
): void {
  if (model === undefined) return;
  const modelId = String(body.model);
  checkComputerTools(body, headers, model, modelId);
  const features = model.features ?? {};
  const thinking = isObject(body.thinking) ? body.thinking : {};
  if (thinking.type === "disabled" && features.disabledThinking === false) {
    // Claude Opus 5.5's wording. Sonnet 5.5's adds that `between_tools` is
    // its lowest setting; the catalog has no fact for that thinking type, so
    // every model gets the common form (the same leading sentence).
    throw new BadRequestError(
      '"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
    );
  }
  const choice = isObject(body.tool_choice) ? body.tool_choice : {};
  if (
    (choice.type === "any" || choice.type === "tool") &&
    features.forcedToolChoice === false
  ) {
    throw new BadRequestError(
      'tool_choice: type "tool" and "any" are not supported for this model.',
    );
  }
}

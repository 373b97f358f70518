/**
 * What a Responses request says, read into a {@linkcode Prompt}: its own
 * `input` items after the stored conversation behind
 * `previous_response_id`, the tools it declares (function tools and the
 * computer tools) and the computer-use episode so far.
 *
 * @module
 */

import { asArray, isObject, type Json } from "./_json.ts";
import { givesInstructions, planComputerUse } from "./computer_use.ts";
import { BadRequestError, type RequestContext } from "./request_flow.ts";
import {
  contentText,
  measureContent,
  openaiOutputFormat,
  optionalLimit,
  requireModel,
} from "./openai.ts";
import {
  checkAcknowledgement,
  type ComputerHistory,
  computerToolOf,
  readComputerItem,
  type ResponsesComputerTool,
} from "./openai_responses_computer.ts";
import {
  type Prompt,
  PromptMeter,
  scriptOf,
  type ToolDeclaration,
} from "./reply.ts";

/** A Responses request reduced to what decides the reply. */
export interface ResponsesInput {
  /** What decides the reply. */
  prompt: Prompt;
  /** The model named. */
  model: string;
}

interface ResponsesTools {
  tools: ToolDeclaration[];
  /** The computer tool declared; `null` when none is. */
  computer: ResponsesComputerTool | null;
}

function responsesTools(body: Json, meter: PromptMeter): ResponsesTools {
  const tools: ToolDeclaration[] = [];
  let computer: ResponsesTools["computer"] = null;
  for (const tool of asArray(body.tools)) {
    if (!isObject(tool)) {
      throw new BadRequestError("Invalid 'tools': each tool must be an object");
    }
    meter.json(tool);
    if (tool.type === "function" && typeof tool.name === "string") {
      tools.push({ name: tool.name, schema: tool.parameters });
    }
    computer ??= computerToolOf(tool);
  }
  return { tools, computer };
}

/**
 * The request's own input as items: a string is one user message.
 *
 * @param body The request body.
 * @returns The items.
 * @throws {BadRequestError} When `input` is missing or holds a non-object.
 */
export function inputItems(body: Json): Json[] {
  if (typeof body.input === "string") {
    return [{ type: "message", role: "user", content: body.input }];
  }
  if (!Array.isArray(body.input)) {
    throw new BadRequestError("Missing required parameter: 'input'");
  }
  for (const item of body.input) {
    if (!isObject(item)) {
      throw new BadRequestError(
        "Invalid 'input': each item must be an object",
      );
    }
  }
  return body.input as Json[];
}

/**
 * The conversation before this request: the stored chain that ends at
 * `previous_response_id`, if the caller's organization has it.
 *
 * @throws {BadRequestError} OpenAI's 400 `previous_response_not_found` for an
 * id this organization never stored (or that was created with `store: false`,
 * or forgotten), worded as the API words it.
 *
 * @param body The request body.
 * @param context The caller (its key is its organization) and the store.
 * @returns The stored items, oldest first; none without `previous_response_id`.
 */
export function previousItems(body: Json, context: RequestContext): Json[] {
  const previous = body.previous_response_id;
  if (previous === undefined || previous === null) return [];
  const id = String(previous);
  const history = context.responses.history(context.key, id);
  if (history === undefined) {
    throw new BadRequestError(
      `Previous response with id '${id}' not found.`,
      { param: "previous_response_id", code: "previous_response_not_found" },
    );
  }
  return history;
}

/**
 * Reads a request and its conversation into a prompt.
 *
 * @param body The request body.
 * @param items The whole conversation: stored items, then the request's own.
 * @returns The prompt and the model.
 * @throws {BadRequestError} For what the API would refuse (a bad limit or format, an unacknowledged safety check).
 */
export function parseResponses(
  body: Json,
  items: readonly Json[],
): ResponsesInput {
  const model = requireModel(body);
  const meter = new PromptMeter("openai");
  meter.text(body.instructions);
  let lastUserText = "";
  let firstUserText: string | undefined;
  let planText: string | undefined;
  let toolResult: Prompt["toolResult"];
  const history: ComputerHistory = {
    callIds: [],
    firstActions: [],
    actions: 0,
    acknowledged: new Map(),
  };
  const calledTools: string[] = [];
  const callNames = new Map<string, string>();
  for (const item of items) {
    toolResult = undefined;
    if (readComputerItem(item, history, meter)) continue;
    if (item.type === "function_call") {
      meter.text(item.name);
      meter.text(item.arguments);
      if (typeof item.name === "string") calledTools.push(item.name);
      if (typeof item.call_id === "string" && typeof item.name === "string") {
        callNames.set(item.call_id, item.name);
      }
    } else if (item.type === "function_call_output") {
      const text = typeof item.output === "string"
        ? item.output
        : contentText(item.output);
      meter.text(text);
      toolResult = { name: callNames.get(String(item.call_id)), text };
    } else if (item.type === "reasoning") {
      meter.json(item.summary);
    } else {
      measureContent(meter, item.content);
      if (item.role === "user") {
        lastUserText = contentText(item.content);
        firstUserText ??= lastUserText;
        if (planText === undefined && givesInstructions(lastUserText)) {
          planText = lastUserText;
        }
      }
    }
  }
  const { tools, computer } = responsesTools(body, meter);
  const plan = computer === null
    ? undefined
    : planComputerUse(planText ?? "", computer.screen, "responses");
  if (plan) checkAcknowledgement(plan, history);
  const outputFormat = openaiOutputFormat(
    isObject(body.text) ? body.text.format : undefined,
    "text.format",
    meter,
  );
  const choice = body.tool_choice;
  const forcedTool = choice === "required"
    ? tools[0]?.name
    : isObject(choice) && choice.type === "function" &&
        typeof choice.name === "string"
    ? choice.name
    : undefined;
  return {
    model,
    prompt: {
      ...meter.size(),
      lastUserText,
      toolResult,
      tools,
      forcedTool,
      toolsDisabled: choice === "none",
      maxOutputTokens: optionalLimit(
        body.max_output_tokens,
        "max_output_tokens",
      ),
      script: scriptOf(firstUserText ?? "", tools),
      calledTools,
      outputFormat,
      computer: plan && {
        plan,
        done: history.actions,
        batched: computer?.batched,
      },
    },
  };
}

/**
 * OpenAI chat completions (`POST /chat/completions`), as the simulator speaks
 * it, streamed and not; also xAI's, OpenRouter's and Gemini's
 * OpenAI-compatible endpoint (which bills images as Gemini does).
 *
 * The computer-use agent plays when a function named `computer` is declared:
 * its calls carry the MCP `computer` tool's input (`{"action": "click", "x",
 * "y"}`, `{"action": "type", "text"}`, `{"action": "key", "keys":
 * ["Return"]}`, `{"action": "screenshot"}`), and screenshots come back as
 * image parts.
 *
 * @module
 */

import { asArray, isObject, type Json } from "./_json.ts";
import {
  type ComputerAction,
  givesInstructions,
  planComputerUse,
  spellKey,
} from "./computer_use.ts";
import {
  BadRequestError,
  type Dialect,
  type ParsedRequest,
  type RequestContext,
} from "./request_flow.ts";
import { checkToolChoice } from "./openai_rules.ts";
import type { SimulatedEvent } from "./answers.ts";
import type { ImageBilling } from "./image.ts";
import {
  contentText,
  measureContent,
  openaiOutputFormat,
  openaiWire,
  optionalLimit,
  requireModel,
  usageNumbers,
} from "./openai.ts";
import {
  type Prompt,
  PromptMeter,
  type Reply,
  type ReplyContent,
  scriptOf,
  type ToolDeclaration,
} from "./reply.ts";
import { splitEvenly, splitText } from "./tokens.ts";

/** The name of the function the computer-use agent calls. */
const COMPUTER = "computer";

/**
 * The MCP `computer` tool's input for an action (the contract's chat shape).
 *
 * @param action The action.
 * @returns The arguments.
 */
export function computerArguments(action: ComputerAction): Json {
  switch (action.type) {
    // The chat function has no zoom, so no plan for it holds one.
    case "zoom":
    case "screenshot":
      return { action: "screenshot" };
    case "click":
    case "double_click":
      return { action: action.type, x: action.x, y: action.y };
    case "type":
      return { action: "type", text: action.text };
    case "key":
      return {
        action: "key",
        keys: action.keys.map((key) => spellKey(key, "xdotool")),
      };
  }
}

/** A computer action as the function call chat carries; other content unchanged. */
function asChatContent(
  content: ReplyContent,
): Exclude<ReplyContent, { kind: "computer" }> {
  if (content.kind !== "computer") return content;
  return {
    kind: "tool",
    name: COMPUTER,
    arguments: JSON.stringify(computerArguments(content.action)),
  };
}

function chatTools(body: Json, meter: PromptMeter): ToolDeclaration[] {
  const tools: ToolDeclaration[] = [];
  for (const tool of asArray(body.tools)) {
    if (
      !isObject(tool) || !isObject(tool.function) ||
      typeof tool.function.name !== "string"
    ) {
      throw new BadRequestError(
        "Invalid 'tools': each tool needs a 'function' with a 'name'",
      );
    }
    meter.json(tool);
    tools.push({ name: tool.function.name, schema: tool.function.parameters });
  }
  return tools;
}

function chatForcedTool(
  choice: unknown,
  tools: ToolDeclaration[],
): { forced?: string; disabled: boolean } {
  if (choice === "none") return { disabled: true };
  if (choice === "required") return { forced: tools[0]?.name, disabled: false };
  if (
    isObject(choice) && isObject(choice.function) &&
    typeof choice.function.name === "string"
  ) {
    return { forced: choice.function.name, disabled: false };
  }
  return { disabled: false };
}

function parseChat(
  body: Json,
  billing: ImageBilling,
): { prompt: Prompt; includeUsage: boolean; model: string } {
  const model = requireModel(body);
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    throw new BadRequestError("Missing required parameter: 'messages'");
  }
  const meter = new PromptMeter(billing);
  const toolNames = new Map<string, string>();
  let computerCalls = 0;
  let lastUserText = "";
  let firstUserText: string | undefined;
  let planText: string | undefined;
  for (const message of body.messages) {
    if (!isObject(message) || typeof message.role !== "string") {
      throw new BadRequestError(
        "Invalid 'messages': each message needs a 'role'",
      );
    }
    measureContent(meter, message.content);
    for (const call of asArray(message.tool_calls)) {
      if (!isObject(call) || !isObject(call.function)) continue;
      meter.text(call.function.name);
      meter.text(call.function.arguments);
      if (
        typeof call.id === "string" && typeof call.function.name === "string"
      ) toolNames.set(call.id, call.function.name);
      if (call.function.name === COMPUTER) computerCalls += 1;
    }
    if (message.role === "user") {
      lastUserText = contentText(message.content);
      firstUserText ??= lastUserText;
      if (planText === undefined && givesInstructions(lastUserText)) {
        planText = lastUserText;
      }
    }
  }
  const last = body.messages[body.messages.length - 1] as Json;
  const toolResult = last.role === "tool"
    ? {
      name: toolNames.get(String(last.tool_call_id)),
      text: contentText(last.content),
    }
    : undefined;
  const tools = chatTools(body, meter);
  const choice = chatForcedTool(body.tool_choice, tools);
  const maxOutputTokens =
    optionalLimit(body.max_completion_tokens, "max_completion_tokens") ??
      optionalLimit(body.max_tokens, "max_tokens");
  const outputFormat = openaiOutputFormat(
    body.response_format,
    "response_format",
    meter,
  );
  const plan = tools.some((tool) => tool.name === COMPUTER)
    ? planComputerUse(planText ?? "", undefined, "chat")
    : undefined;
  const streamOptions = isObject(body.stream_options)
    ? body.stream_options
    : {};
  return {
    model,
    includeUsage: streamOptions.include_usage === true,
    prompt: {
      ...meter.size(),
      lastUserText,
      toolResult,
      tools,
      forcedTool: choice.forced,
      toolsDisabled: choice.disabled,
      maxOutputTokens,
      script: scriptOf(firstUserText ?? "", tools),
      calledTools: [...toolNames.values()],
      outputFormat,
      computer: plan && { plan, done: computerCalls },
    },
  };
}

function chatUsage(reply: Reply): Json {
  const { input, output, cached } = usageNumbers(reply);
  return {
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: input + output,
    prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

const CHAT_FINISH: Record<Reply["stop"], string> = {
  end: "stop",
  length: "length",
  tool: "tool_calls",
};

function chatRequest(
  body: Json,
  billing: ImageBilling,
  context: RequestContext,
): ParsedRequest {
  checkToolChoice(body, context.model(requireModel(body)));
  const { prompt, includeUsage, model } = parseChat(body, billing);
  const created = Math.floor(Date.now() / 1000);
  return {
    prompt,
    stream: body.stream === true,
    body(reply, id) {
      const content = asChatContent(reply.content);
      const message: Json = content.kind === "text"
        ? {
          role: "assistant",
          content: content.text,
          refusal: null,
          annotations: [],
        }
        : {
          role: "assistant",
          content: null,
          refusal: null,
          annotations: [],
          tool_calls: [{
            id: `call_${id}`,
            type: "function",
            function: { name: content.name, arguments: content.arguments },
          }],
        };
      return {
        id: `chatcmpl-${id}`,
        object: "chat.completion",
        created,
        model,
        choices: [{
          index: 0,
          message,
          logprobs: null,
          finish_reason: CHAT_FINISH[reply.stop],
        }],
        usage: chatUsage(reply),
        service_tier: "default",
        system_fingerprint: "fp_simulator",
      };
    },
    events(reply, id) {
      const base = {
        id: `chatcmpl-${id}`,
        object: "chat.completion.chunk",
        created,
        model,
        service_tier: "default",
        system_fingerprint: "fp_simulator",
      };
      const chunk = (
        delta: Json,
        finish: string | null = null,
      ): SimulatedEvent => ({
        data: JSON.stringify({
          ...base,
          choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
          ...(includeUsage ? { usage: null } : {}),
        }),
      });
      const events: SimulatedEvent[] = [];
      const content = asChatContent(reply.content);
      if (content.kind === "text") {
        events.push(chunk({ role: "assistant", content: "", refusal: null }));
        for (const piece of splitText(content.text)) {
          events.push(chunk({ content: piece }));
        }
      } else {
        events.push(chunk({
          role: "assistant",
          content: null,
          tool_calls: [{
            index: 0,
            id: `call_${id}`,
            type: "function",
            function: { name: content.name, arguments: "" },
          }],
        }));
        for (const piece of splitEvenly(content.arguments, 4)) {
          events.push(
            chunk({
              tool_calls: [{ index: 0, function: { arguments: piece } }],
            }),
          );
        }
      }
      events.push(chunk({}, CHAT_FINISH[reply.stop]));
      if (includeUsage) {
        events.push({
          data: JSON.stringify({
            ...base,
            choices: [],
            usage: chatUsage(reply),
          }),
        });
      }
      events.push({ data: "[DONE]" });
      return events;
    },
  };
}

/** The chat completions endpoint (`POST /chat/completions`), billing images as OpenAI does. */
export const chatCompletions: Dialect = {
  wire: openaiWire,
  parse: (body, _url, context) => chatRequest(body as Json, "openai", context),
};

/** Gemini's OpenAI-compatible chat completions endpoint, billing images as Gemini does. */
export const geminiChatCompletions: Dialect = {
  wire: openaiWire,
  parse: (body, _url, context) => chatRequest(body as Json, "gemini", context),
};

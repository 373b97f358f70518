/**
 * OpenAI's wire format, as the simulator speaks it: chat completions
 * (`POST /chat/completions`) and Responses (`POST /responses`), streamed and
 * not. xAI and OpenRouter speak the same format; so does Gemini's
 * OpenAI-compatible endpoint.
 *
 * Keys come from `Authorization: Bearer <key>`; errors are
 * `{error: {message, type, param, code}}`.
 *
 * @module
 */

import { asArray, isObject, type Json } from "./_json.ts";
import {
  BadRequestError,
  type Dialect,
  type Exchange,
  type SseEvent,
  type Wire,
} from "./exchange.ts";
import {
  type OutputFormat,
  type Prompt,
  PromptMeter,
  type Reply,
  scriptOf,
  type ToolDeclaration,
} from "./reply.ts";
import { splitEvenly, splitText } from "./tokens.ts";

const ERROR_KINDS: Record<
  number,
  { type: string; code: string | null; message: string }
> = {
  400: {
    type: "invalid_request_error",
    code: null,
    message: "Invalid request",
  },
  401: {
    type: "invalid_request_error",
    code: "invalid_api_key",
    message: "Incorrect API key provided",
  },
  403: {
    type: "invalid_request_error",
    code: "unsupported_country_region_territory",
    message: "Country, region, or territory not supported",
  },
  404: {
    type: "invalid_request_error",
    code: "model_not_found",
    message: "The model does not exist or you do not have access to it",
  },
  429: {
    type: "requests",
    code: "rate_limit_exceeded",
    message: "Rate limit reached for requests",
  },
  500: {
    type: "server_error",
    code: null,
    message: "The server had an error while processing your request",
  },
  503: {
    type: "server_error",
    code: null,
    message: "The engine is currently overloaded, please try again later",
  },
};

/** OpenAI's HTTP conventions (also xAI's and OpenRouter's). */
export const openaiWire: Wire = {
  readKey(request) {
    const header = request.headers.get("authorization");
    const match = header?.match(/^Bearer\s+(.+)$/i);
    return match ? match[1].trim() : undefined;
  },
  errorBody(status, message) {
    const kind = ERROR_KINDS[status] ??
      (status >= 500 ? ERROR_KINDS[500] : ERROR_KINDS[400]);
    return {
      error: {
        message: message ?? kind.message,
        type: kind.type,
        param: null,
        code: kind.code,
      },
    };
  },
  missingKeyMessage:
    "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)",
  invalidKeyMessage: "Incorrect API key provided",
  eventDelimiter: "\n\n",
};

function requireModel(body: Json): string {
  if (typeof body.model !== "string" || body.model === "") {
    throw new BadRequestError("you must provide a model parameter");
  }
  return body.model;
}

function optionalLimit(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new BadRequestError(
      `Invalid '${name}': expected an integer greater than or equal to 1, got "${value}"`,
    );
  }
  return value;
}

/** Text of a content value: a string, or an array of parts with `text`. */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  return asArray(content).map((
    part,
  ) => (isObject(part) && typeof part.text === "string" ? part.text : "")).join(
    "",
  );
}

function measureContent(meter: PromptMeter, content: unknown): void {
  if (typeof content === "string") return meter.text(content);
  for (const part of asArray(content)) {
    if (!isObject(part)) continue;
    meter.text(part.text);
    if (part.type === "image_url" || part.type === "input_image") meter.image();
    if (
      part.type === "input_audio" || part.type === "file" ||
      part.type === "input_file"
    ) meter.json(part);
  }
}

function usageNumbers(reply: Reply) {
  return {
    input: reply.inputTokens,
    output: reply.outputTokens,
    cached: reply.cachedTokens,
  };
}

const FORMAT_TYPES =
  "Supported values are: 'text', 'json_object', and 'json_schema'.";

/**
 * The structured output a `format` object asks for: chat's `response_format`
 * (the schema under `json_schema`) or Responses' `text.format` (the schema beside `type`).
 */
function openaiOutputFormat(
  format: unknown,
  where: string,
  meter: PromptMeter,
): OutputFormat | undefined {
  if (format === undefined || format === null) return undefined;
  if (!isObject(format)) {
    throw new BadRequestError(
      `Invalid type for '${where}': expected an object`,
    );
  }
  meter.json(format);
  switch (format.type) {
    case "text":
      return undefined;
    case "json_object":
      return { kind: "json" };
    case "json_schema": {
      const holder = where === "response_format" ? format.json_schema : format;
      if (!isObject(holder)) {
        throw new BadRequestError(
          `Missing required parameter: '${where}.json_schema'.`,
        );
      }
      if (typeof holder.name !== "string" || holder.name === "") {
        const path = where === "response_format"
          ? `${where}.json_schema`
          : where;
        throw new BadRequestError(
          `Missing required parameter: '${path}.name'.`,
        );
      }
      return { kind: "json", schema: holder.schema ?? {} };
    }
    default:
      throw new BadRequestError(
        `Invalid value: '${String(format.type)}'. ${FORMAT_TYPES}`,
      );
  }
}

// ---------------------------------------------------------------- chat completions

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
): { prompt: Prompt; includeUsage: boolean; model: string } {
  const model = requireModel(body);
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    throw new BadRequestError("Missing required parameter: 'messages'");
  }
  const meter = new PromptMeter();
  const toolNames = new Map<string, string>();
  let lastUserText = "";
  let firstUserText: string | undefined;
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
    }
    if (message.role === "user") {
      lastUserText = contentText(message.content);
      firstUserText ??= lastUserText;
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
  const streamOptions = isObject(body.stream_options)
    ? body.stream_options
    : {};
  return {
    model,
    includeUsage: streamOptions.include_usage === true,
    prompt: {
      chars: meter.chars,
      images: meter.images,
      lastUserText,
      toolResult,
      tools,
      forcedTool: choice.forced,
      toolsDisabled: choice.disabled,
      maxOutputTokens,
      script: scriptOf(firstUserText ?? "", tools),
      calledTools: [...toolNames.values()],
      outputFormat,
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

function chatExchange(body: Json): Exchange {
  const { prompt, includeUsage, model } = parseChat(body);
  const created = Math.floor(Date.now() / 1000);
  return {
    prompt,
    stream: body.stream === true,
    body(reply, id) {
      const { content } = reply;
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
      const chunk = (delta: Json, finish: string | null = null): SseEvent => ({
        data: JSON.stringify({
          ...base,
          choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
          ...(includeUsage ? { usage: null } : {}),
        }),
      });
      const events: SseEvent[] = [];
      const { content } = reply;
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

/** The chat completions endpoint (`POST /chat/completions`). */
export const chatCompletions: Dialect = {
  wire: openaiWire,
  parse: (body) => chatExchange(body as Json),
};

// ---------------------------------------------------------------- responses

interface ResponsesInput {
  prompt: Prompt;
  model: string;
}

function responsesTools(body: Json, meter: PromptMeter): ToolDeclaration[] {
  const tools: ToolDeclaration[] = [];
  for (const tool of asArray(body.tools)) {
    if (!isObject(tool)) {
      throw new BadRequestError("Invalid 'tools': each tool must be an object");
    }
    meter.json(tool);
    if (tool.type === "function" && typeof tool.name === "string") {
      tools.push({ name: tool.name, schema: tool.parameters });
    }
  }
  return tools;
}

function parseResponses(body: Json): ResponsesInput {
  const model = requireModel(body);
  const meter = new PromptMeter();
  meter.text(body.instructions);
  let lastUserText = "";
  let toolResult: Prompt["toolResult"];
  if (typeof body.input === "string") {
    meter.text(body.input);
    lastUserText = body.input;
  } else if (Array.isArray(body.input)) {
    const callNames = new Map<string, string>();
    for (const item of body.input) {
      if (!isObject(item)) {
        throw new BadRequestError(
          "Invalid 'input': each item must be an object",
        );
      }
      toolResult = undefined;
      if (item.type === "function_call") {
        meter.text(item.name);
        meter.text(item.arguments);
        if (typeof item.call_id === "string" && typeof item.name === "string") {
          callNames.set(item.call_id, item.name);
        }
      } else if (item.type === "function_call_output") {
        const text = typeof item.output === "string"
          ? item.output
          : contentText(item.output);
        meter.text(text);
        toolResult = { name: callNames.get(String(item.call_id)), text };
      } else {
        measureContent(meter, item.content);
        if (item.role === "user") lastUserText = contentText(item.content);
      }
    }
  } else {
    throw new BadRequestError("Missing required parameter: 'input'");
  }
  const tools = responsesTools(body, meter);
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
      chars: meter.chars,
      images: meter.images,
      lastUserText,
      toolResult,
      tools,
      forcedTool,
      toolsDisabled: choice === "none",
      maxOutputTokens: optionalLimit(
        body.max_output_tokens,
        "max_output_tokens",
      ),
      outputFormat,
    },
  };
}

function responsesUsage(reply: Reply): Json {
  const { input, output, cached } = usageNumbers(reply);
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: cached },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + output,
  };
}

function responsesExchange(body: Json): Exchange {
  const { prompt, model } = parseResponses(body);
  const createdAt = Math.floor(Date.now() / 1000);
  const envelope = (
    id: string,
    status: string,
    output: Json[],
    reply?: Reply,
  ): Json => ({
    id: `resp_${id}`,
    object: "response",
    created_at: createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: status === "incomplete"
      ? { reason: "max_output_tokens" }
      : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: null,
    model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: null, summary: null },
    service_tier: "default",
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: "text" }, verbosity: "medium" },
    tool_choice: body.tool_choice ?? "auto",
    tools: body.tools ?? [],
    top_logprobs: 0,
    top_p: body.top_p ?? 1,
    truncation: "disabled",
    usage: reply ? responsesUsage(reply) : null,
    user: null,
    metadata: body.metadata ?? {},
  });
  const finalStatus = (
    reply: Reply,
  ) => (reply.stop === "length" ? "incomplete" : "completed");
  const outputItem = (reply: Reply, id: string, done: boolean): Json => {
    const { content } = reply;
    const status = done ? "completed" : "in_progress";
    if (content.kind === "tool") {
      return {
        id: `fc_${id}`,
        type: "function_call",
        status,
        arguments: done ? content.arguments : "",
        call_id: `call_${id}`,
        name: content.name,
      };
    }
    return {
      id: `msg_${id}`,
      type: "message",
      status: done
        ? (reply.stop === "length" ? "incomplete" : "completed")
        : status,
      content: done
        ? [{
          type: "output_text",
          annotations: [],
          logprobs: [],
          text: content.text,
        }]
        : [],
      role: "assistant",
    };
  };
  return {
    prompt,
    stream: body.stream === true,
    body: (reply, id) =>
      envelope(id, finalStatus(reply), [outputItem(reply, id, true)], reply),
    events(reply, id) {
      const events: SseEvent[] = [];
      const push = (type: string, fields: Json) => {
        events.push({
          event: type,
          data: JSON.stringify({
            type,
            sequence_number: events.length,
            ...fields,
          }),
        });
      };
      push("response.created", { response: envelope(id, "in_progress", []) });
      push("response.in_progress", {
        response: envelope(id, "in_progress", []),
      });
      push("response.output_item.added", {
        output_index: 0,
        item: outputItem(reply, id, false),
      });
      const { content } = reply;
      if (content.kind === "tool") {
        const itemId = `fc_${id}`;
        for (const delta of splitEvenly(content.arguments, 4)) {
          push("response.function_call_arguments.delta", {
            item_id: itemId,
            output_index: 0,
            delta,
          });
        }
        push("response.function_call_arguments.done", {
          item_id: itemId,
          output_index: 0,
          name: content.name,
          arguments: content.arguments,
        });
      } else {
        const itemId = `msg_${id}`;
        const where = { item_id: itemId, output_index: 0, content_index: 0 };
        push("response.content_part.added", {
          ...where,
          part: {
            type: "output_text",
            annotations: [],
            logprobs: [],
            text: "",
          },
        });
        for (const delta of splitText(content.text)) {
          push("response.output_text.delta", { ...where, delta, logprobs: [] });
        }
        push("response.output_text.done", {
          ...where,
          text: content.text,
          logprobs: [],
        });
        push("response.content_part.done", {
          ...where,
          part: {
            type: "output_text",
            annotations: [],
            logprobs: [],
            text: content.text,
          },
        });
      }
      const item = outputItem(reply, id, true);
      push("response.output_item.done", { output_index: 0, item });
      const status = finalStatus(reply);
      push(`response.${status}`, {
        response: envelope(id, status, [item], reply),
      });
      return events;
    },
  };
}

/** The Responses endpoint (`POST /responses`). */
export const responses: Dialect = {
  wire: openaiWire,
  parse: (body) => responsesExchange(body as Json),
};

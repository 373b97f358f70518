/**
 * Translation of an OpenAI Chat Completions request (the gateway's `chat`
 * route) into an Anthropic Messages request, with Anthropic's request types.
 * The answer's way back is in `chat_anthropic_response.ts` (a whole message,
 * usage, errors) and `chat_anthropic_stream.ts` (a stream). Pure functions,
 * no I/O.
 *
 * @module
 */

import {
  type AnthropicModelRules,
  type AnthropicThinkingBlock,
  checkModelRules,
  withThinking,
} from "./_anthropic_thinking.ts";
import { checkChatFields } from "./_chat_fields.ts";
import { targetSchema, withDescription } from "./_json_schema.ts";
import {
  type FunctionToolChoice,
  functionTools,
  isHttpUrl,
  maxOutputTokens,
  parseArguments,
  parseDataUrl,
  requireSingleChoice,
  stopSequences,
  textOf,
  toolNamesById,
} from "./_shared.ts";
import {
  type ChatRequest,
  type ChatTool,
  type ChatUserPart,
  TranslationError,
} from "./chat_types.ts";

/** An Anthropic text block. */
export interface AnthropicTextBlock {
  /** Block kind. */
  type: "text";
  /** The text. */
  text: string;
}

/** An Anthropic image or PDF source: inline base64, or a URL Anthropic fetches. */
export type AnthropicSource =
  | { type: "base64"; media_type: string; data: string }
  | { type: "url"; url: string };

/** A content block Anthropic accepts in a request message. */
export type AnthropicRequestBlock =
  | AnthropicTextBlock
  | { type: "image"; source: AnthropicSource }
  | { type: "document"; source: AnthropicSource; title?: string }
  | {
    type: "tool_use";
    id: string;
    name: string;
    input: Record<string, unknown>;
  }
  | {
    type: "tool_result";
    tool_use_id: string;
    content: string | AnthropicTextBlock[];
  }
  | AnthropicThinkingBlock;

/** One turn of an Anthropic conversation. */
export interface AnthropicMessage {
  /** Who speaks; turns alternate. */
  role: "user" | "assistant";
  /** Text, or blocks. */
  content: string | AnthropicRequestBlock[];
}

/** An Anthropic tool definition. */
export interface AnthropicTool {
  /** Tool name. */
  name: string;
  /** What it does. */
  description?: string;
  /** JSON schema of the input object. */
  input_schema: Record<string, unknown>;
  /** Constrain the call's input to the schema (structured outputs' strict tool use). */
  strict?: boolean;
}

/** Anthropic's `tool_choice`. */
export type AnthropicToolChoice =
  | { type: "auto" | "any"; disable_parallel_tool_use?: boolean }
  | { type: "tool"; name: string; disable_parallel_tool_use?: boolean }
  | { type: "none" };

/** The body of `POST /v1/messages`. */
export interface AnthropicRequest {
  /** Upstream model id. */
  model: string;
  /** Output token cap (required by Anthropic). */
  max_tokens: number;
  /** The conversation, alternating roles. */
  messages: AnthropicMessage[];
  /** System prompt. */
  system?: string | AnthropicTextBlock[];
  /** Sampling temperature, 0 to 1. */
  temperature?: number;
  /** Nucleus sampling. */
  top_p?: number;
  /** Stop sequences. */
  stop_sequences?: string[];
  /** Stream the answer. */
  stream?: boolean;
  /** Tools the model may call. */
  tools?: AnthropicTool[];
  /** How the model may use tools. */
  tool_choice?: AnthropicToolChoice;
  /** End-user id. */
  metadata?: { user_id: string };
  /** Structured output: the answer's text is JSON matching the schema. */
  output_config?: {
    format: { type: "json_schema"; schema: Record<string, unknown> };
  };
}

const imageMediaTypes = new Set([
  "image/jpeg",
  "image/png",
  "image/gif",
  "image/webp",
]);

/**
 * Translates a chat request into an Anthropic Messages request.
 *
 * `system` and `developer` messages, wherever they are, become the top-level
 * `system`; `tool` messages become `tool_result` blocks in a user turn; turns of
 * the same role are merged, since Anthropic wants them alternating.
 * `response_format` with a JSON schema becomes `output_config.format` (the
 * answer comes back as the message's JSON text). An assistant message's
 * `reasoning_details` go back as its thinking blocks, where they were. Every
 * other field is translated or refused as `_chat_fields.ts` records, and
 * what the model's catalog entry says it refuses is refused here, naming
 * the rule.
 *
 * @param chat The validated chat request.
 * @param upstreamModel The model id Anthropic knows.
 * @param defaultMaxTokens The cap to send when the caller gave none (Anthropic requires one).
 * @param rules The model's catalog id and the features it refuses; absent: none refused.
 * @returns The Messages request body.
 * @throws {TranslationError} When the request holds something Anthropic cannot take.
 *
 * @example Translate a short request
 * ```ts
 * import { toAnthropicRequest } from "./chat_anthropic.ts";
 * const body = toAnthropicRequest(
 *   { model: "claude-haiku-4-5", messages: [{ role: "system", content: "Be brief" }, { role: "user", content: "Hi" }] },
 *   "claude-haiku-4-5",
 *   1024,
 * );
 * console.log(body.system); // "Be brief"
 * ```
 */
export function toAnthropicRequest(
  chat: ChatRequest,
  upstreamModel: string,
  defaultMaxTokens: number,
  rules?: AnthropicModelRules,
): AnthropicRequest {
  checkChatFields(chat, "anthropic");
  requireSingleChoice(chat);
  const { tools, choice } = functionTools(chat);
  checkModelRules(chat, tools.length > 0 ? choice : undefined, rules);
  const request: AnthropicRequest = {
    model: upstreamModel,
    max_tokens: maxOutputTokens(chat) ?? defaultMaxTokens,
    messages: anthropicMessages(chat),
  };
  const system = anthropicSystem(chat);
  if (system !== undefined) request.system = system;
  Object.assign(request, anthropicSampling(chat));
  const stop = stopSequences(chat.stop);
  if (stop) request.stop_sequences = stop;
  if (chat.stream) request.stream = true;
  const userId = chat.safety_identifier ?? chat.user;
  if (userId) request.metadata = { user_id: userId };
  if (tools.length > 0) {
    request.tools = tools.map(({ tool, index }) => anthropicTool(tool, index));
    const toolChoice = anthropicToolChoice(choice, chat.parallel_tool_calls);
    if (toolChoice) request.tool_choice = toolChoice;
  }
  const format = anthropicOutputFormat(chat);
  if (format) request.output_config = { format };
  return request;
}

/**
 * Temperature and top_p. Anthropic takes temperature 0 to 1 (OpenAI 0 to 2),
 * and recent Claude models refuse it beside top_p; a value Anthropic cannot
 * take is refused rather than changed, except top_p 1, which samples from
 * the whole distribution and so changes nothing.
 */
function anthropicSampling(
  chat: ChatRequest,
): Pick<AnthropicRequest, "temperature" | "top_p"> {
  const sampling: Pick<AnthropicRequest, "temperature" | "top_p"> = {};
  if (chat.temperature != null) {
    if (chat.temperature > 1) {
      throw new TranslationError(
        `Cannot use "temperature" ${chat.temperature} with this model: Anthropic takes 0 to 1`,
        "temperature",
      );
    }
    sampling.temperature = chat.temperature;
  }
  if (chat.top_p != null && chat.top_p !== 1) {
    if (chat.temperature != null) {
      throw new TranslationError(
        'Cannot use "top_p" beside "temperature" with this model: Anthropic takes one of them',
        "top_p",
      );
    }
    sampling.top_p = chat.top_p;
  }
  return sampling;
}

function anthropicTool(tool: ChatTool, i: number): AnthropicTool {
  const parameters = tool.function.parameters ??
    { type: "object", properties: {} };
  const strict = tool.function.strict === true;
  return {
    name: tool.function.name,
    ...(tool.function.description
      ? { description: tool.function.description }
      : {}),
    input_schema: strict
      ? targetSchema(parameters, "anthropic", `tools[${i}].function.parameters`)
      : parameters,
    ...(strict ? { strict: true } : {}),
  };
}

/** `response_format` as Anthropic's `output_config.format`, or nothing for text. */
function anthropicOutputFormat(
  chat: ChatRequest,
): NonNullable<AnthropicRequest["output_config"]>["format"] | undefined {
  const format = chat.response_format;
  if (!format || format.type === "text") return undefined;
  if (format.type === "json_object") {
    throw new TranslationError(
      'Cannot use response_format "json_object" with this model: Anthropic only constrains output to a JSON schema; send response_format "json_schema"',
      "response_format.type",
    );
  }
  const { schema, description } = format.json_schema;
  if (!schema) {
    throw new TranslationError(
      "Cannot use response_format json_schema without a schema with this model: Anthropic needs one",
      "response_format.json_schema.schema",
    );
  }
  return {
    type: "json_schema",
    schema: withDescription(
      targetSchema(schema, "anthropic", "response_format.json_schema.schema"),
      description,
    ),
  };
}

function anthropicSystem(
  chat: ChatRequest,
): string | AnthropicTextBlock[] | undefined {
  const texts = chat.messages.flatMap((message) =>
    message.role === "system" || message.role === "developer"
      ? [textOf(message.content)]
      : []
  ).filter((text) => text.length > 0);
  if (texts.length === 0) return undefined;
  if (texts.length === 1) return texts[0];
  return texts.map((text) => ({ type: "text", text }));
}

function anthropicToolChoice(
  choice: FunctionToolChoice | undefined,
  parallel: boolean | null | undefined,
): AnthropicToolChoice | undefined {
  const single = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice === "none") return { type: "none" };
  if (choice === "required") return { type: "any", ...single };
  if (typeof choice === "object") {
    return { type: "tool", name: choice.function.name, ...single };
  }
  if (choice === "auto" || parallel === false) {
    return { type: "auto", ...single };
  }
  return undefined;
}

function anthropicMessages(chat: ChatRequest): AnthropicMessage[] {
  const toolNames = toolNamesById(chat.messages);
  const turns: AnthropicMessage[] = [];
  const append = (
    role: AnthropicMessage["role"],
    blocks: AnthropicRequestBlock[],
  ) => {
    if (blocks.length === 0) return;
    const last = turns.at(-1);
    if (last?.role === role) {
      last.content = [...asBlocks(last.content), ...blocks];
    } else {
      turns.push({ role, content: blocks });
    }
  };
  chat.messages.forEach((message, i) => {
    const param = `messages[${i}]`;
    switch (message.role) {
      case "system":
      case "developer":
        return;
      case "user":
        return append("user", userBlocks(message.content, param));
      case "assistant":
        return append("assistant", assistantBlocks(message, param));
      case "tool":
        if (!toolNames.has(message.tool_call_id)) {
          throw new TranslationError(
            `Tool message answers unknown tool call "${message.tool_call_id}"`,
            `${param}.tool_call_id`,
          );
        }
        return append("user", [{
          type: "tool_result",
          tool_use_id: message.tool_call_id,
          content: textOf(message.content),
        }]);
    }
  });
  // A lone string turn reads best as a string, as Anthropic's own examples send it.
  return turns.map((turn) => {
    const blocks = asBlocks(turn.content);
    return blocks.length === 1 && blocks[0].type === "text"
      ? { role: turn.role, content: blocks[0].text }
      : turn;
  });
}

function asBlocks(
  content: string | AnthropicRequestBlock[],
): AnthropicRequestBlock[] {
  return typeof content === "string"
    ? [{ type: "text", text: content }]
    : content;
}

function userBlocks(
  content: string | ChatUserPart[],
  param: string,
): AnthropicRequestBlock[] {
  if (typeof content === "string") {
    return content ? [{ type: "text", text: content }] : [];
  }
  return content.flatMap((part, j): AnthropicRequestBlock[] => {
    const partParam = `${param}.content[${j}]`;
    switch (part.type) {
      case "text":
        return part.text ? [{ type: "text", text: part.text }] : [];
      case "image_url":
        return [{
          type: "image",
          source: imageSource(part.image_url.url, partParam),
        }];
      case "file":
        return [{
          type: "document",
          source: pdfSource(part.file.file_data, partParam),
          ...(part.file.filename ? { title: part.file.filename } : {}),
        }];
      case "input_audio":
        throw new TranslationError(
          "Cannot send audio to this model: Anthropic accepts no audio input",
          partParam,
        );
    }
  });
}

function imageSource(url: string, param: string): AnthropicSource {
  const data = parseDataUrl(url, param);
  if (data) {
    if (!imageMediaTypes.has(data.mediaType)) {
      throw new TranslationError(
        `Cannot send image of type "${data.mediaType}": expected jpeg, png, gif or webp`,
        param,
      );
    }
    return { type: "base64", media_type: data.mediaType, data: data.base64 };
  }
  if (isHttpUrl(url)) return { type: "url", url };
  throw new TranslationError(
    `Cannot read image URL "${url.slice(0, 40)}": expected data: or http(s)`,
    param,
  );
}

function pdfSource(
  fileData: string | undefined,
  param: string,
): AnthropicSource {
  const data = fileData ? parseDataUrl(fileData, param) : null;
  if (data?.mediaType !== "application/pdf") {
    throw new TranslationError(
      "Cannot send this file: only inline PDF file_data is supported",
      param,
    );
  }
  return { type: "base64", media_type: data.mediaType, data: data.base64 };
}

function assistantBlocks(
  message: Extract<ChatRequest["messages"][number], { role: "assistant" }>,
  param: string,
): AnthropicRequestBlock[] {
  const blocks: AnthropicRequestBlock[] = [];
  const content = message.content;
  if (typeof content === "string") {
    if (content) blocks.push({ type: "text", text: content });
  } else if (content) {
    for (const part of content) {
      const text = part.type === "text" ? part.text : part.refusal;
      if (text) blocks.push({ type: "text", text });
    }
  }
  // An earlier refusal is what the model said; it reads as its text.
  if (message.refusal) blocks.push({ type: "text", text: message.refusal });
  (message.tool_calls ?? []).forEach((call, k) => {
    blocks.push({
      type: "tool_use",
      id: call.id,
      name: call.function.name,
      input: parseArguments(
        call.function.arguments,
        `${param}.tool_calls[${k}].function.arguments`,
      ),
    });
  });
  return withThinking(
    blocks,
    message.reasoning_details,
    `${param}.reasoning_details`,
  );
}

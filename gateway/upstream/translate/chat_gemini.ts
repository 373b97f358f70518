/**
 * Translation between the OpenAI Chat Completions convention (the gateway's
 * `chat` route) and Gemini's native `generateContent` /
 * `streamGenerateContent?alt=sse`: request, response, stream, usage and
 * errors. Pure functions, no I/O.
 *
 * @module
 */

import { openAIErrorType } from "../../conventions.ts";
import { checkChatFields } from "./_chat_fields.ts";
import { targetSchema, withDescription } from "./_json_schema.ts";
import type { Usage } from "../usage.ts";
import { normalUsage, tokenCount } from "../usage.ts";
import {
  chatId,
  ChatStreamBase,
  functionTools,
  isHttpUrl,
  maxOutputTokens,
  newToolCallId,
  nowSeconds,
  parseArguments,
  parseDataUrl,
  requireSingleChoice,
  stopSequences,
  textOf,
  toolNamesById,
} from "./_shared.ts";
import {
  type ChatAssistantMessage,
  type ChatCompletion,
  chatError,
  type ChatErrorBody,
  type ChatErrorType,
  type ChatFinishReason,
  type ChatRequest,
  type ChatStreamPiece,
  type ChatToolCall,
  chatUsage,
  type ChatUserPart,
  TranslationError,
} from "./chat_types.ts";

/** One part of Gemini content. */
export interface GeminiPart {
  /** Text. */
  text?: string;
  /** Inline bytes, base64. */
  inlineData?: { mimeType: string; data: string };
  /** A file Gemini fetches. */
  fileData?: { mimeType?: string; fileUri: string };
  /** A function call the model made. */
  functionCall?: { name: string; args?: Record<string, unknown>; id?: string };
  /** The result of a function call. */
  functionResponse?: {
    name: string;
    response: Record<string, unknown>;
    id?: string;
  };
  /** Whether this part is a thought summary. */
  thought?: boolean;
  /** Opaque signature of the model's reasoning, to send back with the part. */
  thoughtSignature?: string;
}

/** One turn of a Gemini conversation. */
export interface GeminiContent {
  /** Who speaks. */
  role?: "user" | "model";
  /** The parts. */
  parts: GeminiPart[];
}

/** The body of `generateContent` and `streamGenerateContent`. */
export interface GeminiRequest {
  /** The conversation. */
  contents: GeminiContent[];
  /** System prompt. */
  systemInstruction?: { parts: { text: string }[] };
  /** Function tools. */
  tools?: {
    functionDeclarations: {
      name: string;
      description?: string;
      parametersJsonSchema?: unknown;
    }[];
  }[];
  /** How the model may call functions. */
  toolConfig?: {
    functionCallingConfig: {
      mode: "AUTO" | "ANY" | "NONE" | "VALIDATED";
      allowedFunctionNames?: string[];
    };
  };
  /** Sampling and output settings. */
  generationConfig?: {
    maxOutputTokens?: number;
    temperature?: number;
    topP?: number;
    stopSequences?: string[];
    seed?: number;
    presencePenalty?: number;
    frequencyPenalty?: number;
    responseMimeType?: string;
    responseJsonSchema?: unknown;
    thinkingConfig?: { thinkingLevel?: string; thinkingBudget?: number };
  };
}

/** Gemini token usage. `promptTokenCount` includes the cached tokens. */
export interface GeminiUsageMetadata {
  /** Prompt tokens, cached included. */
  promptTokenCount?: number;
  /** The cached part of the prompt. */
  cachedContentTokenCount?: number;
  /** Answer tokens. */
  candidatesTokenCount?: number;
  /** Thinking tokens, billed as output. */
  thoughtsTokenCount?: number;
  /** Prompt tokens of tool use (e.g. search results), billed as input. */
  toolUsePromptTokenCount?: number;
  /** Everything. */
  totalTokenCount?: number;
}

/** A `generateContent` response, and each chunk of a stream. */
export interface GeminiResponse {
  /** Candidate answers. */
  candidates?: {
    content?: { role?: string; parts?: GeminiPart[] };
    finishReason?: string;
    index?: number;
  }[];
  /** Why the prompt was blocked, if it was. */
  promptFeedback?: { blockReason?: string };
  /** Token usage (in a stream, cumulative on every chunk). */
  usageMetadata?: GeminiUsageMetadata;
  /** Model version that answered. */
  modelVersion?: string;
  /** Response id. */
  responseId?: string;
}

/**
 * Sent as the thought signature of a function call that has none (history the
 * gateway did not see come from Gemini), as Gemini's thought-signature guide
 * allows; Gemini 3 rejects an unsigned call otherwise.
 */
const skipSignature = "skip_thought_signature_validator";

const imageTypesByExtension: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  heic: "image/heic",
  heif: "image/heif",
  pdf: "application/pdf",
};

/**
 * Translates a chat request into a Gemini request. The model goes in the URL,
 * so the caller picks `:generateContent` or `:streamGenerateContent?alt=sse`
 * from `stream`.
 *
 * `system` and `developer` messages become `systemInstruction`; `assistant`
 * turns become `model` turns; `tool` messages become `functionResponse` parts
 * named after the call they answer; turns of the same role are merged. Tool
 * parameters go as `parametersJsonSchema`, which takes full JSON Schema
 * (`additionalProperties` included), unlike the OpenAPI subset of `parameters`.
 * `response_format` becomes `responseMimeType` and `responseJsonSchema`.
 * Every other field is translated or refused as `_chat_fields.ts` records.
 *
 * @param chat The validated chat request.
 * @param upstreamModel The model id Gemini knows (it goes in the URL; it decides how reasoning effort is expressed).
 * @returns The request body and whether to call the streaming method.
 * @throws {TranslationError} When the request holds something Gemini cannot take.
 *
 * @example Translate a short request
 * ```ts
 * import { toGeminiRequest } from "./chat_gemini.ts";
 * const { body, stream } = toGeminiRequest(
 *   { model: "gemini-2.5-pro", messages: [{ role: "user", content: "Hi" }], stream: true },
 *   "gemini-2.5-pro",
 * );
 * console.log(body.contents[0].role, stream); // "user" true
 * ```
 */
export function toGeminiRequest(
  chat: ChatRequest,
  upstreamModel: string,
): { body: GeminiRequest; stream: boolean } {
  checkChatFields(chat, "gemini");
  requireSingleChoice(chat);
  const body: GeminiRequest = { contents: geminiContents(chat) };
  const system = chat.messages.flatMap((message) =>
    message.role === "system" || message.role === "developer"
      ? [textOf(message.content)]
      : []
  ).filter((text) => text.length > 0);
  if (system.length > 0) {
    body.systemInstruction = { parts: system.map((text) => ({ text })) };
  }
  const { tools, choice } = functionTools(chat);
  if (tools.length > 0) {
    body.tools = [{
      functionDeclarations: tools.map(({ tool, index: i }) => ({
        name: tool.function.name,
        ...(tool.function.description
          ? { description: tool.function.description }
          : {}),
        ...(tool.function.parameters
          ? {
            parametersJsonSchema: tool.function.strict === true
              ? targetSchema(
                tool.function.parameters,
                "gemini",
                `tools[${i}].function.parameters`,
              )
              : withoutSchemaKeyword(tool.function.parameters),
          }
          : {}),
      })),
    }];
    // A strict tool's calls must match its schema: VALIDATED mode decodes
    // them constrained to it, as ANY does for calls it forces.
    const strict = tools.some(({ tool }) => tool.function.strict === true);
    if (strict && (choice === undefined || choice === "auto")) {
      body.toolConfig = { functionCallingConfig: { mode: "VALIDATED" } };
    }
    if (choice === "auto" && !strict) {
      body.toolConfig = { functionCallingConfig: { mode: "AUTO" } };
    }
    if (choice === "none") {
      body.toolConfig = { functionCallingConfig: { mode: "NONE" } };
    }
    if (choice === "required") {
      body.toolConfig = { functionCallingConfig: { mode: "ANY" } };
    }
    if (typeof choice === "object") {
      body.toolConfig = {
        functionCallingConfig: {
          mode: "ANY",
          allowedFunctionNames: [choice.function.name],
        },
      };
    }
  }
  const config = generationConfig(chat, upstreamModel);
  if (Object.keys(config).length > 0) body.generationConfig = config;
  return { body, stream: chat.stream === true };
}

/** Drops `$schema`, which describes the schema rather than the arguments and which Gemini does not need. */
function withoutSchemaKeyword(
  schema: Record<string, unknown>,
): Record<string, unknown> {
  const { $schema: _, ...rest } = schema;
  return rest;
}

function generationConfig(
  chat: ChatRequest,
  upstreamModel: string,
): NonNullable<GeminiRequest["generationConfig"]> {
  const config: NonNullable<GeminiRequest["generationConfig"]> = {};
  const max = maxOutputTokens(chat);
  if (max !== undefined) config.maxOutputTokens = max;
  if (chat.temperature != null) config.temperature = chat.temperature;
  if (chat.top_p != null) config.topP = chat.top_p;
  const stop = stopSequences(chat.stop);
  if (stop) config.stopSequences = stop;
  if (chat.seed != null) config.seed = chat.seed;
  if (chat.presence_penalty != null) {
    config.presencePenalty = chat.presence_penalty;
  }
  if (chat.frequency_penalty != null) {
    config.frequencyPenalty = chat.frequency_penalty;
  }
  const format = chat.response_format;
  if (format?.type === "json_object") {
    config.responseMimeType = "application/json";
  }
  if (format?.type === "json_schema") {
    config.responseMimeType = "application/json";
    const { schema, description } = format.json_schema;
    if (schema) {
      config.responseJsonSchema = withDescription(
        targetSchema(schema, "gemini", "response_format.json_schema.schema"),
        description,
      );
    }
  }
  const thinking = thinkingConfig(chat.reasoning_effort, upstreamModel);
  if (thinking) config.thinkingConfig = thinking;
  return config;
}

/** Thinking budgets Google documents for OpenAI's reasoning efforts on Gemini 2.5. */
const thinkingBudgets: Record<string, number> = {
  none: 0,
  low: 1024,
  medium: 8192,
  high: 24576,
};

/**
 * `reasoning_effort` as Gemini's thinking setting: Gemini 3 models take a
 * level of the same name (an upstream that lacks a level refuses it
 * itself), Gemini 2.5 a token budget.
 */
function thinkingConfig(
  effort: string | null | undefined,
  upstreamModel: string,
): { thinkingLevel?: string; thinkingBudget?: number } | undefined {
  if (effort == null) return undefined;
  const levels = /^gemini-[3-9]/.test(upstreamModel);
  if (levels && ["minimal", "low", "medium", "high"].includes(effort)) {
    return { thinkingLevel: effort };
  }
  if (!levels && effort in thinkingBudgets) {
    return { thinkingBudget: thinkingBudgets[effort] };
  }
  throw new TranslationError(
    `Cannot use reasoning_effort "${effort}" with this model: Gemini takes ${
      levels ? "minimal, low, medium or high" : "none, low, medium or high"
    }`,
    "reasoning_effort",
  );
}

function geminiContents(chat: ChatRequest): GeminiContent[] {
  const toolNames = toolNamesById(chat.messages);
  const contents: GeminiContent[] = [];
  const append = (role: "user" | "model", parts: GeminiPart[]) => {
    if (parts.length === 0) return;
    const last = contents.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  chat.messages.forEach((message, i) => {
    const param = `messages[${i}]`;
    switch (message.role) {
      case "system":
      case "developer":
        return;
      case "user":
        return append("user", userParts(message.content, param));
      case "assistant":
        return append("model", modelParts(message, param));
      case "tool": {
        const name = toolNames.get(message.tool_call_id);
        if (name === undefined) {
          throw new TranslationError(
            `Tool message answers unknown tool call "${message.tool_call_id}"`,
            `${param}.tool_call_id`,
          );
        }
        return append("user", [{
          functionResponse: {
            name,
            response: functionResponse(textOf(message.content)),
          },
        }]);
      }
    }
  });
  return contents;
}

/** Gemini wants the result as an object: a JSON object result as-is, anything else under `result`. */
function functionResponse(content: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(content);
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      return value as Record<string, unknown>;
    }
    return { result: value };
  } catch {
    return { result: content };
  }
}

function userParts(
  content: string | ChatUserPart[],
  param: string,
): GeminiPart[] {
  if (typeof content === "string") return content ? [{ text: content }] : [];
  return content.flatMap((part, j): GeminiPart[] => {
    const partParam = `${param}.content[${j}]`;
    switch (part.type) {
      case "text":
        return part.text ? [{ text: part.text }] : [];
      case "image_url":
        return [mediaPart(part.image_url.url, partParam)];
      case "file":
        if (!part.file.file_data) {
          throw new TranslationError(
            "Cannot send this file: only inline file_data is supported",
            partParam,
          );
        }
        return [mediaPart(part.file.file_data, partParam)];
      case "input_audio":
        return [{
          inlineData: {
            mimeType: `audio/${part.input_audio.format}`,
            data: part.input_audio.data,
          },
        }];
    }
  });
}

function mediaPart(url: string, param: string): GeminiPart {
  const data = parseDataUrl(url, param);
  if (data) {
    return { inlineData: { mimeType: data.mediaType, data: data.base64 } };
  }
  if (isHttpUrl(url)) {
    const extension = new URL(url).pathname.split(".").at(-1)?.toLowerCase() ??
      "";
    // Gemini requires a MIME type with fileData; an image URL without a known extension is sent as JPEG.
    return {
      fileData: {
        mimeType: imageTypesByExtension[extension] ?? "image/jpeg",
        fileUri: url,
      },
    };
  }
  throw new TranslationError(
    `Cannot read image URL "${url.slice(0, 40)}": expected data: or http(s)`,
    param,
  );
}

function modelParts(
  message: ChatAssistantMessage,
  param: string,
): GeminiPart[] {
  const parts: GeminiPart[] = [];
  const content = message.content;
  if (typeof content === "string") {
    if (content) parts.push({ text: content });
  } else if (content) {
    for (const part of content) {
      const text = part.type === "text" ? part.text : part.refusal;
      if (text) parts.push({ text });
    }
  }
  // An earlier refusal is what the model said; it reads as its text.
  if (message.refusal) parts.push({ text: message.refusal });
  (message.tool_calls ?? []).forEach((call, k) => {
    const signature = call.extra_content?.google?.thought_signature ??
      (k === 0 ? skipSignature : undefined);
    parts.push({
      functionCall: {
        name: call.function.name,
        args: parseArguments(
          call.function.arguments,
          `${param}.tool_calls[${k}].function.arguments`,
        ),
      },
      ...(signature ? { thoughtSignature: signature } : {}),
    });
  });
  return parts;
}

const filteredReasons = new Set([
  "SAFETY",
  "RECITATION",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION",
  "LANGUAGE",
]);

/**
 * Maps a Gemini finish reason to the chat convention.
 *
 * @param reason Gemini's `finishReason`.
 * @param calledFunctions Whether the answer holds function calls (Gemini says `STOP` for those).
 * @returns The chat `finish_reason`.
 */
export function finishReasonFromGemini(
  reason: string | undefined,
  calledFunctions: boolean,
): ChatFinishReason {
  if (reason === "MAX_TOKENS") return "length";
  if (reason !== undefined && filteredReasons.has(reason)) {
    return "content_filter";
  }
  return calledFunctions ? "tool_calls" : "stop";
}

/**
 * Normalises Gemini usage. `promptTokenCount` already includes the cached
 * tokens; thinking tokens are output, tool-use prompt tokens are input.
 *
 * @param usage Gemini's `usageMetadata`.
 * @returns The gateway's {@link Usage}.
 * @throws {UnreadableUsageError} For a count that cannot be read.
 */
export function usageFromGemini(
  usage: GeminiUsageMetadata | null | undefined,
): Usage {
  const count = (field: keyof GeminiUsageMetadata) =>
    tokenCount(usage?.[field], `usageMetadata.${field}`);
  const thoughts = count("thoughtsTokenCount");
  return normalUsage({
    inputTokens: count("promptTokenCount") + count("toolUsePromptTokenCount"),
    outputTokens: count("candidatesTokenCount") + thoughts,
    cachedInputTokens: count("cachedContentTokenCount"),
    reasoningTokens: thoughts,
  });
}

/** A function call part as a chat tool call, its thought signature kept for the next turn. */
function toolCallFromPart(part: GeminiPart): ChatToolCall {
  const call = part.functionCall!;
  return {
    id: call.id ?? newToolCallId(),
    type: "function",
    function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) },
    ...(part.thoughtSignature
      ? {
        extra_content: { google: { thought_signature: part.thoughtSignature } },
      }
      : {}),
  };
}

/**
 * Translates a non-streamed Gemini response into a chat completion.
 *
 * @param response The `generateContent` response body.
 * @param model The model id as the caller sent it.
 * @returns The chat completion.
 */
export function fromGeminiResponse(
  response: GeminiResponse,
  model: string,
): ChatCompletion {
  const candidate = response.candidates?.[0];
  const parts = (candidate?.content?.parts ?? []).filter((part) =>
    !part.thought
  );
  const texts = parts.flatMap((part) => (part.text ? [part.text] : []));
  const toolCalls = parts.filter((part) => part.functionCall).map(
    toolCallFromPart,
  );
  const blocked = candidate === undefined &&
    response.promptFeedback?.blockReason !== undefined;
  return {
    id: chatId(response.responseId),
    object: "chat.completion",
    created: nowSeconds(),
    model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: texts.length > 0 ? texts.join("") : null,
        refusal: null,
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
      },
      finish_reason: blocked
        ? "content_filter"
        : finishReasonFromGemini(candidate?.finishReason, toolCalls.length > 0),
      logprobs: null,
    }],
    usage: chatUsage(usageFromGemini(response.usageMetadata)),
  };
}

const geminiStatusTypes = new Map<string, ChatErrorType>([
  ["INVALID_ARGUMENT", "invalid_request_error"],
  ["FAILED_PRECONDITION", "invalid_request_error"],
  ["OUT_OF_RANGE", "invalid_request_error"],
  ["UNAUTHENTICATED", "authentication_error"],
  ["PERMISSION_DENIED", "permission_error"],
  ["NOT_FOUND", "not_found_error"],
  ["RESOURCE_EXHAUSTED", "rate_limit_error"],
  ["INTERNAL", "server_error"],
  ["UNAVAILABLE", "server_error"],
  ["DEADLINE_EXCEEDED", "server_error"],
]);

/**
 * Translates a Google error body (`{error:{code, message, status}}`) into the
 * chat convention, keeping Google's status as `code`.
 *
 * @param status The upstream HTTP status (used when the body says nothing).
 * @param body The parsed upstream body, or anything unreadable.
 * @returns The chat error body.
 */
function errorFromGemini(status: number, body: unknown): ChatErrorBody {
  const error = (body as
    | { error?: { code?: unknown; message?: unknown; status?: unknown } }
    | null)?.error;
  const googleStatus = typeof error?.status === "string"
    ? error.status
    : undefined;
  const code = typeof error?.code === "number" ? error.code : status;
  const message = typeof error?.message === "string"
    ? error.message
    : `Upstream answered status "${status}"`;
  return chatError(
    message,
    geminiStatusTypes.get(googleStatus ?? "") ?? openAIErrorType(code),
    googleStatus ?? null,
  );
}

/**
 * Translates one Gemini `streamGenerateContent?alt=sse` stream into chat
 * chunks. Each upstream event is a whole `GenerateContentResponse`: text parts
 * become `content` deltas; a function call arrives whole, so it becomes one
 * tool call fragment with a generated id, its name and all its arguments; the
 * chunk with `finishReason` gives the finish reason. Usage is cumulative on
 * every chunk. An `{error}` event becomes the OpenAI in-stream error.
 *
 * @example Feed a recorded stream
 * ```ts
 * import { GeminiChatStream } from "./chat_gemini.ts";
 * const stream = new GeminiChatStream({ model: "gemini-2.5-pro", includeUsage: false });
 * const pieces = stream.push({ data: '{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]}}]}' });
 * console.log(pieces.length); // 2: the role chunk, then the text
 * ```
 */
export class GeminiChatStream extends ChatStreamBase {
  // Read when the counts arrive, so an unreadable count fails the stream there.
  #usage: Usage = usageFromGemini(undefined);
  #toolCalls = 0;
  #started = false;

  /** Tokens Gemini reported so far. */
  get usage(): Usage {
    return this.#usage;
  }

  /**
   * Translates one parsed Gemini chunk (a whole `GenerateContentResponse`).
   *
   * @param parsed The event's data.
   * @returns The chat pieces to send, possibly none.
   */
  protected translate(parsed: unknown): ChatStreamPiece[] {
    const data = parsed as GeminiResponse & { error?: unknown };
    if (data.error !== undefined) return this.fail(errorFromGemini(500, data));
    if (data.usageMetadata) this.#usage = usageFromGemini(data.usageMetadata);
    const pieces: ChatStreamPiece[] = [];
    if (!this.#started) {
      this.#started = true;
      this.chunks.id = chatId(data.responseId);
      pieces.push(
        this.chunks.delta({ role: "assistant", content: "", refusal: null }),
      );
    }
    const candidate = data.candidates?.[0];
    for (const part of candidate?.content?.parts ?? []) {
      if (part.thought) continue;
      if (part.text) pieces.push(this.chunks.delta({ content: part.text }));
      if (part.functionCall) {
        const { id, function: fn, extra_content } = toolCallFromPart(part);
        pieces.push(this.chunks.delta({
          tool_calls: [{
            index: this.#toolCalls++,
            id,
            type: "function",
            function: fn,
            ...(extra_content ? { extra_content } : {}),
          }],
        }));
      }
    }
    const blocked = candidate === undefined &&
      data.promptFeedback?.blockReason !== undefined;
    if (blocked || candidate?.finishReason) {
      this.finished = true;
      const reason = blocked
        ? "content_filter"
        : finishReasonFromGemini(candidate?.finishReason, this.#toolCalls > 0);
      pieces.push(this.chunks.delta({}, reason));
    }
    return pieces;
  }
}

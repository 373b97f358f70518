/**
 * Translation of an OpenAI Chat Completions request (the gateway's `chat`
 * route) into a Gemini `generateContent` request, with Gemini's request
 * types. The answer's way back is in `chat_gemini_response.ts` (a whole
 * response, usage, errors) and `chat_gemini_stream.ts`
 * (`streamGenerateContent?alt=sse`). Pure functions, no I/O.
 *
 * @module
 */

import { checkChatFields } from "./_chat_fields.ts";
import { targetSchema, withDescription } from "./_json_schema.ts";
import {
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
  type ChatAssistantMessage,
  type ChatRequest,
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
    // One at a time: a message of a million parts spread into push() would
    // pass a million arguments, past the call stack.
    if (last?.role === role) {
      for (const part of parts) {
        last.parts.push(part);
      }
    } else contents.push({ role, parts });
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

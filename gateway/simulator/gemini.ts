/**
 * Gemini's native API (`POST /v1beta/models/{model}:generateContent` and
 * `:streamGenerateContent`), as the simulator speaks it. With `alt=sse` the
 * stream is SSE (`data: {...}` separated by CRLF CRLF, as Google sends it);
 * without it, a JSON array of the same chunks.
 *
 * Keys come from `x-goog-api-key` or `?key=`; errors are
 * `{error: {code, message, status}}` (a 429 with `retryAfter` adds Google's
 * `RetryInfo` detail). A missing key answers 401 `UNAUTHENTICATED`.
 * `promptTokenCount` includes `cachedContentTokenCount`, as in the real API.
 * Images (also inside `functionResponse.parts`) are billed from their size;
 * inline data of a text type counts as text.
 *
 * With the `computerUse` tool the computer-use agent plays (see
 * `gemini_computer.ts`): `functionCall` parts of the predefined functions,
 * coordinates normalised to 0–999.
 *
 * @module
 */

import { errorTypeOf } from "../conventions.ts";
import { asArray, field, isObject, type Json } from "./_json.ts";
import { givesInstructions, planComputerUse } from "./computer_use.ts";
import {
  BadRequestError,
  type Dialect,
  type ParsedRequest,
  type RequestContext,
  type Wire,
} from "./request_flow.ts";
import type { SimulatedEvent } from "./answers.ts";
import {
  checkGeminiAcknowledgement,
  geminiComputerHistory,
  type GeminiComputerTool,
  geminiFunctionCall,
  isComputerUseTool,
  readComputerUseTool,
  withoutExcluded,
} from "./gemini_computer.ts";
import {
  type OutputFormat,
  type Prompt,
  PromptMeter,
  type Reply,
  type ReplyContent,
  scriptOf,
  type ToolDeclaration,
} from "./reply.ts";
import { splitText } from "./tokens.ts";

/** Each status's message, as Google's API writes it; the error `status` is the Google convention's (`conventions.ts`). */
const ERROR_MESSAGES: Record<number, string> = {
  400: "Request contains an invalid argument.",
  401: "Request had invalid authentication credentials.",
  403: "The caller does not have permission",
  404: "Requested entity was not found.",
  429: "Resource has been exhausted (e.g. check quota).",
  500: "An internal error has occurred.",
  503: "The model is overloaded. Please try again later.",
  504: "Deadline expired before operation could complete.",
};

/** Gemini's HTTP conventions. */
export const geminiWire: Wire = {
  readKey(request, url) {
    return request.headers.get("x-goog-api-key") ??
      url.searchParams.get("key") ?? undefined;
  },
  errorBody(status, message, retryAfter) {
    const known = ERROR_MESSAGES[status] ??
      (status >= 500 ? ERROR_MESSAGES[500] : ERROR_MESSAGES[400]);
    const error: Json = {
      code: status,
      message: message ?? known,
      status: errorTypeOf("google", status),
    };
    if (status === 429 && retryAfter !== undefined) {
      error.details = [{
        "@type": "type.googleapis.com/google.rpc.RetryInfo",
        retryDelay: `${retryAfter}s`,
      }];
    }
    return { error };
  },
  missingKeyMessage:
    "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
  invalidKeyMessage: "API key not valid. Please pass a valid API key.",
  eventDelimiter: "\r\n\r\n",
};

/** Inline data and file references of a part (also of a function response's parts). */
function measureMedia(meter: PromptMeter, part: Json): void {
  const inline = field(part, "inlineData", "inline_data");
  if (isObject(inline)) {
    meter.inline(field(inline, "mimeType", "mime_type"), inline.data);
  } else if (inline !== undefined) meter.image();
  if (field(part, "fileData", "file_data") !== undefined) meter.image();
}

/**
 * Measures parts and returns their text; the names of their function calls
 * are appended to `calls`, when given.
 */
function measureParts(
  meter: PromptMeter,
  parts: unknown,
  calls?: string[],
): string {
  let text = "";
  for (const part of asArray(parts)) {
    if (!isObject(part)) continue;
    if (typeof part.text === "string") {
      meter.text(part.text);
      text += part.text;
    }
    measureMedia(meter, part);
    const call = field(part, "functionCall", "function_call");
    if (isObject(call)) {
      meter.text(call.name);
      meter.json(call.args);
      if (typeof call.name === "string") calls?.push(call.name);
    }
    const response = field(part, "functionResponse", "function_response");
    if (isObject(response)) {
      meter.json(response.response);
      for (const inner of asArray(response.parts)) {
        if (isObject(inner)) measureMedia(meter, inner);
      }
    }
  }
  return text;
}

function lastFunctionResponse(content: Json): Json | undefined {
  for (const part of asArray(content.parts)) {
    if (!isObject(part)) continue;
    const response = field(part, "functionResponse", "function_response");
    if (isObject(response)) return response;
  }
  return undefined;
}

/**
 * The structured output `generationConfig` asks for: `responseMimeType`
 * `application/json` (with `responseSchema`, OpenAPI subset, or
 * `responseJsonSchema`, JSON Schema) or `text/x.enum` with an enum schema.
 */
function outputFormatOf(
  config: Json,
  meter: PromptMeter,
): OutputFormat | undefined {
  const mime = field(config, "responseMimeType", "response_mime_type");
  const schema = field(config, "responseSchema", "response_schema") ??
    field(config, "responseJsonSchema", "response_json_schema");
  if (schema !== undefined) meter.json(schema);
  if (mime === undefined || mime === "text/plain") {
    if (schema !== undefined) {
      throw new BadRequestError(
        "* GenerateContentRequest.generation_config.response_mime_type: must be application/json or text/x.enum when a response schema is set",
      );
    }
    return undefined;
  }
  if (mime === "application/json") return { kind: "json", schema };
  if (mime === "text/x.enum" && isObject(schema)) {
    return { kind: "enum", schema };
  }
  throw new BadRequestError(
    `* GenerateContentRequest.generation_config.response_mime_type: unsupported value "${
      String(mime)
    }"`,
  );
}

function parseGenerate(
  body: Json,
  url: URL,
  context: RequestContext,
): { prompt: Prompt; model: string; stream: boolean; sse: boolean } {
  const match = url.pathname.match(
    /\/models\/([^/:]+):(generateContent|streamGenerateContent)$/,
  );
  if (!match) throw new BadRequestError(`Unknown method in "${url.pathname}"`);
  if (!Array.isArray(body.contents) || body.contents.length === 0) {
    throw new BadRequestError(
      "* GenerateContentRequest.contents: contents is not specified",
    );
  }
  const meter = new PromptMeter("gemini");
  const system = field(body, "systemInstruction", "system_instruction");
  if (isObject(system)) measureParts(meter, system.parts);
  let lastUserText = "";
  let firstUserText: string | undefined;
  let planText: string | undefined;
  const calledTools: string[] = [];
  for (const content of body.contents) {
    if (!isObject(content)) {
      throw new BadRequestError(
        "* GenerateContentRequest.contents: each content must be an object",
      );
    }
    const text = measureParts(meter, content.parts, calledTools);
    if (content.role !== "model" && text !== "") {
      lastUserText = text;
      firstUserText ??= text;
      if (planText === undefined && givesInstructions(text)) planText = text;
    }
  }
  const last = body.contents[body.contents.length - 1] as Json;
  const response = lastFunctionResponse(last);
  const toolResult = response
    ? {
      name: typeof response.name === "string" ? response.name : undefined,
      text: JSON.stringify(response.response ?? {}),
    }
    : undefined;

  const tools: ToolDeclaration[] = [];
  let computerUse: GeminiComputerTool | undefined;
  for (const [index, tool] of asArray(body.tools).entries()) {
    if (!isObject(tool)) continue;
    meter.json(tool);
    if (isComputerUseTool(tool)) {
      computerUse ??= readComputerUseTool(
        tool,
        index,
        match[1],
        context.model(match[1]),
      );
    }
    for (
      const declaration of asArray(
        field(tool, "functionDeclarations", "function_declarations"),
      )
    ) {
      if (!isObject(declaration) || typeof declaration.name !== "string") {
        continue;
      }
      tools.push({
        name: declaration.name,
        schema: declaration.parameters ??
          field(declaration, "parametersJsonSchema", "parameters_json_schema"),
      });
    }
  }
  const toolConfig = field(body, "toolConfig", "tool_config");
  const calling = isObject(toolConfig)
    ? field(toolConfig, "functionCallingConfig", "function_calling_config")
    : undefined;
  const mode = isObject(calling) && typeof calling.mode === "string"
    ? calling.mode.toUpperCase()
    : "AUTO";
  const allowed = isObject(calling)
    ? asArray(field(calling, "allowedFunctionNames", "allowed_function_names"))
    : [];
  const config = field(body, "generationConfig", "generation_config");
  const limit = isObject(config)
    ? field(config, "maxOutputTokens", "max_output_tokens")
    : undefined;
  if (
    limit !== undefined &&
    (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1)
  ) {
    throw new BadRequestError(
      `* GenerateContentRequest.generation_config.max_output_tokens: must be a positive integer, got "${limit}"`,
    );
  }
  const outputFormat = isObject(config)
    ? outputFormatOf(config, meter)
    : undefined;
  const plan = computerUse &&
    withoutExcluded(
      planComputerUse(planText ?? "", undefined, "gemini"),
      computerUse.excluded,
      new Set(tools.map((tool) => tool.name)),
    );
  const history = plan && geminiComputerHistory(body.contents);
  if (plan && history) checkGeminiAcknowledgement(plan, history);
  const stream = match[2] === "streamGenerateContent";
  return {
    model: match[1],
    stream,
    sse: stream && url.searchParams.get("alt") === "sse",
    prompt: {
      ...meter.size(),
      lastUserText,
      toolResult,
      tools,
      forcedTool: mode === "ANY"
        ? String(allowed[0] ?? tools[0]?.name)
        : undefined,
      toolsDisabled: mode === "NONE",
      maxOutputTokens: limit as number | undefined,
      script: scriptOf(firstUserText ?? "", tools),
      calledTools,
      outputFormat,
      computer: plan && history && { plan, done: history.calls },
    },
  };
}

/** The prompt's tokens by modality: text, and images when there are any. */
function promptDetails(reply: Reply): Json[] {
  const images = reply.imageTokens ?? 0;
  return [
    { modality: "TEXT", tokenCount: reply.inputTokens - images },
    ...(images > 0 ? [{ modality: "IMAGE", tokenCount: images }] : []),
  ];
}

function usageMetadata(reply: Reply, final: boolean): Json {
  const usage: Json = {
    promptTokenCount: reply.inputTokens,
    ...(final ? { candidatesTokenCount: reply.outputTokens } : {}),
    totalTokenCount: reply.inputTokens + (final ? reply.outputTokens : 0),
    ...(reply.cachedTokens > 0
      ? { cachedContentTokenCount: reply.cachedTokens }
      : {}),
    promptTokensDetails: promptDetails(reply),
  };
  if (reply.cachedTokens > 0) {
    usage.cacheTokensDetails = [{
      modality: "TEXT",
      tokenCount: reply.cachedTokens,
    }];
  }
  return usage;
}

/** The `functionCall` part of a tool call or a computer action; `undefined` for text. */
function callPart(content: ReplyContent): Json | undefined {
  if (content.kind === "computer") {
    return { functionCall: geminiFunctionCall(content) };
  }
  if (content.kind === "tool") {
    return {
      functionCall: { name: content.name, args: JSON.parse(content.arguments) },
    };
  }
  return undefined;
}

function generateRequest(
  body: Json,
  url: URL,
  context: RequestContext,
): ParsedRequest {
  const { prompt, model, stream, sse } = parseGenerate(body, url, context);
  const chunk = (
    id: string,
    parts: Json[],
    reply: Reply,
    finish: boolean,
  ): Json => ({
    candidates: [{
      content: { parts, role: "model" },
      ...(finish
        ? { finishReason: reply.stop === "length" ? "MAX_TOKENS" : "STOP" }
        : {}),
      index: 0,
    }],
    usageMetadata: usageMetadata(reply, finish),
    modelVersion: model,
    responseId: id,
  });
  const chunks = (reply: Reply, id: string): Json[] => {
    const part = callPart(reply.content);
    if (part) return [chunk(id, [part], reply, true)];
    const text = reply.content.kind === "text" ? reply.content.text : "";
    const pieces = splitText(text);
    return pieces.map((piece, i) =>
      chunk(id, [{ text: piece }], reply, i === pieces.length - 1)
    );
  };
  return {
    prompt,
    stream: sse,
    body(reply, id) {
      if (stream) return chunks(reply, id);
      const { content } = reply;
      const part = callPart(content) ??
        { text: content.kind === "text" ? content.text : "" };
      return chunk(id, [part], reply, true);
    },
    events: (reply, id): SimulatedEvent[] =>
      chunks(reply, id).map((data) => ({ data: JSON.stringify(data) })),
  };
}

/** The generateContent / streamGenerateContent endpoint. */
export const generateContent: Dialect = {
  wire: geminiWire,
  parse: (body, url, context) => generateRequest(body as Json, url, context),
};

/**
 * OpenAI's HTTP conventions and what its two endpoints share, as the
 * simulator speaks them: chat completions (`openai_chat.ts`) and Responses
 * (`openai_responses.ts`). xAI and OpenRouter speak the same format; so does
 * Gemini's OpenAI-compatible endpoint.
 *
 * Keys come from `Authorization: Bearer <key>`; errors are
 * `{error: {message, type, param, code}}`.
 *
 * @module
 */

import { errorTypeOf } from "../conventions.ts";
import { asArray, isObject, type Json } from "./_json.ts";
import { BadRequestError, type Wire } from "./request_flow.ts";
import { imageSizeFromUrl } from "./image.ts";
import type { OutputFormat, PromptMeter, Reply } from "./reply.ts";

/**
 * Each status's error `code` and message, as OpenAI's API writes them; the
 * `type` is the OpenAI convention's (`conventions.ts`) except where
 * {@linkcode UPSTREAM_TYPES} says the API types it otherwise.
 */
const ERROR_DETAILS: Record<number, { code: string | null; message: string }> =
  {
    400: { code: null, message: "Invalid request" },
    401: { code: "invalid_api_key", message: "Incorrect API key provided" },
    403: {
      code: "unsupported_country_region_territory",
      message: "Country, region, or territory not supported",
    },
    404: {
      code: "model_not_found",
      message: "The model does not exist or you do not have access to it",
    },
    429: {
      code: "rate_limit_exceeded",
      message: "Rate limit reached for requests",
    },
    500: {
      code: null,
      message: "The server had an error while processing your request",
    },
    503: {
      code: null,
      message: "The engine is currently overloaded, please try again later",
    },
  };

/**
 * Where OpenAI's API types an error otherwise than the convention the gateway
 * answers in: a bad key, a refused region and an unknown model are all
 * `invalid_request_error`, and a rate limit is typed by what ran out.
 */
const UPSTREAM_TYPES: Readonly<Record<number, string>> = {
  401: "invalid_request_error",
  403: "invalid_request_error",
  404: "invalid_request_error",
  429: "requests",
};

/** OpenAI's HTTP conventions (also xAI's and OpenRouter's). */
export const openaiWire: Wire = {
  readKey(request) {
    const header = request.headers.get("authorization");
    const match = header?.match(/^Bearer\s+(.+)$/i);
    return match ? match[1].trim() : undefined;
  },
  errorBody(status, message, _retryAfter, where) {
    const details = ERROR_DETAILS[status] ??
      (status >= 500 ? ERROR_DETAILS[500] : ERROR_DETAILS[400]);
    return {
      error: {
        message: message ?? details.message,
        type: UPSTREAM_TYPES[status] ?? errorTypeOf("openai", status),
        param: where?.param ?? null,
        code: where?.code !== undefined ? where.code : details.code,
      },
    };
  },
  missingKeyMessage:
    "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)",
  invalidKeyMessage: "Incorrect API key provided",
  eventDelimiter: "\n\n",
};

/**
 * The request's model, required by both endpoints.
 *
 * @param body The request body.
 * @returns The model name.
 * @throws {BadRequestError} When it is missing.
 */
export function requireModel(body: Json): string {
  if (typeof body.model !== "string" || body.model === "") {
    throw new BadRequestError("you must provide a model parameter");
  }
  return body.model;
}

/**
 * An optional output-token limit, checked as OpenAI checks it.
 *
 * @param value The field's value.
 * @param name The field's name, for the error.
 * @returns The limit, or `undefined` when absent.
 * @throws {BadRequestError} When it is not a positive integer.
 */
export function optionalLimit(
  value: unknown,
  name: string,
): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new BadRequestError(
      `Invalid '${name}': expected an integer greater than or equal to 1, got "${value}"`,
    );
  }
  return value;
}

/**
 * Text of a content value: a string, or an array of parts with `text`.
 *
 * @param content The content.
 * @returns Its text.
 */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  return asArray(content).map((
    part,
  ) => (isObject(part) && typeof part.text === "string" ? part.text : "")).join(
    "",
  );
}

/**
 * Measures a content value: text, images billed from their size (chat
 * `image_url: {url, detail}`, Responses `input_image` with `image_url` and
 * `detail`), and other media by their JSON length.
 *
 * @param meter The meter.
 * @param content The content.
 */
export function measureContent(meter: PromptMeter, content: unknown): void {
  if (typeof content === "string") return meter.text(content);
  for (const part of asArray(content)) {
    if (!isObject(part)) continue;
    meter.text(part.text);
    if (part.type === "image_url" || part.type === "input_image") {
      const image = isObject(part.image_url) ? part.image_url : part;
      const url = isObject(part.image_url)
        ? part.image_url.url
        : part.image_url;
      meter.image(imageSizeFromUrl(url), image.detail);
    }
    if (
      part.type === "input_audio" || part.type === "file" ||
      part.type === "input_file"
    ) meter.json(part);
  }
}

/**
 * The reply's token counts under short names.
 *
 * @param reply The reply.
 * @returns Input, output and cached tokens.
 */
export function usageNumbers(
  reply: Reply,
): { input: number; output: number; cached: number } {
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
 *
 * @param format The field's value.
 * @param where `response_format` or `text.format`, for errors.
 * @param meter Counts the schema as prompt.
 * @returns The format, or `undefined` for plain text.
 * @throws {BadRequestError} When the format is malformed.
 */
export function openaiOutputFormat(
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

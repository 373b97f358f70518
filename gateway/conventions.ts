/**
 * The conventions the gateway speaks, one table per fact: which provider
 * convention each route follows and where it is served, each convention's
 * error type by HTTP status, its error body, and each route's in-stream
 * error event. `errors.ts` renders errors from these tables; the HTTP app
 * registers its routes from them.
 *
 * @example Look up the error type a status gets in each convention
 * ```ts
 * import { errorTypeOf, ROUTE_CONVENTIONS } from "./conventions.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(ROUTE_CONVENTIONS.messages.convention, "anthropic");
 * assert.equal(errorTypeOf("openai", 402), "insufficient_quota");
 * assert.equal(errorTypeOf("anthropic", 402), "billing_error");
 * assert.equal(errorTypeOf("google", 402), "RESOURCE_EXHAUSTED");
 * ```
 *
 * @module
 */

/** The routes a model can be listed on. */
export type RouteName = "chat" | "messages" | "responses" | "gemini";

/** Error categories of the OpenAI convention (`error.type`). */
export type OpenAIErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "insufficient_quota"
  | "permission_error"
  | "not_found_error"
  | "rate_limit_error"
  | "server_error";

/** Error categories of the Anthropic convention (`error.type`). */
export type AnthropicErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "billing_error"
  | "permission_error"
  | "not_found_error"
  | "request_too_large"
  | "rate_limit_error"
  | "timeout_error"
  | "overloaded_error"
  | "api_error";

/** Error categories of the Google convention (`error.status`, a gRPC code name). */
export type GoogleErrorStatus =
  | "INVALID_ARGUMENT"
  | "UNAUTHENTICATED"
  | "RESOURCE_EXHAUSTED"
  | "PERMISSION_DENIED"
  | "NOT_FOUND"
  | "UNAVAILABLE"
  | "DEADLINE_EXCEEDED"
  | "INTERNAL";

/** The error categories of each provider convention. */
export interface ErrorTypes {
  /** OpenAI's, spoken on the `chat` and `responses` routes. */
  openai: OpenAIErrorType;
  /** Anthropic's, spoken on the `messages` route. */
  anthropic: AnthropicErrorType;
  /** Google's, spoken on the `gemini` route. */
  google: GoogleErrorStatus;
}

/** A provider API convention a route follows. */
export type Convention = keyof ErrorTypes;

/** One convention's error category for each HTTP status. */
export interface ErrorTypeTable<T extends string> {
  /** The statuses the convention names a category for. */
  readonly byStatus: Readonly<Record<number, T>>;
  /** Any other status from 400 to 499. */
  readonly clientError: T;
  /** Any other status from 500 up. */
  readonly serverError: T;
  /** A status below 400, which only a misbehaving upstream sends as an error. */
  readonly notAnError: T;
}

/**
 * Each convention's error category by HTTP status, as its provider documents
 * them; the gateway answers its own errors with these.
 *
 * @example The Anthropic convention names 529
 * ```ts
 * import { ERROR_TYPES } from "./conventions.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(ERROR_TYPES.anthropic.byStatus[529], "overloaded_error");
 * ```
 */
export const ERROR_TYPES: {
  readonly [C in Convention]: ErrorTypeTable<ErrorTypes[C]>;
} = {
  openai: {
    byStatus: {
      401: "authentication_error",
      402: "insufficient_quota",
      403: "permission_error",
      404: "not_found_error",
      429: "rate_limit_error",
    },
    clientError: "invalid_request_error",
    serverError: "server_error",
    notAnError: "server_error",
  },
  anthropic: {
    byStatus: {
      401: "authentication_error",
      402: "billing_error",
      403: "permission_error",
      404: "not_found_error",
      413: "request_too_large",
      429: "rate_limit_error",
      504: "timeout_error",
      529: "overloaded_error",
    },
    clientError: "invalid_request_error",
    serverError: "api_error",
    notAnError: "invalid_request_error",
  },
  google: {
    byStatus: {
      401: "UNAUTHENTICATED",
      402: "RESOURCE_EXHAUSTED",
      403: "PERMISSION_DENIED",
      404: "NOT_FOUND",
      429: "RESOURCE_EXHAUSTED",
      502: "UNAVAILABLE",
      503: "UNAVAILABLE",
      504: "DEADLINE_EXCEEDED",
    },
    clientError: "INVALID_ARGUMENT",
    serverError: "INTERNAL",
    notAnError: "INVALID_ARGUMENT",
  },
};

/**
 * The error category `convention` gives an HTTP status.
 *
 * @param convention The provider convention.
 * @param status HTTP status.
 * @returns The category: the status's own, else the convention's category for
 *   other client errors (4xx), other server errors (5xx and up) or non-errors.
 *
 * @example
 * ```ts
 * import { errorTypeOf } from "./conventions.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(errorTypeOf("openai", 429), "rate_limit_error");
 * assert.equal(errorTypeOf("anthropic", 418), "invalid_request_error");
 * assert.equal(errorTypeOf("google", 500), "INTERNAL");
 * ```
 */
export function errorTypeOf<C extends Convention>(
  convention: C,
  status: number,
): ErrorTypes[C] {
  const table: ErrorTypeTable<ErrorTypes[C]> = ERROR_TYPES[convention];
  const named = table.byStatus[status] as ErrorTypes[C] | undefined;
  if (named !== undefined) return named;
  if (status >= 500) return table.serverError;
  if (status >= 400) return table.clientError;
  return table.notAnError;
}

/**
 * The OpenAI convention's error category of an HTTP status: what a
 * translation into the chat convention reports when the upstream body names
 * none it knows.
 *
 * @param status HTTP status.
 * @returns The category; 5xx and unknown statuses are `server_error`.
 *
 * @example
 * ```ts
 * import { openAIErrorType } from "./conventions.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(openAIErrorType(402), "insufficient_quota");
 * ```
 */
export function openAIErrorType(status: number): OpenAIErrorType {
  return errorTypeOf("openai", status);
}

/** What an error body is written from. */
export interface ErrorFields {
  /** HTTP status. */
  readonly status: number;
  /** Sentence-case message. */
  readonly message: string;
  /** Machine-readable code (OpenAI `code`). */
  readonly code: string;
  /** The request field at fault (OpenAI `param`). */
  readonly param: string | null;
}

/**
 * The JSON body of an error in each convention: OpenAI's
 * `{error:{message,type,param,code}}`, Anthropic's
 * `{type:"error",error:{type,message}}`, Google's
 * `{error:{code,message,status}}`.
 *
 * @example
 * ```ts
 * import { ERROR_BODIES } from "./conventions.ts";
 * import assert from "node:assert/strict";
 *
 * const error = { status: 404, message: "No such model", code: "model_not_found", param: "model" };
 * assert.deepEqual(ERROR_BODIES.anthropic(error), {
 *   type: "error",
 *   error: { type: "not_found_error", message: "No such model" },
 * });
 * ```
 */
export const ERROR_BODIES: {
  readonly [C in Convention]: (error: ErrorFields) => Record<string, unknown>;
} = {
  openai: (error) => ({
    error: {
      message: error.message,
      type: errorTypeOf("openai", error.status),
      param: error.param,
      code: error.code,
    },
  }),
  anthropic: (error) => ({
    type: "error",
    error: {
      type: errorTypeOf("anthropic", error.status),
      message: error.message,
    },
  }),
  google: (error) => ({
    error: {
      code: error.status,
      message: error.message,
      status: errorTypeOf("google", error.status),
    },
  }),
};

/**
 * How a route reports a failure after its stream began: the SSE event name
 * (none: a bare `data:` frame), and what the data holds, the convention's
 * error body or the Responses API's `{type:"error",code,message,param}`.
 */
export interface StreamErrorShape {
  /** The `event:` line, if the convention names its events. */
  readonly event?: "error";
  /** The frame's data. */
  readonly data: "error_body" | "responses_error_event";
}

/** Everything a route's convention fixes. */
export interface RouteConvention {
  /** The provider convention of its bodies, errors and streams. */
  readonly convention: Convention;
  /**
   * Where its calls are answered (POST), as Hono paths under the gateway's
   * root and under `/v1`.
   */
  readonly callPaths: readonly string[];
  /**
   * Where errors speak its convention, as Hono `(method, path)` patterns:
   * its calls, its other endpoints (`count_tokens`) and the unknown paths
   * under them, so an SDK calling an endpoint the gateway lacks reads the
   * 404.
   */
  readonly errorScope: readonly { method: "ALL" | "POST"; path: string }[];
  /** Its in-stream error event. */
  readonly streamError: StreamErrorShape;
}

/**
 * The convention of each route. Gemini SDKs call
 * `{base}/{apiVersion}/models/{model}:{method}`; with the gateway's root or
 * `/v1` as base, both `v1beta` and `v1` land on the Gemini paths.
 *
 * @example
 * ```ts
 * import { ROUTE_CONVENTIONS } from "./conventions.ts";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(ROUTE_CONVENTIONS.chat.callPaths, ["/chat/completions"]);
 * assert.equal(ROUTE_CONVENTIONS.responses.streamError.event, "error");
 * ```
 */
export const ROUTE_CONVENTIONS: Readonly<Record<RouteName, RouteConvention>> = {
  chat: {
    convention: "openai",
    callPaths: ["/chat/completions"],
    errorScope: [{ method: "ALL", path: "/chat/completions" }],
    streamError: { data: "error_body" },
  },
  messages: {
    convention: "anthropic",
    callPaths: ["/messages"],
    errorScope: [{ method: "ALL", path: "/messages/*" }],
    streamError: { event: "error", data: "error_body" },
  },
  responses: {
    convention: "openai",
    callPaths: ["/responses"],
    errorScope: [{ method: "ALL", path: "/responses/*" }],
    streamError: { event: "error", data: "responses_error_event" },
  },
  gemini: {
    convention: "google",
    callPaths: ["/v1beta/models/*", "/models/*"],
    // `GET /models/{id}` is the OpenAI models listing's.
    errorScope: [
      { method: "ALL", path: "/v1beta/*" },
      { method: "POST", path: "/models/*" },
    ],
    streamError: { data: "error_body" },
  },
};

/**
 * The route whose convention errors take where no route matched: OpenAI's,
 * which most clients read.
 */
export const FALLBACK_ROUTE: RouteName = "chat";

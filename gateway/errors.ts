/**
 * Errors the gateway returns, and their shape in each caller convention:
 * OpenAI on `chat` and `responses`, Anthropic on `messages`, Google on `gemini`.
 *
 * @module
 */
import type { ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { RouteName } from "./conventions.ts";

/** A failure the caller is meant to see, with the status it is sent with. */
export class GatewayError extends Error {
  /** HTTP status sent to the caller. */
  readonly status: number;
  /** Machine-readable code (OpenAI `code`), e.g. `"model_not_found"`. */
  readonly code: string;
  /** The request field at fault, if any (OpenAI `param`). */
  readonly param: string | null;
  /** Seconds the caller should wait, sent as `retry-after`. */
  readonly retryAfterSeconds?: number;
  /** Other headers the refusal carries (a retired model's `Sunset` and `Link`). */
  readonly headers?: Readonly<Record<string, string>>;

  /**
   * Creates the error.
   *
   * @param status HTTP status.
   * @param message Sentence-case message, no trailing period.
   * @param options Code, param, retry hint and other headers.
   */
  constructor(
    status: number,
    message: string,
    options: {
      code?: string;
      param?: string | null;
      retryAfterSeconds?: number;
      headers?: Record<string, string>;
    } = {},
  ) {
    super(message);
    this.name = "GatewayError";
    this.status = status;
    this.code = options.code ?? defaultCode(status);
    this.param = options.param ?? null;
    this.retryAfterSeconds = options.retryAfterSeconds;
    if (options.headers) this.headers = options.headers;
  }
}

function defaultCode(status: number): string {
  switch (status) {
    case 400:
      return "invalid_request";
    case 401:
      return "invalid_api_key";
    case 402:
      return "insufficient_credits";
    case 403:
      return "forbidden";
    case 404:
      return "not_found";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limited";
    case 502:
      return "upstream_error";
    case 503:
      return "unavailable";
    case 504:
      return "upstream_timeout";
    default:
      return status >= 500 ? "internal_error" : "error";
  }
}

/** Error categories of the OpenAI convention. */
export type OpenAIErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "insufficient_quota"
  | "permission_error"
  | "not_found_error"
  | "rate_limit_error"
  | "server_error";

/**
 * The OpenAI error type for an HTTP status.
 *
 * @param status HTTP status.
 * @returns The matching type; 5xx and unknown statuses are `server_error`.
 */
export function openAIErrorType(status: number): OpenAIErrorType {
  if (status === 401) return "authentication_error";
  if (status === 402) return "insufficient_quota";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 400 && status < 500) return "invalid_request_error";
  return "server_error";
}

function anthropicType(status: number): string {
  switch (status) {
    case 401:
      return "authentication_error";
    case 402:
      return "billing_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 504:
      return "timeout_error";
    case 529:
      return "overloaded_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

function googleStatus(status: number): string {
  switch (status) {
    case 401:
      return "UNAUTHENTICATED";
    case 402:
    case 429:
      return "RESOURCE_EXHAUSTED";
    case 403:
      return "PERMISSION_DENIED";
    case 404:
      return "NOT_FOUND";
    case 502:
    case 503:
      return "UNAVAILABLE";
    case 504:
      return "DEADLINE_EXCEEDED";
    default:
      return status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT";
  }
}

/**
 * The JSON body of an error in the convention of `route`.
 *
 * @param route The route the caller used.
 * @param error The error to describe.
 * @returns The body to send.
 */
export function errorBody(
  route: RouteName,
  error: GatewayError,
): Record<string, unknown> {
  switch (route) {
    case "messages":
      return {
        type: "error",
        error: { type: anthropicType(error.status), message: error.message },
      };
    case "gemini":
      return {
        error: {
          code: error.status,
          message: error.message,
          status: googleStatus(error.status),
        },
      };
    default:
      return {
        error: {
          message: error.message,
          type: openAIErrorType(error.status),
          param: error.param,
          code: error.code,
        },
      };
  }
}

/**
 * The in-stream error event of `route`'s convention, as SSE text, for a
 * failure after streaming began.
 *
 * @param route The route the caller used.
 * @param error The error to describe.
 * @returns One SSE frame.
 */
export function streamErrorFrame(
  route: RouteName,
  error: GatewayError,
): string {
  const body = errorBody(route, error);
  switch (route) {
    case "messages":
      return `event: error\ndata: ${JSON.stringify(body)}\n\n`;
    case "responses":
      return `event: error\ndata: ${
        JSON.stringify({
          type: "error",
          code: error.code,
          message: error.message,
          param: error.param,
        })
      }\n\n`;
    default:
      return `data: ${JSON.stringify(body)}\n\n`;
  }
}

/**
 * Turns anything thrown into a {@linkcode GatewayError}. Anything else is a
 * bug: a 500 that names the request id for the operator's log and hides
 * what went wrong from the caller.
 *
 * @param error What was thrown.
 * @param requestId The request's id, quoted in the message of a 500.
 * @returns A gateway error.
 */
export function toGatewayError(
  error: unknown,
  requestId?: string,
): GatewayError {
  if (error instanceof GatewayError) return error;
  return new GatewayError(
    500,
    requestId
      ? `Internal gateway error; quote request id "${requestId}" to the operator`
      : "Internal gateway error",
  );
}

/**
 * The response for an error, in the convention of `route`.
 *
 * @param route The route the caller used.
 * @param error The error.
 * @returns A JSON response with the error's status (and `retry-after`, and the error's own headers).
 */
export function errorResponse(route: RouteName, error: GatewayError): Response {
  const headers: Record<string, string> = { ...error.headers };
  if (error.retryAfterSeconds !== undefined) {
    headers["retry-after"] = String(error.retryAfterSeconds);
  }
  return Response.json(errorBody(route, error), {
    status: error.status,
    headers,
  });
}

/**
 * The convention errors on `path` are written in: Anthropic's under
 * `/messages`, Google's under the Gemini model paths, OpenAI's elsewhere.
 *
 * @param path The request path.
 * @returns The route whose convention applies.
 */
export function routeOf(path: string): RouteName {
  if (/\/messages(\/|$)/.test(path)) return "messages";
  if (path.includes("/v1beta/") || /\/models\/.+:/.test(path)) return "gemini";
  if (/\/responses(\/|$)/.test(path)) return "responses";
  return "chat";
}

/**
 * Hono's `onError` for every part of the gateway: a {@linkcode GatewayError}
 * is rendered in the path's convention, a Hono `HTTPException` answers with
 * the response it carries (the admin auth builds it with the same renderer);
 * anything else is logged and becomes a 500 naming the request id.
 *
 * @param log Where the 500s are logged.
 * @returns The error handler.
 */
export function renderErrors(
  log: (record: Record<string, unknown>) => void,
): ErrorHandler {
  return (thrown, c) => {
    // Hono's own middleware (bearer auth, body limit) carries its response.
    if (thrown instanceof HTTPException) return thrown.getResponse();
    const requestId: string | undefined = c.get("requestId");
    if (!(thrown instanceof GatewayError)) {
      log({ level: "error", requestId, message: String(thrown) });
    }
    return errorResponse(
      routeOf(c.req.path),
      toGatewayError(thrown, requestId),
    );
  };
}

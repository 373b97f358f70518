/**
 * Errors the gateway returns, rendered in each caller convention from the
 * tables of `conventions.ts`: OpenAI's on `chat` and `responses`,
 * Anthropic's on `messages`, Google's on `gemini`. The route that matched a
 * request sets its convention on the context ({@linkcode setRoute}); a
 * request no route matched gets OpenAI's.
 *
 * @example Answer a refusal in the Anthropic convention
 * ```ts
 * import { errorResponse, GatewayError } from "./errors.ts";
 * import assert from "node:assert/strict";
 *
 * const response = errorResponse("messages", new GatewayError(402, "Insufficient credits"));
 * assert.equal(response.status, 402);
 * assert.equal((await response.json()).error.type, "billing_error");
 * ```
 *
 * @module
 */
import type { Context, ErrorHandler, MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import {
  ERROR_BODIES,
  FALLBACK_ROUTE,
  ROUTE_CONVENTIONS,
  type RouteName,
} from "./conventions.ts";
import {
  isStoreUnreachable,
  StoreUnavailableError,
} from "./state/store/outage.ts";

/**
 * A failure the caller is meant to see, with the status it is sent with.
 *
 * @example
 * ```ts
 * import { GatewayError } from "./errors.ts";
 * import assert from "node:assert/strict";
 *
 * const error = new GatewayError(404, 'Model "x" does not exist', { param: "model" });
 * assert.equal(error.code, "not_found");
 * ```
 */
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

/** The gateway's own `code` of each status, when the thrower names none. */
const DEFAULT_CODES: Readonly<Record<number, string>> = {
  400: "invalid_request",
  401: "invalid_api_key",
  402: "insufficient_credits",
  403: "forbidden",
  404: "not_found",
  413: "request_too_large",
  429: "rate_limited",
  502: "upstream_error",
  503: "unavailable",
  504: "upstream_timeout",
};

function defaultCode(status: number): string {
  return DEFAULT_CODES[status] ?? (status >= 500 ? "internal_error" : "error");
}

/**
 * The JSON body of an error in the convention of `route`.
 *
 * @param route The route the caller used.
 * @param error The error to describe.
 * @returns The body to send.
 *
 * @example
 * ```ts
 * import { errorBody, GatewayError } from "./errors.ts";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(errorBody("gemini", new GatewayError(404, "No such model")), {
 *   error: { code: 404, message: "No such model", status: "NOT_FOUND" },
 * });
 * ```
 */
export function errorBody(
  route: RouteName,
  error: GatewayError,
): Record<string, unknown> {
  return ERROR_BODIES[ROUTE_CONVENTIONS[route].convention](error);
}

/**
 * The in-stream error event of `route`'s convention, as SSE text, for a
 * failure after streaming began.
 *
 * @param route The route the caller used.
 * @param error The error to describe.
 * @returns One SSE frame.
 *
 * @example
 * ```ts
 * import { GatewayError, streamErrorFrame } from "./errors.ts";
 * import assert from "node:assert/strict";
 *
 * const frame = streamErrorFrame("messages", new GatewayError(502, "Cut off"));
 * assert.equal(
 *   frame,
 *   'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"Cut off"}}\n\n',
 * );
 * ```
 */
export function streamErrorFrame(
  route: RouteName,
  error: GatewayError,
): string {
  const { event, data } = ROUTE_CONVENTIONS[route].streamError;
  const payload = data === "responses_error_event"
    ? {
      type: "error",
      code: error.code,
      message: error.message,
      param: error.param,
    }
    : errorBody(route, error);
  return `${event ? `event: ${event}\n` : ""}data: ${
    JSON.stringify(payload)
  }\n\n`;
}

/**
 * Turns anything thrown into a {@linkcode GatewayError}. A store that
 * stayed unreachable past the wait (`GATEWAY_STORE_WAIT_MS`) is a 503 with
 * `retry-after: 5`; any other sign of an unreachable store (a commit whose
 * answer a dropped connection lost, where the domain cannot tell whether to
 * repeat it) a 503 with `retry-after: 1`. Anything else is a bug: a 500 that names the request id
 * for the operator's log and hides what went wrong from the caller.
 *
 * @param error What was thrown.
 * @param requestId The request's id, quoted in the message of a 500.
 * @returns A gateway error.
 *
 * @example
 * ```ts
 * import { toGatewayError } from "./errors.ts";
 * import assert from "node:assert/strict";
 *
 * const error = toGatewayError(new TypeError("x is undefined"), "req_1");
 * assert.equal(error.status, 500);
 * assert.match(error.message, /req_1/);
 * ```
 */
export function toGatewayError(
  error: unknown,
  requestId?: string,
): GatewayError {
  if (error instanceof GatewayError) return error;
  if (error instanceof StoreUnavailableError) {
    return new GatewayError(503, error.message, {
      code: "store_unavailable",
      retryAfterSeconds: error.retryAfterSeconds,
    });
  }
  if (isStoreUnreachable(error)) {
    return new GatewayError(
      503,
      "The gateway's store is unreachable; retry shortly",
      { code: "store_unavailable", retryAfterSeconds: 1 },
    );
  }
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
 *
 * @example
 * ```ts
 * import { errorResponse, GatewayError } from "./errors.ts";
 * import assert from "node:assert/strict";
 *
 * const response = errorResponse(
 *   "chat",
 *   new GatewayError(429, "Slow down", { retryAfterSeconds: 3 }),
 * );
 * assert.equal(response.headers.get("retry-after"), "3");
 * ```
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

/** What {@linkcode setRoute} puts on the context. */
export type RouteEnv = { Variables: { route?: RouteName } };

/**
 * Middleware that says which route a request is on, so its errors are
 * rendered in that route's convention (by {@linkcode renderErrors}, or
 * {@linkcode errorRouteOf} in a not-found handler).
 *
 * @param route The route of the paths it is registered on.
 * @returns The middleware.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { GatewayError, renderErrors, setRoute } from "./errors.ts";
 * import assert from "node:assert/strict";
 *
 * const app = new Hono();
 * app.onError(renderErrors(console.error));
 * app.use("/messages/*", setRoute("messages"));
 * app.post("/messages", () => {
 *   throw new GatewayError(429, "Slow down");
 * });
 * const response = await app.request("/messages", { method: "POST" });
 * assert.equal((await response.json()).type, "error");
 * ```
 */
export function setRoute(route: RouteName): MiddlewareHandler<RouteEnv> {
  return async (c, next) => {
    c.set("route", route);
    await next();
  };
}

/**
 * The route whose convention a request's errors are written in: the one
 * {@linkcode setRoute} set, else OpenAI's `chat`.
 *
 * @param c The request's context.
 * @returns The route.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { errorRouteOf } from "./errors.ts";
 * import assert from "node:assert/strict";
 *
 * const app = new Hono().get("/x", (c) => c.text(errorRouteOf(c)));
 * assert.equal(await (await app.request("/x")).text(), "chat");
 * ```
 */
export function errorRouteOf(c: Context): RouteName {
  return (c as Context<RouteEnv>).get("route") ?? FALLBACK_ROUTE;
}

/**
 * Hono's `onError` for every part of the gateway: a {@linkcode GatewayError}
 * is rendered in the convention of the request's route, a Hono
 * `HTTPException` answers with the response it carries (the admin auth
 * builds it with the same renderer); anything else is logged and becomes a
 * 500 naming the request id.
 *
 * @param log Where the 500s are logged.
 * @returns The error handler.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { renderErrors } from "./errors.ts";
 * import assert from "node:assert/strict";
 *
 * const app = new Hono();
 * app.onError(renderErrors(() => {}));
 * app.get("/boom", () => {
 *   throw new Error("bug");
 * });
 * const response = await app.request("/boom");
 * assert.equal(response.status, 500);
 * assert.equal((await response.json()).error.type, "server_error");
 * ```
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
    return errorResponse(errorRouteOf(c), toGatewayError(thrown, requestId));
  };
}

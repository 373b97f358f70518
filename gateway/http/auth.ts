/**
 * Who may call: caller keys on the inference and caller routes, the admin
 * token on `/admin` and `/metrics`. Both are Hono middleware that read only
 * the headers, so a request without a valid key is refused before its body
 * is read.
 *
 * @module
 */
import type { Context, MiddlewareHandler } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import { errorResponse, errorRouteOf, GatewayError } from "../errors.ts";
import type { Caller, CallerAuthenticator } from "../state/callers.ts";

/** What the caller middleware puts on the context. */
export type CallerEnv = { Variables: { caller: Caller } };

/**
 * The token of an `Authorization: Bearer <token>` header.
 *
 * @param headers The request headers.
 * @returns The token, or `undefined`.
 *
 * @example
 * ```ts
 * import { bearerToken } from "./auth.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(bearerToken(new Headers({ authorization: "Bearer mk-1" })), "mk-1");
 * assert.equal(bearerToken(new Headers({ authorization: "Basic eDp5" })), undefined);
 * ```
 */
export function bearerToken(headers: Headers): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(headers.get("authorization") ?? "");
  return match?.[1].trim() || undefined;
}

/**
 * The caller's key from `Authorization: Bearer`, `x-api-key` or
 * `x-goog-api-key` (what the official SDKs send).
 *
 * @param headers The request headers.
 * @returns The key, or `undefined`.
 *
 * @example
 * ```ts
 * import { callerSecret } from "./auth.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(callerSecret(new Headers({ "x-goog-api-key": "mk-1" })), "mk-1");
 * ```
 */
export function callerSecret(headers: Headers): string | undefined {
  return bearerToken(headers) || headers.get("x-api-key")?.trim() ||
    headers.get("x-goog-api-key")?.trim() || undefined;
}

/**
 * Middleware that authenticates the caller from the headers and sets
 * `c.get("caller")`; a missing or unknown key is a 401 in the route's
 * convention (through the app's error handler).
 *
 * @param callers Looks a caller up by key.
 * @returns The middleware.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { callerAuth, type CallerEnv } from "./auth.ts";
 * import { renderErrors } from "../errors.ts";
 * import assert from "node:assert/strict";
 *
 * const callers = {
 *   authenticate: (secret: string) =>
 *     Promise.resolve(secret === "mk-1" ? { id: "c1", name: "Ada" } : null),
 * };
 * const app = new Hono<CallerEnv>();
 * app.onError(renderErrors(console.error));
 * app.get("/me", callerAuth(callers), (c) => c.text(c.get("caller").name));
 * const me = await app.request("/me", { headers: { "x-api-key": "mk-1" } });
 * assert.equal(await me.text(), "Ada");
 * assert.equal((await app.request("/me")).status, 401);
 * ```
 */
export function callerAuth(
  callers: CallerAuthenticator,
): MiddlewareHandler<CallerEnv> {
  return async (c, next) => {
    const secret = callerSecret(c.req.raw.headers);
    if (!secret) {
      throw new GatewayError(
        401,
        'Missing API key: send it as "Authorization: Bearer <key>", "x-api-key" or "x-goog-api-key"',
      );
    }
    const caller = await callers.authenticate(secret);
    if (!caller) throw new GatewayError(401, "Invalid API key");
    c.set("caller", caller);
    await next();
  };
}

/**
 * Middleware for the admin API: Hono's bearer auth against `token`
 * (compared in constant time), errors in the OpenAI convention. Without a
 * token every request is refused with 403: the admin API is off.
 *
 * @param token `GATEWAY_ADMIN_TOKEN`.
 * @returns The middleware.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { adminAuth } from "./auth.ts";
 * import assert from "node:assert/strict";
 *
 * const app = new Hono().get("/admin", adminAuth("s3cret"), (c) => c.text("ok"));
 * const refused = await app.request("/admin", { headers: { authorization: "Bearer nope" } });
 * assert.equal(refused.status, 401);
 * assert.equal((await refused.json()).error.code, "invalid_admin_token");
 * ```
 */
export function adminAuth(token: string | undefined): MiddlewareHandler {
  if (!token) {
    return () => {
      throw new GatewayError(
        403,
        "The admin API is disabled: set GATEWAY_ADMIN_TOKEN to enable it",
        { code: "admin_disabled" },
      );
    };
  }
  const refuse = (message: string, code: string) => (c: Context) =>
    errorResponse(errorRouteOf(c), new GatewayError(401, message, { code }));
  return bearerAuth({
    token,
    noAuthenticationHeader: {
      message: refuse("Missing admin token", "missing_admin_token"),
    },
    invalidAuthenticationHeader: {
      message: refuse(
        'Malformed admin token: send "Authorization: Bearer <token>"',
        "invalid_admin_token",
      ),
    },
    invalidToken: {
      message: refuse("Invalid admin token", "invalid_admin_token"),
    },
  });
}

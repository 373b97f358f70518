/**
 * The inference routes: a call on `chat`, `messages`, `responses` and
 * `gemini`, token counting on `messages` and `gemini`, and creating a
 * Responses conversation. The work of a call is in `call/`.
 *
 * @module
 */
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { handleCall } from "../call/call.ts";
import type { CallDeps, CallRequest } from "../call/deps.ts";
import { jsonObject } from "../call/input.ts";
import { countTokens } from "../call/count_tokens.ts";
import { createConversation } from "../call/conversations.ts";
import { modelPathOf } from "./_path.ts";
import { GatewayError } from "../errors.ts";
import type { GatewayEnv } from "./_env.ts";
import type { CallerEnv } from "./auth.ts";
import type { BodyEnv } from "./body_guard.ts";
import { ROUTE_CONVENTIONS, type RouteName } from "../conventions.ts";

/** The routes whose calls take the route from their path alone. */
const PLAIN_CALL_ROUTES: readonly RouteName[] = [
  "chat",
  "messages",
  "responses",
];

/** The middleware every inference route runs before its handler. */
export interface CallGuards {
  /** Authenticates the caller from the headers (sets `c.get("caller")`). */
  authenticate: MiddlewareHandler<CallerEnv>;
  /**
   * Refuses, before the body is parsed, what the headers, the balance, the
   * limits and the body's first pieces can refuse, bounds each caller's
   * bytes in flight, and reads the body within the size limit
   * (`body_guard.ts`); given the route of a call that holds credit.
   */
  readBody: (route?: RouteName) => MiddlewareHandler<BodyEnv>;
}

/**
 * Creates the inference routes, relative to where they are mounted.
 *
 * @param deps What a call needs (billing, limits, key pool, catalog, providers).
 * @param guards The caller check and the body's guard.
 * @returns A Hono app to mount at the gateway's root and under `/v1`.
 */
export function callRoutes(
  deps: CallDeps,
  guards: CallGuards,
): Hono<GatewayEnv> {
  const { authenticate, readBody } = guards;
  const api = new Hono<GatewayEnv>();
  const run =
    (route: RouteName, extra: Partial<CallRequest> = {}) =>
    (c: Context<GatewayEnv>) => {
      const request: CallRequest = {
        route,
        caller: c.get("caller"),
        headers: c.req.raw.headers,
        bodyText: c.get("body").text,
        floorTokens: c.get("body").floorTokens,
        query: c.req.query(),
        signal: c.req.raw.signal,
        requestId: c.get("requestId"),
        traceId: c.get("traceId"),
        ...extra,
      };
      return handleCall(deps, request);
    };
  for (const route of PLAIN_CALL_ROUTES) {
    for (const path of ROUTE_CONVENTIONS[route].callPaths) {
      api.post(path, authenticate, readBody(route), (c) => run(route)(c));
    }
  }
  // A Responses conversation, pinned to the key that created it.
  api.post(
    "/conversations",
    authenticate,
    readBody(),
    (c) =>
      createConversation(deps, {
        body: jsonObject(c.get("body").text),
        caller: c.get("caller"),
        signal: c.req.raw.signal,
        requestId: c.get("requestId"),
      }),
  );
  api.post(
    "/messages/count_tokens",
    authenticate,
    readBody(),
    (c) => {
      const body = jsonObject(c.get("body").text);
      if (typeof body.model !== "string" || body.model === "") {
        throw new GatewayError(400, 'Invalid "model": expected a model id', {
          param: "model",
        });
      }
      return countTokens(deps, {
        route: "messages",
        model: body.model,
        body,
        headers: c.req.raw.headers,
        caller: c.get("caller"),
        signal: c.req.raw.signal,
        requestId: c.get("requestId"),
      });
    },
  );
  // The model and the method (`generateContent`, `streamGenerateContent`,
  // `countTokens`) are in the path: `{base}/{apiVersion}/models/{model}:{method}`.
  const geminiCall = async (c: Context<GatewayEnv>) => {
    const path = c.req.path;
    const target = modelPathOf(path);
    const colon = target.lastIndexOf(":");
    const method = target.slice(colon + 1);
    if (colon > 0 && method === "countTokens") {
      return countTokens(deps, {
        route: "gemini",
        model: target.slice(0, colon),
        body: jsonObject(c.get("body").text),
        headers: c.req.raw.headers,
        caller: c.get("caller"),
        signal: c.req.raw.signal,
        requestId: c.get("requestId"),
      });
    }
    if (
      colon < 1 ||
      (method !== "generateContent" && method !== "streamGenerateContent")
    ) {
      throw new GatewayError(
        404,
        `Unknown Gemini method "${target}"; use :generateContent, :streamGenerateContent or :countTokens`,
      );
    }
    return await run("gemini", {
      pathModel: target.slice(0, colon),
      pathStream: method === "streamGenerateContent",
    })(c);
  };
  // Counting tokens holds no credit: its body is read without a call's
  // refusals.
  const geminiCallBody = readBody("gemini");
  const geminiCountBody = readBody();
  const geminiBody: MiddlewareHandler<BodyEnv> = (c, next) =>
    (modelPathOf(c.req.path).endsWith(":countTokens")
      ? geminiCountBody
      : geminiCallBody)(c, next);
  for (const path of ROUTE_CONVENTIONS.gemini.callPaths) {
    api.post(path, authenticate, geminiBody, geminiCall);
  }
  return api;
}

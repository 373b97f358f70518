/**
 * What the gateway's middleware puts on a request's context, shared by the
 * route groups. Private to the HTTP layer.
 *
 * @module
 */
import type { CallerEnv } from "./auth.ts";
import type { BodyEnv } from "./body_guard.ts";
import type { RouteEnv } from "../errors.ts";

/**
 * The gateway's Hono environment: the request and trace ids, the caller once
 * authenticated, the body once read, and the route whose convention errors
 * take once a route matched.
 */
export type GatewayEnv = {
  Variables:
    & { requestId: string; traceId: string }
    & CallerEnv["Variables"]
    & BodyEnv["Variables"]
    & RouteEnv["Variables"];
};

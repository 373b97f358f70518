/**
 * What the gateway's middleware puts on a request's context, shared by the
 * route groups. Private to the HTTP layer.
 *
 * @module
 */
import type { CallerEnv } from "./auth.ts";

/** The gateway's Hono environment: the request and trace ids, and the caller once authenticated. */
export type GatewayEnv = {
  Variables: { requestId: string; traceId: string } & CallerEnv["Variables"];
};

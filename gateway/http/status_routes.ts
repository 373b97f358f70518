/**
 * The operator's view of a running gateway: `GET /health` and `GET /metrics`
 * (Prometheus text, behind the admin token).
 *
 * @module
 */
import { Hono } from "hono";
import { adminAuth } from "./auth.ts";
import type { GatewayMetrics } from "../observe/metrics.ts";
import type { GatewayEnv } from "./_env.ts";
import type { StoreStatus } from "../state/store/outage.ts";

/**
 * The Prometheus text exposition of `metrics`.
 *
 * @param metrics The gateway's metrics.
 * @returns The response to send.
 *
 * @example
 * ```ts
 * import { metricsResponse } from "./status_routes.ts";
 * import { createMetrics } from "../observe/metrics.ts";
 * import assert from "node:assert/strict";
 *
 * const response = await metricsResponse(createMetrics(() => []));
 * assert.match(response.headers.get("content-type") ?? "", /^text\/plain/);
 * ```
 */
export async function metricsResponse(
  metrics: GatewayMetrics,
): Promise<Response> {
  const { body, contentType } = await metrics.render();
  return new Response(body, { headers: { "content-type": contentType } });
}

/**
 * Creates the status routes, relative to where they are mounted.
 *
 * @param metrics The gateway's metrics.
 * @param adminToken `GATEWAY_ADMIN_TOKEN`, which `/metrics` wants.
 * @param store Whether the store answers (`storeStatus`), for `/health`; default always.
 * @returns A Hono app to mount at the gateway's root and under `/v1`.
 *
 * @example
 * ```ts
 * import { statusRoutes } from "./status_routes.ts";
 * import { createMetrics } from "../observe/metrics.ts";
 * import assert from "node:assert/strict";
 *
 * const routes = statusRoutes(createMetrics(() => []), "s3cret");
 * assert.deepEqual(await (await routes.request("/health")).json(), { ok: true });
 * assert.equal((await routes.request("/metrics")).status, 401);
 * ```
 */
export function statusRoutes(
  metrics: GatewayMetrics,
  adminToken: string | undefined,
  store: () => StoreStatus = () => ({ reachable: true, waitMs: 0 }),
): Hono<GatewayEnv> {
  const api = new Hono<GatewayEnv>();
  // Never waits for the store: while it is unreachable the answer says so,
  // 200 while calls still wait for it, 503 once they are refused.
  api.get("/health", (c) => {
    const status = store();
    if (status.reachable) return c.json({ ok: true });
    const waiting = (status.downForMs ?? 0) < status.waitMs;
    return c.json(
      {
        ok: waiting,
        store: {
          reachable: false,
          down_for_ms: status.downForMs,
          wait_ms: status.waitMs,
        },
      },
      waiting ? 200 : 503,
      waiting ? {} : { "retry-after": "5" },
    );
  });
  // Prometheus scrapes with the admin token (`bearer_token` in its config).
  api.get("/metrics", adminAuth(adminToken), () => metricsResponse(metrics));
  return api;
}

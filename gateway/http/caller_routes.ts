/**
 * A caller's own account: `GET /credits`, `GET /usage` and `GET /traces`,
 * each behind the caller's key.
 *
 * @module
 */
import { Hono, type MiddlewareHandler } from "hono";
import { usageReport } from "../state/usage_report.ts";
import { microsToUsd } from "../state/credits/money.ts";
import { tracesResponse } from "../state/traces.ts";
import type { Billing } from "../state/credits/billing.ts";
import type { GatewayEnv } from "./_env.ts";
import type { CallerEnv } from "./auth.ts";

/**
 * Creates the caller's account routes, relative to where they are mounted.
 *
 * @param kv The gateway's state.
 * @param billing The balances, whose reads wait for the caller's queued settlements.
 * @param authenticate The caller check (sets `c.get("caller")`).
 * @returns A Hono app to mount at the gateway's root and under `/v1`.
 *
 * @example
 * ```ts
 * import { callerRoutes } from "./caller_routes.ts";
 * import { callerAuth } from "./auth.ts";
 * import { createBilling } from "../state/credits/billing.ts";
 * import { createCaller, createCallerAuthenticator } from "../state/callers.ts";
 * import assert from "node:assert/strict";
 *
 * const kv = await Deno.openKv(":memory:");
 * const billing = createBilling(kv);
 * const ada = await createCaller(kv, { name: "Ada", creditsMicros: 5_000_000 });
 * const routes = callerRoutes(kv, billing, callerAuth(createCallerAuthenticator(kv)));
 * const credits = await routes.request("/credits", {
 *   headers: { authorization: `Bearer ${ada.key}` },
 * });
 * assert.deepEqual(await credits.json(), { balance: 5, currency: "USD" });
 * await billing.flush();
 * kv.close();
 * ```
 */
export function callerRoutes(
  kv: Deno.Kv,
  billing: Billing,
  authenticate: MiddlewareHandler<CallerEnv>,
): Hono<GatewayEnv> {
  const api = new Hono<GatewayEnv>();
  api.get("/credits", authenticate, async (c) =>
    c.json({
      balance: microsToUsd(await billing.balance(c.get("caller").id)),
      currency: "USD",
    }));
  // The caller's own usage over a range (the activity page reads it).
  api.get("/usage", authenticate, async (c) => {
    const id = c.get("caller").id;
    await billing.balance(id); // after this caller's pending settlements
    return c.json(
      await usageReport(kv, c.req.query("range") ?? "24h", { callerId: id }),
    );
  });
  api.get("/traces", authenticate, async (c) => {
    // Non-streamed calls are answered before their charge and trace commit
    // (write-behind); reading the balance queues behind the caller's pending
    // settlements, so the listing includes every call already answered.
    await billing.balance(c.get("caller").id);
    return c.json(
      await tracesResponse(
        kv,
        c.get("caller"),
        new URL(c.req.url).searchParams,
      ),
    );
  });
  return api;
}

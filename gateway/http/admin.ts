/**
 * The admin API: caller keys (create, list, show, set limits, top up,
 * revoke), the provider keys' health, the models served (list, put, remove
 * at run time) and the console's reads (usage by caller, the trace browser).
 * Mounted by the gateway under `/admin` (and `/v1/admin`), guarded by
 * `GATEWAY_ADMIN_TOKEN`. Amounts on the wire are USD numbers.
 *
 * @example Mount it
 * ```ts
 * import { Hono } from "hono";
 * import { createAdminRoutes } from "./admin.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const app = new Hono().route("/admin", createAdminRoutes({ kv, adminToken: "s3cret" }));
 * const response = await app.request("/admin/keys", { headers: { authorization: "Bearer s3cret" } });
 * kv.close();
 * ```
 *
 * @module
 */

import { Hono } from "hono";
import type { Context } from "hono";
import { z } from "zod";
import { firstIssue } from "../_zod.ts";
import { adminAuth } from "./auth.ts";
import {
  type CallerInfo,
  createCaller,
  getCaller,
  listCallers,
  revokeCaller,
  setCallerLimits,
} from "../state/callers.ts";
import { type CallerLimits, limitsSchema } from "../state/limits/limits.ts";
import { BalanceRangeError, topUp } from "../state/credits/ledger.ts";
import {
  MAX_BALANCE_MICROS,
  microsToUsd,
  usdToMicros,
} from "../state/credits/money.ts";
import { GatewayError, renderErrors } from "../errors.ts";
import { modelPathOf } from "./_path.ts";
import { browseTraces } from "./console/data.ts";
import { usageReport } from "../state/usage_report.ts";
import { CatalogEntryError } from "../state/catalog.ts";
import { putModel, removeModel } from "../state/live_catalog.ts";
import type { CatalogEntry } from "../state/catalog.ts";
import type { KeyHealth } from "../upstream/key_pool.ts";
import { storeStatus } from "../state/store/mod.ts";
import { StoreUnavailableError } from "../state/store/outage.ts";

/** Options of {@linkcode createAdminRoutes}. */
export interface AdminRoutesOptions {
  /** The gateway's KV. */
  kv: Deno.Kv;
  /** `GATEWAY_ADMIN_TOKEN`; unset or empty disables every admin route (403). */
  adminToken?: string;
  /** Where failures are logged; defaults to JSON lines on stderr. */
  log?: (record: Record<string, unknown>) => void;
  /** The provider keys' health, for `GET /provider-keys`; absent: an empty list. */
  keyHealth?: () => KeyHealth[];
  /** The catalog this process serves, for `GET /models`. */
  catalog?: () => CatalogEntry[];
}

const MAX_USD = microsToUsd(MAX_BALANCE_MICROS);

const createKeySchema = z.object({
  name: z.string().trim().min(1).max(200),
  credits: z.number().finite().min(0).max(MAX_USD).default(0),
  limits: limitsSchema.optional(),
});

const limitsBodySchema = z.object({ limits: limitsSchema.nullable() });

const creditsSchema = z.object({
  amount: z.number().finite().min(-MAX_USD).max(MAX_USD).refine(
    (amount) => Math.abs(amount) >= 0.000001,
    {
      message: "Expected at least one micro-USD (0.000001) either way",
    },
  ),
});

/** The 404 for a caller key id the store does not hold. */
function keyNotFound(id: string): GatewayError {
  return new GatewayError(404, `Caller key "${id}" not found`, {
    code: "key_not_found",
  });
}

async function readJson(c: Context): Promise<unknown> {
  try {
    return await c.req.json();
  } catch {
    throw new GatewayError(400, "Request body is not valid JSON", {
      code: "invalid_json",
    });
  }
}

async function readBody<T>(c: Context, schema: z.ZodType<T>): Promise<T> {
  const parsed = schema.safeParse(await readJson(c));
  if (!parsed.success) {
    const { param, message } = firstIssue(parsed.error);
    throw new GatewayError(
      400,
      `Invalid ${param ? `"${param}"` : "body"}: ${message}`,
      { code: "invalid_value", param: param || null },
    );
  }
  return parsed.data;
}

function wireCaller(caller: CallerInfo): {
  id: string;
  name: string;
  balance: number;
  created_at: string;
  limits: CallerLimits | null;
} {
  return {
    id: caller.id,
    name: caller.name,
    balance: microsToUsd(caller.balanceMicros),
    created_at: new Date(caller.createdAt).toISOString(),
    limits: caller.limits ?? null,
  };
}

/**
 * Creates the admin routes, relative to where they are mounted:
 * `POST /keys {name, credits, limits?}` → 201 `{id, key, name, balance, limits}`;
 * `GET /keys`; `GET /keys/{id}`; `PATCH /keys/{id} {limits}`;
 * `POST /keys/{id}/credits {amount}` → `{balance}`; `DELETE /keys/{id}`;
 * `GET /provider-keys`; `GET /models`; `PUT /models/{id}`;
 * `DELETE /models/{id}`; `GET /usage?range=&caller=`; `GET /traces`. Every
 * route wants `Authorization: Bearer <admin token>`, compared in constant
 * time; caller keys are refused. Errors are `{error:{message,type,param,code}}`
 * with 400, 401, 403 or 404.
 *
 * @param options The KV, the admin token, and where the key health and catalog are read.
 * @returns A Hono app to mount with `app.route("/admin", …)`.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { createAdminRoutes } from "./admin.ts";
 * import assert from "node:assert/strict";
 *
 * const kv = await Deno.openKv(":memory:");
 * const app = new Hono().route("/admin", createAdminRoutes({ kv, adminToken: "s3cret" }));
 * const created = await app.request("/admin/keys", {
 *   method: "POST",
 *   headers: { authorization: "Bearer s3cret", "content-type": "application/json" },
 *   body: JSON.stringify({ name: "Ada", credits: 5 }),
 * });
 * assert.equal(created.status, 201);
 * assert.equal((await created.json()).balance, 5);
 * kv.close();
 * ```
 */
export function createAdminRoutes(options: AdminRoutesOptions): Hono {
  const { kv } = options;
  const admin = new Hono();
  admin.onError(
    renderErrors(
      options.log ?? ((record) => console.error(JSON.stringify(record))),
    ),
  );
  admin.use(adminAuth(options.adminToken));
  // An operator is answered at once while the store is unreachable, not
  // after a call's wait for it (GATEWAY_STORE_WAIT_MS).
  admin.use(async (_c, next) => {
    const store = storeStatus(kv);
    if (!store.reachable) {
      throw new StoreUnavailableError(store.downForMs ?? 0);
    }
    await next();
  });

  admin.post("/keys", async (c) => {
    const body = await readBody(c, createKeySchema);
    const created = await createCaller(kv, {
      name: body.name,
      creditsMicros: usdToMicros(body.credits),
      limits: body.limits,
    });
    return c.json(
      {
        id: created.id,
        key: created.key,
        name: created.name,
        balance: microsToUsd(created.balanceMicros),
        limits: created.limits ?? null,
      },
      201,
    );
  });

  admin.get("/provider-keys", (c) =>
    c.json({
      object: "list",
      data: (options.keyHealth?.() ?? []).map((key) => ({
        ...key,
        ...(key.coolUntil === undefined
          ? {}
          : { coolUntil: new Date(key.coolUntil).toISOString() }),
      })),
    }));

  admin.get(
    "/models",
    (c) => c.json({ object: "list", data: options.catalog?.() ?? [] }),
  );

  admin.put("/models/*", async (c) => {
    const id = modelPathOf(c.req.path);
    const body = await readJson(c);
    const raw = { ...(body as Record<string, unknown>), id };
    try {
      return c.json(await putModel(kv, raw));
    } catch (error) {
      if (error instanceof CatalogEntryError) {
        throw new GatewayError(400, error.message, {
          code: "invalid_value",
          param: error.field || null,
        });
      }
      throw error;
    }
  });

  admin.delete("/models/*", async (c) => {
    const id = modelPathOf(c.req.path);
    await removeModel(kv, id);
    return c.json({ id, deleted: true });
  });

  // The console's data: usage over a range, and the trace browser.
  admin.get("/usage", async (c) =>
    c.json(
      await usageReport(kv, c.req.query("range") ?? "24h", {
        callerId: c.req.query("caller") || undefined,
        byCaller: true,
      }),
    ));
  admin.get("/traces", async (c) =>
    c.json({
      object: "list",
      ...await browseTraces(kv, new URL(c.req.url).searchParams),
    }));

  admin.get("/keys", async (c) => {
    const callers = await listCallers(kv);
    return c.json({ object: "list", data: callers.map(wireCaller) });
  });

  admin.get("/keys/:id", async (c) => {
    const caller = await getCaller(kv, c.req.param("id"));
    if (caller === null) throw keyNotFound(c.req.param("id"));
    return c.json(wireCaller(caller));
  });

  admin.patch("/keys/:id", async (c) => {
    const id = c.req.param("id");
    const body = await readBody(c, limitsBodySchema);
    const caller = await setCallerLimits(kv, id, body.limits);
    if (caller === null) throw keyNotFound(id);
    return c.json(wireCaller(caller));
  });

  admin.post("/keys/:id/credits", async (c) => {
    const id = c.req.param("id");
    const body = await readBody(c, creditsSchema);
    try {
      const balance = await topUp(kv, id, usdToMicros(body.amount));
      return c.json({ balance: microsToUsd(balance) });
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) throw keyNotFound(id);
      if (error instanceof BalanceRangeError) {
        throw new GatewayError(400, error.message, {
          code: "invalid_value",
          param: "amount",
        });
      }
      throw error;
    }
  });

  admin.delete("/keys/:id", async (c) => {
    const id = c.req.param("id");
    if (!(await revokeCaller(kv, id))) throw keyNotFound(id);
    return c.json({ id, deleted: true });
  });

  return admin;
}

/**
 * The admin API: create, list, show, top up and revoke caller keys. Mounted
 * by the gateway under `/admin` (and `/v1/admin`), guarded by
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

import { timingSafeEqual } from "node:crypto";
import { Hono } from "hono";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";
import {
  type CallerInfo,
  createCaller,
  getCaller,
  listCallers,
  revokeCaller,
} from "./callers.ts";
import { topUp } from "./credits/ledger.ts";
import { microsToUsd, usdToMicros } from "./credits/money.ts";

/** Options of {@linkcode createAdminRoutes}. */
export interface AdminRoutesOptions {
  /** The gateway's KV. */
  kv: Deno.Kv;
  /** `GATEWAY_ADMIN_TOKEN`; unset or empty disables every admin route (403). */
  adminToken?: string;
}

// Beyond this an amount in micro-USD is no longer a safe integer.
const MAX_USD = 1_000_000_000;

const createKeySchema = z.object({
  name: z.string().trim().min(1).max(200),
  credits: z.number().finite().min(0).max(MAX_USD).default(0),
});

const creditsSchema = z.object({
  amount: z.number().finite().min(-MAX_USD).max(MAX_USD).refine(
    (amount) => Math.abs(amount) >= 0.000001,
    {
      message: "Expected at least one micro-USD (0.000001) either way",
    },
  ),
});

const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  500: "server_error",
};

/** Stops the request with an OpenAI-shaped error body. */
function fail(
  status: ContentfulStatusCode,
  message: string,
  options: { code: string; param?: string },
): never {
  const body = {
    error: {
      message,
      type: ERROR_TYPES[status] ?? "invalid_request_error",
      param: options.param ?? null,
      code: options.code,
    },
  };
  throw new HTTPException(status, {
    message,
    res: Response.json(body, { status }),
  });
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
}

async function readBody<T>(c: Context, schema: z.ZodType<T>): Promise<T> {
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch {
    fail(400, "Request body is not valid JSON", { code: "invalid_json" });
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const param = issue.path.map(String).join(".") || undefined;
    fail(400, `Invalid ${param ? `"${param}"` : "body"}: ${issue.message}`, {
      code: "invalid_value",
      param,
    });
  }
  return parsed.data;
}

function wireCaller(
  caller: CallerInfo,
): { id: string; name: string; balance: number; created_at: number } {
  return {
    id: caller.id,
    name: caller.name,
    balance: microsToUsd(caller.balanceMicros),
    created_at: Math.floor(caller.createdAt / 1000),
  };
}

/**
 * Creates the admin routes, relative to where they are mounted:
 * `POST /keys {name, credits}` → 201 `{id, key, name, balance}`;
 * `GET /keys`; `GET /keys/{id}`; `POST /keys/{id}/credits {amount}` → `{balance}`;
 * `DELETE /keys/{id}`. Every route wants `Authorization: Bearer <admin token>`,
 * compared in constant time; caller keys are refused. Errors are
 * `{error:{message,type,param,code}}` with 400, 401, 403 or 404.
 *
 * @param options The KV and the admin token.
 * @returns A Hono app to mount with `app.route("/admin", …)`.
 */
export function createAdminRoutes(options: AdminRoutesOptions): Hono {
  const { kv } = options;
  const expected = options.adminToken ? sha256(options.adminToken) : null;
  const admin = new Hono();

  admin.onError((error, c) => {
    if (error instanceof HTTPException) return error.getResponse();
    console.error(
      JSON.stringify({
        level: "error",
        message: "Admin route failed",
        path: c.req.path,
        error: String(error),
      }),
    );
    return c.json(
      {
        error: {
          message: "Internal gateway error",
          type: "server_error",
          param: null,
          code: "internal_error",
        },
      },
      500,
    );
  });

  admin.use(async (c, next) => {
    if (expected === null) {
      fail(
        403,
        "The admin API is disabled: set GATEWAY_ADMIN_TOKEN to enable it",
        { code: "admin_disabled" },
      );
    }
    const match = /^Bearer\s+(.+)$/i.exec(c.req.header("authorization") ?? "");
    if (match === null) {
      fail(401, "Missing admin token", { code: "missing_admin_token" });
    }
    // Hashing first gives both sides the same length, so the comparison
    // takes the same time whatever the presented token is.
    if (!timingSafeEqual(await sha256(match[1].trim()), await expected)) {
      fail(401, "Invalid admin token", { code: "invalid_admin_token" });
    }
    await next();
  });

  admin.post("/keys", async (c) => {
    const body = await readBody(c, createKeySchema);
    const created = await createCaller(kv, {
      name: body.name,
      creditsMicros: usdToMicros(body.credits),
    });
    return c.json(
      {
        id: created.id,
        key: created.key,
        name: created.name,
        balance: microsToUsd(created.balanceMicros),
      },
      201,
    );
  });

  admin.get("/keys", async (c) => {
    const callers = await listCallers(kv);
    return c.json({ object: "list", data: callers.map(wireCaller) });
  });

  admin.get("/keys/:id", async (c) => {
    const caller = await getCaller(kv, c.req.param("id"));
    if (caller === null) {
      fail(404, `Caller key "${c.req.param("id")}" not found`, {
        code: "key_not_found",
      });
    }
    return c.json(wireCaller(caller));
  });

  admin.post("/keys/:id/credits", async (c) => {
    const id = c.req.param("id");
    const body = await readBody(c, creditsSchema);
    try {
      const balance = await topUp(kv, id, usdToMicros(body.amount));
      return c.json({ balance: microsToUsd(balance) });
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) {
        fail(404, `Caller key "${id}" not found`, { code: "key_not_found" });
      }
      if (error instanceof RangeError) {
        fail(400, error.message, { code: "invalid_value", param: "amount" });
      }
      throw error;
    }
  });

  admin.delete("/keys/:id", async (c) => {
    const id = c.req.param("id");
    if (!(await revokeCaller(kv, id))) {
      fail(404, `Caller key "${id}" not found`, { code: "key_not_found" });
    }
    return c.json({ id, deleted: true });
  });

  return admin;
}

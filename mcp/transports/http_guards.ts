/**
 * The HTTP runners' guards: DNS-rebinding protection for loopback servers,
 * who may use the dev endpoints, and, for environments whose agent drives a
 * browser on the same host, no browser page at all.
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { constantTimeEqual } from "../harness.ts";

const LOCAL_HOSTNAMES = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

/** Whether an interface or host name is a loopback one. */
export function isLocalHost(host: string): boolean {
  return LOCAL_HOSTNAMES.has(host);
}

/** The token of an `Authorization: Bearer <token>` header. */
function bearerToken(header: string | null | undefined): string | undefined {
  return /^Bearer\s+(.+)$/i.exec(header ?? "")?.[1].trim();
}

function hostnameOf(hostHeader: string): string {
  try {
    return new URL(`http://${hostHeader}`).hostname;
  } catch {
    return "";
  }
}

/**
 * DNS-rebinding protection for servers bound to a loopback address: the
 * `Host` header, and the `Origin` header when present, must name a loopback
 * host. Servers bound elsewhere (`0.0.0.0` in containers) skip the check,
 * since their public names are not known here.
 *
 * @param boundHost The interface the server listens on.
 * @returns The middleware.
 */
export function dnsRebindingGuard(boundHost: string): MiddlewareHandler {
  const local = LOCAL_HOSTNAMES.has(boundHost);
  return async (c, next) => {
    if (local) {
      const host = hostnameOf(c.req.header("host") ?? "");
      if (!LOCAL_HOSTNAMES.has(host)) {
        return c.json({
          error: `Host "${c.req.header("host")}" is not allowed`,
        }, 403);
      }
      const origin = c.req.header("origin");
      // `URL.parse` is null for an opaque origin such as `Origin: null`
      // (sandboxed and file: pages): not a local host, so refused.
      if (
        origin &&
        !LOCAL_HOSTNAMES.has(hostnameOf(URL.parse(origin)?.host ?? ""))
      ) {
        return c.json({ error: `Origin "${origin}" is not allowed` }, 403);
      }
    }
    await next();
  };
}

/**
 * Whether a browser page's origin may call the server: its own pages (the
 * origin names the host the request was sent to) and the listed origins.
 *
 * @param origin The `Origin` header.
 * @param host The `Host` header.
 * @param allowed Origins let in besides the server's own (`MCP_ALLOWED_ORIGINS`).
 * @returns Whether the page may call.
 */
export function originAllowed(
  origin: string,
  host: string,
  allowed: ReadonlySet<string>,
): boolean {
  if (allowed.has(origin)) return true;
  const url = URL.parse(origin);
  return url !== null && url.host !== "" && url.host === host.toLowerCase();
}

/**
 * The one rule for browser pages, on every route: a request that carries an
 * `Origin` header is served only when it comes from one of the server's own
 * pages or a listed origin; any other page gets 403, a loopback page (one
 * the agent opens in the environment's browser) like any other. CORS
 * headers name only the listed origins, never `*`. MCP clients and
 * harnesses send no `Origin` and are not concerned.
 *
 * @param allowed Origins let in besides the server's own (`MCP_ALLOWED_ORIGINS`).
 * @returns The middleware.
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { originGuard } from "./http_guards.ts";
 *
 * const app = new Hono().use("*", originGuard(new Set())).post("/mcp", (c) => c.json({}));
 * const page = await app.request("http://127.0.0.1:8765/mcp", { method: "POST", headers: { origin: "http://127.0.0.1:9000" } });
 * page.status; // 403
 * ```
 */
export function originGuard(allowed: ReadonlySet<string>): MiddlewareHandler {
  return async (c, next) => {
    const origin = c.req.header("origin");
    if (
      origin !== undefined &&
      !originAllowed(origin, c.req.header("host") ?? "", allowed)
    ) {
      return c.json({
        error:
          `Origin "${origin}" may not call this server: only its own pages and the origins in MCP_ALLOWED_ORIGINS`,
      }, 403);
    }
    await next();
  };
}

/**
 * Guards `/dev`: with a dev token set, a request without
 * `Authorization: Bearer <token>` gets 401 (pages of other origins are
 * refused for every route by {@linkcode originGuard}).
 *
 * @param devToken `MCP_DEV_TOKEN`, if set.
 * @returns The middleware.
 */
export function devGuard(devToken: string | undefined): MiddlewareHandler {
  return async (c, next) => {
    if (devToken) {
      const presented = bearerToken(c.req.header("authorization"));
      if (presented === undefined || !constantTimeEqual(presented, devToken)) {
        return c.json({
          error:
            "Missing or wrong dev token: send Authorization: Bearer <MCP_DEV_TOKEN>",
        }, 401);
      }
    }
    await next();
  };
}

/**
 * Refuses every request a browser page sends (any `Origin` header), for an
 * environment whose agent drives a browser on the same host: a page the
 * agent opens there could otherwise call the server's tools directly,
 * those its scenario left out included. MCP clients and harnesses send no
 * `Origin`.
 *
 * @returns The middleware.
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { browserGuard } from "./http_guards.ts";
 *
 * const app = new Hono().use("*", browserGuard()).post("/mcp", (c) => c.json({}));
 * const page = await app.request("/mcp", { method: "POST", headers: { origin: "http://127.0.0.1:9000" } });
 * page.status; // 403
 * ```
 */
export function browserGuard(): MiddlewareHandler {
  return async (c, next) => {
    const origin = c.req.header("origin");
    if (origin !== undefined) {
      return c.json({
        error:
          `Origin "${origin}": browser pages may not call this environment (its agent drives a browser here)`,
      }, 403);
    }
    await next();
  };
}

/**
 * The client's address from what `Deno.serve` hands the app (Hono's
 * `c.env`), or `undefined` for an in-process request (`app.request()`, the
 * HUD control channel's tunnel, whose connections its own admission caps).
 *
 * @param env The serve handler's info, if any.
 * @returns The peer's IP address.
 */
export function peerAddress(env: unknown): string | undefined {
  const remote = (env as { remoteAddr?: { hostname?: unknown } } | undefined)
    ?.remoteAddr;
  return typeof remote?.hostname === "string" ? remote.hostname : undefined;
}

/**
 * Whether a request that opens a session carries the harness token:
 * `Authorization: Bearer <token>`, or an `initialize` in the body whose
 * `params._meta.harness_token` is it. Such a session is let in past the
 * session caps (see `session_admission.ts`).
 *
 * @param request The HTTP request.
 * @param body Its parsed body, when it has one.
 * @param token `MCP_HARNESS_TOKEN`; unset: nobody is the harness.
 * @returns Whether the request shows the token.
 */
export function showsHarnessToken(
  request: Request,
  body: unknown,
  token: string | undefined,
): boolean {
  if (!token) return false;
  const bearer = bearerToken(request.headers.get("authorization"));
  if (bearer !== undefined && constantTimeEqual(bearer, token)) return true;
  for (const message of Array.isArray(body) ? body : [body]) {
    const presented = (message as {
      method?: unknown;
      params?: { _meta?: { harness_token?: unknown } };
    } | null)?.params?._meta?.harness_token;
    if (
      (message as { method?: unknown } | null)?.method === "initialize" &&
      typeof presented === "string" && constantTimeEqual(presented, token)
    ) {
      return true;
    }
  }
  return false;
}

/**
 * The HTTP runners' guards: DNS-rebinding protection for loopback servers,
 * who may use the dev endpoints, and, for environments whose agent drives a
 * browser on the same host, no browser page at all.
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { constantTimeEqual } from "./harness.ts";

const LOCAL_HOSTNAMES = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

/** Whether an interface or host name is a loopback one. */
export function isLocalHost(host: string): boolean {
  return LOCAL_HOSTNAMES.has(host);
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
 * Guards `/dev`: a request from a page of another, non-loopback origin gets
 * 403 (CORS alone would still run a simple POST), and with a dev token set,
 * a request without `Authorization: Bearer <token>` gets 401.
 *
 * @param devToken `MCP_DEV_TOKEN`, if set.
 * @returns The middleware.
 */
export function devGuard(devToken: string | undefined): MiddlewareHandler {
  return async (c, next) => {
    const origin = c.req.header("origin");
    if (
      origin &&
      !LOCAL_HOSTNAMES.has(hostnameOf(URL.parse(origin)?.host ?? ""))
    ) {
      return c.json({ error: `Origin "${origin}" may not use /dev` }, 403);
    }
    if (devToken) {
      const match = /^Bearer\s+(.+)$/i.exec(
        c.req.header("authorization") ?? "",
      );
      if (!match || !constantTimeEqual(match[1].trim(), devToken)) {
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

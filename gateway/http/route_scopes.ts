/**
 * Which convention a request's errors are written in: each route says so
 * for the paths it answers and the unknown paths under them (the error
 * scopes of `ROUTE_CONVENTIONS`); a path no route matched falls back to
 * OpenAI's. A base URL that repeats the prefix its SDK adds
 * (`/v1/v1/messages`) is answered by a route of its own: a 404 that says
 * so, in the convention of the route the caller meant.
 *
 * @module
 */
import { type Env, Hono } from "hono";
import { GatewayError, setRoute } from "../errors.ts";
import { ROUTE_CONVENTIONS, type RouteName } from "../conventions.ts";

/**
 * Registers on `app`, ahead of its other handlers, the middleware that sets
 * each route's convention on its error scope.
 *
 * @param app The app serving the routes (mounted at the root and under `/v1`).
 *
 * @example
 * ```ts
 * import { type Env, Hono } from "hono";
 * import { scopeRoutes } from "./route_scopes.ts";
 * import { errorRouteOf } from "../errors.ts";
 * import assert from "node:assert/strict";
 *
 * const app = new Hono();
 * scopeRoutes(app);
 * app.get("*", (c) => c.text(errorRouteOf(c)));
 * assert.equal(await (await app.request("/messages/batches")).text(), "messages");
 * ```
 */
export function scopeRoutes<E extends Env>(app: Hono<E>): void {
  for (const [route, { errorScope }] of Object.entries(ROUTE_CONVENTIONS)) {
    for (const { method, path } of errorScope) {
      app.on(method, path, setRoute(route as RouteName));
    }
  }
}

/**
 * The route for paths under a doubled prefix (`/v1/v1`, `/v1beta/v1beta`):
 * every request gets a 404 whose message says to remove the prefix from the
 * client's base URL, in the convention of the route under it.
 *
 * @returns A Hono app to mount at each doubled prefix.
 *
 * @example
 * ```ts
 * import { type Env, Hono } from "hono";
 * import { doubledPrefixRoutes } from "./route_scopes.ts";
 * import { renderErrors } from "../errors.ts";
 * import assert from "node:assert/strict";
 *
 * const app = new Hono();
 * app.onError(renderErrors(console.error));
 * app.route("/v1/v1", doubledPrefixRoutes());
 * const response = await app.request("/v1/v1/messages", { method: "POST" });
 * assert.equal(response.status, 404);
 * assert.equal((await response.json()).type, "error");
 * ```
 */
export function doubledPrefixRoutes(): Hono {
  const doubled = new Hono();
  scopeRoutes(doubled);
  doubled.all("*", (c) => {
    throw new GatewayError(
      404,
      `No route "${c.req.method} ${c.req.path}"${
        doubledPrefixHint(c.req.path)
      }`,
    );
  });
  return doubled;
}

/** A hint for a path whose client base URL repeats a prefix the client adds itself (`/v1/v1/messages`). */
function doubledPrefixHint(path: string): string {
  const doubled = /^\/(v1|v1beta)\/\1(\/|$)/.exec(path)?.[1];
  return doubled
    ? `; the path repeats "/${doubled}": remove "/${doubled}" from the client's base URL, since the SDK adds it (the Anthropic SDK takes the gateway's root, e.g. http://localhost:8080)`
    : "";
}

/**
 * Which wire convention the runner speaks to a model, from the routes the
 * gateway's `GET /models` lists for it: `messages` → Anthropic Messages;
 * else `responses` alone → Responses; else `gemini` alone → Gemini native;
 * else chat completions.
 *
 * @module
 */
import { type Convention, CONVENTIONS } from "./agents/model.ts";

/**
 * The convention for a model served on these routes.
 *
 * @example
 * ```ts
 * import { conventionForRoutes } from "./convention.ts";
 * conventionForRoutes(["responses"]); // "responses"
 * conventionForRoutes(["chat", "responses"]); // "chat"
 * ```
 *
 * @param routes The model's routes.
 * @returns The convention.
 */
export function conventionForRoutes(routes: readonly string[]): Convention {
  if (routes.includes("messages")) return "messages";
  const only = (route: string) => routes.length === 1 && routes[0] === route;
  if (only("responses")) return "responses";
  if (only("gemini")) return "gemini";
  return "chat";
}

/**
 * Reads a `--convention` value.
 *
 * @example
 * ```ts
 * import { parseConvention } from "./convention.ts";
 *
 * parseConvention("messages"); // "messages"
 * // parseConvention("anthropic") throws: Unknown convention "anthropic": use chat, messages, responses, gemini
 * ```
 *
 * @param value What the user typed.
 * @returns The convention.
 * @throws {TypeError} When it is none of them.
 */
export function parseConvention(value: string): Convention {
  const found = CONVENTIONS.find((convention) => convention === value);
  if (!found) {
    throw new TypeError(
      `Unknown convention "${value}": use ${CONVENTIONS.join(", ")}`,
    );
  }
  return found;
}

/**
 * Asks the gateway which routes serve a model and picks the convention; a
 * gateway that does not list the model (or lists no routes) gets chat.
 *
 * @example
 * ```ts
 * import { modelConvention } from "./convention.ts";
 *
 * const convention = await modelConvention("http://localhost:8080", "claude-sonnet-4-5");
 * // "messages" when the gateway serves the model on /v1/messages
 * ```
 *
 * @param gatewayUrl The gateway's base URL.
 * @param model The model id.
 * @param signal Stops the request.
 * @returns The convention.
 * @throws {Error} When the gateway cannot be reached.
 */
export async function modelConvention(
  gatewayUrl: string,
  model: string,
  signal?: AbortSignal,
): Promise<Convention> {
  const response = await fetch(`${gatewayUrl.replace(/\/$/, "")}/v1/models`, {
    signal,
  });
  if (!response.ok) {
    await response.body?.cancel();
    return "chat";
  }
  const body = await response.json().catch(() => undefined) as
    | { data?: { id?: unknown; routes?: unknown }[] }
    | undefined;
  const entry = Array.isArray(body?.data)
    ? body.data.find((m) => m?.id === model)
    : undefined;
  const routes = Array.isArray(entry?.routes)
    ? entry.routes.filter((r): r is string => typeof r === "string")
    : [];
  return routes.length > 0 ? conventionForRoutes(routes) : "chat";
}

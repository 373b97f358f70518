/**
 * What a call asks for that a provider bills beyond its tokens, read before
 * anything is sent: each is either priced in the catalog, and then held and
 * charged (a `service_tier` the catalog prices, Anthropic's and OpenAI's
 * web search, a long-context beta), or refused with a 400 naming it. Work
 * whose result is fetched later, outside the call (Responses
 * `background`, xAI `deferred`), is refused: the gateway could not charge
 * it.
 *
 * @module
 */
import { GatewayError } from "../errors.ts";
import type { CatalogEntry } from "../state/catalog.ts";
import type { RouteName } from "../conventions.ts";
import type { PricedTier } from "./charge.ts";

/** What a call asks for that is billed beyond its tokens. */
export interface BillableFeatures {
  /** The tier asked for, when it is one the catalog prices apart. */
  tier?: PricedTier;
  /** The most server-side web searches the call may run (its tools' `max_uses`, Responses `max_tool_calls`). */
  webSearches: number;
  /** The `anthropic-beta` flag asking for the long-context rate, if sent. */
  longContextBeta?: string;
}

/** Tier names that are the standard price. */
const STANDARD_TIERS = new Set(["auto", "default", "standard_only"]);

/** Responses tools billed per call or per session that the catalog does not price. */
const UNPRICED_RESPONSES_TOOLS = new Set([
  "code_interpreter",
  "file_search",
  "image_generation",
  "mcp",
]);

/** Messages server tools (by `type` prefix) the catalog does not price. */
const UNPRICED_MESSAGES_TOOLS = ["web_fetch", "code_execution"];

/** Gemini tools run by Google and billed per request or grounded prompt, in both JSON spellings. */
const UNPRICED_GEMINI_TOOLS = [
  "googleSearch",
  "google_search",
  "googleSearchRetrieval",
  "google_search_retrieval",
  "urlContext",
  "url_context",
  "codeExecution",
  "code_execution",
  "googleMaps",
  "google_maps",
  "fileSearch",
  "file_search",
];

/** The `anthropic-beta` flag that bills a call above 200k input tokens at the long-context rate. */
const LONG_CONTEXT_BETA = /^context-1m/;

/**
 * The billable features of a call's body, refusing what no catalog prices.
 *
 * @example
 * ```ts
 * import { billableFeatures } from "./billable.ts";
 *
 * billableFeatures("responses", { model: "gpt-5.1", service_tier: "priority" }, new Headers());
 * // { tier: "priority", webSearches: 0 }
 * ```
 *
 * @param route The caller's route.
 * @param body The caller's parsed body.
 * @param headers The caller's headers (`anthropic-beta`).
 * @returns What the call asks for.
 * @throws {GatewayError} A 400 naming a field the gateway cannot charge for.
 */
export function billableFeatures(
  route: RouteName,
  body: Record<string, unknown>,
  headers: Headers,
): BillableFeatures {
  const features: BillableFeatures = { webSearches: 0 };
  const beta = headers.get("anthropic-beta")?.split(",").map((flag) =>
    flag.trim()
  ).find((flag) => LONG_CONTEXT_BETA.test(flag));
  if (beta !== undefined) features.longContextBeta = beta;
  const tools = Array.isArray(body.tools) ? body.tools : [];
  switch (route) {
    case "chat":
      if (body.deferred === true) {
        throw refused(
          "deferred",
          "a deferred completion is fetched later, outside the call, so the gateway could not charge it; send the call without it",
        );
      }
      if (isSet(body.search_parameters) && !searchOff(body.search_parameters)) {
        throw unpriced("search_parameters", "live search, billed per source");
      }
      if (isSet(body.web_search_options)) {
        throw unpriced("web_search_options", "web search on the chat route");
      }
      if (Array.isArray(body.plugins) && body.plugins.length > 0) {
        throw unpriced("plugins", "router plugins, billed per result");
      }
      tools.forEach((tool, index) => {
        const type = typeOf(tool);
        if (type !== undefined && type !== "function" && type !== "custom") {
          throw unpriced(`tools[${index}].type`, `the "${type}" tool`);
        }
      });
      features.tier = tierOf(body.service_tier);
      break;
    case "responses":
      if (body.background === true) {
        throw refused(
          "background",
          "a background response is fetched later, outside the call, so the gateway could not charge it; send the call without it (stream it for a long answer)",
        );
      }
      tools.forEach((tool, index) => {
        const type = typeOf(tool) ?? "";
        if (UNPRICED_RESPONSES_TOOLS.has(type)) {
          throw unpriced(`tools[${index}].type`, `the "${type}" tool`);
        }
        if (type.startsWith("web_search")) {
          features.webSearches = boundedSearches(
            body.max_tool_calls,
            "max_tool_calls",
          );
        }
      });
      features.tier = tierOf(body.service_tier);
      break;
    case "messages":
      if (Array.isArray(body.mcp_servers) && body.mcp_servers.length > 0) {
        throw refused(
          "mcp_servers",
          "what remote MCP servers return is added to the input by Anthropic, of a size the hold cannot know; call the tools yourself",
        );
      }
      tools.forEach((tool, index) => {
        const type = typeOf(tool) ?? "";
        const server = UNPRICED_MESSAGES_TOOLS.find((prefix) =>
          type.startsWith(prefix)
        );
        if (server !== undefined) {
          throw unpriced(`tools[${index}].type`, `the "${type}" server tool`);
        }
        if (type.startsWith("web_search")) {
          features.webSearches += boundedSearches(
            (tool as { max_uses?: unknown }).max_uses,
            `tools[${index}].max_uses`,
          );
        }
      });
      break;
    case "gemini":
      tools.forEach((tool, index) => {
        const name = UNPRICED_GEMINI_TOOLS.find((key) =>
          typeof tool === "object" && tool !== null && key in tool
        );
        if (name !== undefined) {
          throw unpriced(`tools[${index}].${name}`, `the "${name}" tool`);
        }
      });
      break;
  }
  return features;
}

/**
 * Why `entry` cannot price what the call asks for, or `undefined` when it can.
 *
 * @example
 * ```ts
 * import { unpricedOn } from "./billable.ts";
 * import { DEFAULT_CATALOG } from "../state/catalog.ts";
 *
 * const gpt4o = DEFAULT_CATALOG.find((entry) => entry.id === "gpt-4o")!;
 * unpricedOn(gpt4o, { tier: "flex", webSearches: 0 })?.param; // "service_tier"
 * ```
 *
 * @param entry A model that may serve the call.
 * @param features What the call asks for.
 * @returns The field and what is not priced, or `undefined`.
 */
export function unpricedOn(
  entry: CatalogEntry,
  features: BillableFeatures,
): { param: string; what: string } | undefined {
  const { pricing } = entry;
  if (features.tier !== undefined && !pricing.tiers?.[features.tier]) {
    return {
      param: "service_tier",
      what: `the "${features.tier}" service tier`,
    };
  }
  if (features.webSearches > 0 && pricing.webSearch === undefined) {
    return { param: "tools", what: "web search" };
  }
  if (features.longContextBeta !== undefined && !pricing.longContext) {
    return {
      param: "anthropic-beta",
      what: `the long-context rate ("${features.longContextBeta}")`,
    };
  }
  return undefined;
}

/**
 * The 400 for a call the model that serves it cannot price.
 *
 * @param entry The model asked for.
 * @param unpriced What it cannot price ({@linkcode unpricedOn}).
 * @returns The error to throw.
 */
export function unpricedError(
  entry: CatalogEntry,
  unpriced: { param: string; what: string },
): GatewayError {
  return new GatewayError(
    400,
    `Invalid "${unpriced.param}": the catalog has no price for ${unpriced.what} on model "${entry.id}", so the gateway cannot charge it; send the call without it`,
    { code: "unpriced_feature", param: unpriced.param },
  );
}

function isSet(value: unknown): boolean {
  return value !== undefined && value !== null && value !== false;
}

function searchOff(value: unknown): boolean {
  return typeof value === "object" && value !== null &&
    (value as { mode?: unknown }).mode === "off";
}

function typeOf(tool: unknown): string | undefined {
  const type = typeof tool === "object" && tool !== null
    ? (tool as { type?: unknown }).type
    : undefined;
  return typeof type === "string" ? type : undefined;
}

/** The tier asked for: `undefined` for the standard price, a 400 for a name the gateway does not know. */
function tierOf(value: unknown): PricedTier | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string" && STANDARD_TIERS.has(value)) return undefined;
  if (value === "priority" || value === "flex") return value;
  throw unpriced("service_tier", `the ${JSON.stringify(value)} service tier`);
}

/** The searches a tool may run: its bound, which must be set so the hold can cover it. */
function boundedSearches(bound: unknown, field: string): number {
  if (
    typeof bound === "number" && Number.isInteger(bound) && bound > 0 &&
    bound <= MAX_HELD_SEARCHES
  ) {
    return bound;
  }
  throw new GatewayError(
    400,
    `Invalid "${field}": web search is billed per search, so the gateway needs "${field}" set, from 1 to ${MAX_HELD_SEARCHES}, to hold for the searches it may run`,
    { code: "invalid_request", param: field },
  );
}

/**
 * The most searches one call may ask to hold for: far above what one call
 * runs, and small enough that the hold stays exact money.
 */
const MAX_HELD_SEARCHES = 10_000;

function refused(param: string, why: string): GatewayError {
  return new GatewayError(400, `Invalid "${param}": ${why}`, {
    code: "unsupported_feature",
    param,
  });
}

function unpriced(param: string, what: string): GatewayError {
  return refused(
    param,
    `the gateway has no price for ${what}, so it cannot charge it; send the call without it`,
  );
}

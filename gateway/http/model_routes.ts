/**
 * The models listing: `GET /models` and `GET /models/{id}`, in OpenAI's
 * shape with the gateway's routes, prices and availability added.
 *
 * @module
 */
import { Hono } from "hono";
import { modelPathOf } from "./_path.ts";
import {
  type Catalog,
  lifecycleInfo,
  type TokenPrices,
} from "../state/catalog.ts";
import type { GatewayConfig } from "../config.ts";
import { GatewayError } from "../errors.ts";
import type {
  CatalogEntry,
  ComputerUse,
  ModelFeatures,
} from "../state/catalog.ts";
import type { GatewayEnv } from "./_env.ts";

/**
 * Creates the models listing, relative to where it is mounted.
 *
 * @param catalog The models this process serves.
 * @param providers The configured providers, to say whether a model's provider has a key.
 * @returns A Hono app to mount at the gateway's root and under `/v1`.
 *
 * @example
 * ```ts
 * import { modelRoutes } from "./model_routes.ts";
 * import { Catalog, DEFAULT_CATALOG } from "../state/catalog.ts";
 * import { parseConfig } from "../config.ts";
 * import assert from "node:assert/strict";
 *
 * const routes = modelRoutes(new Catalog(DEFAULT_CATALOG), parseConfig().providers);
 * const listing = await (await routes.request("/models")).json();
 * assert.equal(listing.object, "list");
 * ```
 */
export function modelRoutes(
  catalog: Catalog,
  providers: GatewayConfig["providers"],
): Hono<GatewayEnv> {
  const api = new Hono<GatewayEnv>();
  const modelInfo = (m: CatalogEntry) => {
    const keyed = providers[m.provider].apiKeys.length > 0;
    return {
      id: m.id,
      object: "model",
      owned_by: m.provider,
      routes: m.routes,
      // Listed either way, so a caller sees what the gateway offers; a model
      // whose provider has no key says how to enable it.
      available: keyed,
      ...(keyed ? {} : {
        unavailable_reason:
          `No ${m.provider} key is configured: the operator sets ${m.provider.toUpperCase()}_API_KEYS`,
      }),
      pricing: {
        input: m.pricing.input,
        output: m.pricing.output,
        cached_input: m.pricing.cachedInput,
        cache_write: m.pricing.cacheWrite,
        cache_write_1h: m.pricing.cacheWrite1h,
        // What is billed beyond tokens, where the catalog prices it; a call
        // asking for something not listed here is refused with a 400.
        ...(m.pricing.webSearch !== undefined &&
          { web_search_per_1k: m.pricing.webSearch }),
        ...(m.pricing.tiers && {
          tiers: Object.fromEntries(
            Object.entries(m.pricing.tiers).map((
              [tier, prices],
            ) => [tier, tokenPricesInfo(prices)]),
          ),
        }),
        ...(m.pricing.longContext && {
          long_context: {
            above_input_tokens: m.pricing.longContext.aboveInputTokens,
            ...tokenPricesInfo(m.pricing.longContext),
          },
        }),
      },
      // Its deprecation and retirement dates and successor, when it has an end.
      ...(m.lifecycle ? { lifecycle: lifecycleInfo(m, Date.now()) } : {}),
      // The provider facts a harness needs, for the models that have them.
      ...(m.aliases ? { aliases: m.aliases } : {}),
      ...(m.computerUse
        ? { computer_use: computerUseInfo(m.computerUse) }
        : {}),
      ...(m.contextWindow ? { context_window: m.contextWindow } : {}),
      ...(m.features ? { features: featuresInfo(m.features) } : {}),
    };
  };
  api.get(
    "/models",
    (c) => c.json({ object: "list", data: catalog.list().map(modelInfo) }),
  );
  api.get("/models/*", (c) => {
    const id = modelPathOf(c.req.path);
    const entry = catalog.get(id);
    if (!entry) {
      throw new GatewayError(
        404,
        `Model "${id}" does not exist; GET /models lists the models`,
        { code: "model_not_found", param: "model" },
      );
    }
    return c.json(modelInfo(entry));
  });
  return api;
}

/** A model's computer use as `GET /models` shows it: snake_case, absent fields left out. */
function computerUseInfo(computerUse: ComputerUse): Record<string, unknown> {
  const { tool, beta, environment, environments } = computerUse;
  return {
    tool,
    ...(beta !== undefined && { beta }),
    ...(environment !== undefined && { environment }),
    ...(environments !== undefined && { environments }),
  };
}

/** A model's refusals as `GET /models` shows them, in snake_case. */
function featuresInfo(features: ModelFeatures): Record<string, boolean> {
  const { disabledThinking, forcedToolChoice, thinkingBetweenTools } = features;
  return {
    ...(disabledThinking !== undefined &&
      { disabled_thinking: disabledThinking }),
    ...(forcedToolChoice !== undefined &&
      { forced_tool_choice: forcedToolChoice }),
    ...(thinkingBetweenTools !== undefined &&
      { thinking_between_tools: thinkingBetweenTools }),
  };
}

/** One rate's token prices as `GET /models` lists them, in snake_case. */
function tokenPricesInfo(prices: TokenPrices): Record<string, number> {
  return {
    input: prices.input,
    output: prices.output,
    ...(prices.cachedInput !== undefined &&
      { cached_input: prices.cachedInput }),
    ...(prices.cacheWrite !== undefined && { cache_write: prices.cacheWrite }),
    ...(prices.cacheWrite1h !== undefined &&
      { cache_write_1h: prices.cacheWrite1h }),
  };
}

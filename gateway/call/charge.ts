/**
 * What a call is charged: its tokens at the rate that applied (the tier the
 * caller asked for, else the long-context rate when the input is above its
 * threshold, else the model's standard prices), plus the server-side web
 * searches the provider ran, at the catalog's price per 1,000; and never
 * less than a router's own reported cost. The same function prices the
 * hold, from the most the call may use, so a priced dimension is held
 * before it is charged.
 *
 * @module
 */
import type { ModelPricing, TokenPrices } from "../state/catalog.ts";
import { costMicros, usdToMicros } from "../state/credits/money.ts";
import type { Usage } from "../upstream/usage.ts";

/** A `service_tier` the catalog prices apart from the standard one. */
export type PricedTier = keyof NonNullable<ModelPricing["tiers"]>;

/**
 * The token prices a call's usage is billed at.
 *
 * @example Gemini 2.5 Pro above 200k input tokens
 * ```ts
 * import { ratesFor } from "./charge.ts";
 *
 * const pricing = {
 *   input: 1.25, output: 10,
 *   longContext: { aboveInputTokens: 200_000, input: 2.5, output: 15 },
 * };
 * ratesFor(pricing, 250_000).input; // 2.5
 * ratesFor(pricing, 150_000).input; // 1.25
 * ```
 *
 * @param pricing The model's prices.
 * @param inputTokens The call's input tokens.
 * @param tier The tier the caller asked for, if one the catalog prices apart.
 * @returns The prices.
 * @throws {RangeError} For a tier the catalog does not price (the call's input refuses it before).
 */
export function ratesFor(
  pricing: ModelPricing,
  inputTokens: number,
  tier?: PricedTier,
): TokenPrices {
  if (tier !== undefined) {
    const rates = pricing.tiers?.[tier];
    if (!rates) {
      throw new RangeError(`The catalog prices no "${tier}" tier`);
    }
    return rates;
  }
  const long = pricing.longContext;
  return long && inputTokens > long.aboveInputTokens ? long : pricing;
}

/**
 * The cost of a call, micro-USD (see the module doc).
 *
 * @example 20 Anthropic web searches at $10 per 1,000
 * ```ts
 * import { chargeMicros } from "./charge.ts";
 *
 * chargeMicros(
 *   { inputTokens: 100, outputTokens: 50, cachedInputTokens: 0, webSearches: 20 },
 *   { input: 3, output: 15, webSearch: 10 },
 * ); // 201_050
 * ```
 *
 * @param usage The usage the provider reported (or the most a hold covers).
 * @param pricing The model's prices.
 * @param tier The tier the caller asked for, if one the catalog prices apart.
 * @returns Integer micro-USD.
 * @throws {RangeError} As `costMicros`.
 */
export function chargeMicros(
  usage: Usage,
  pricing: ModelPricing,
  tier?: PricedTier,
): number {
  const tokens = costMicros(usage, ratesFor(pricing, usage.inputTokens, tier));
  // A model without a web-search price had every request asking for the
  // tool refused, so searches reported there are not the caller's to pay.
  // USD per 1,000 searches is micro-USD per search × 1,000.
  const searched = Math.ceil(
    (usage.webSearches ?? 0) * usdToMicros(pricing.webSearch ?? 0) / 1_000,
  );
  const computed = tokens + searched;
  const reported = usage.reportedCostUsd === undefined
    ? 0
    : Math.ceil(usage.reportedCostUsd * 1_000_000);
  return Math.max(computed, reported);
}

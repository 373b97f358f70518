/**
 * Money maths: integer micro-USD (1 USD = 1 000 000), prices in USD per
 * million tokens, and the cost of a call from its usage. Pure functions, no
 * state.
 *
 * @example Price a call
 * ```ts
 * import { costMicros } from "./money.ts";
 *
 * const usage = { inputTokens: 1_000, outputTokens: 500, cachedInputTokens: 0 };
 * costMicros(usage, { input: 3, output: 15 }); // 10_500 micro-USD
 * ```
 *
 * @module
 */
import type { ModelPricing } from "../catalog.ts";
import type { Usage } from "../../upstream/usage.ts";

/**
 * Micro-USD in one USD.
 *
 * @example
 * ```ts
 * import { MICROS_PER_USD } from "./money.ts";
 *
 * 2.5 * MICROS_PER_USD; // 2_500_000
 * ```
 */
export const MICROS_PER_USD = 1_000_000;

/**
 * The largest balance, or amount moved at once, in micro-USD: one billion
 * USD. Far inside the range where doubles hold integers exactly (2^53), so a
 * sum of any two amounts is still exact.
 *
 * @example
 * ```ts
 * import { MAX_BALANCE_MICROS, usdToMicros } from "./money.ts";
 *
 * MAX_BALANCE_MICROS === usdToMicros(1e9); // true
 * ```
 */
export const MAX_BALANCE_MICROS = 1e9 * MICROS_PER_USD;

/**
 * Converts USD to integer micro-USD, rounding to the nearest micro-USD.
 *
 * @example
 * ```ts
 * import { usdToMicros } from "./money.ts";
 *
 * usdToMicros(1.25); // 1_250_000
 * usdToMicros(0.0000004); // 0
 * ```
 *
 * @param usd An amount in USD.
 * @returns The amount in micro-USD.
 * @throws {RangeError} When `usd` is not finite or beyond a safe integer of micro-USD.
 */
export function usdToMicros(usd: number): number {
  const micros = Math.round(usd * MICROS_PER_USD);
  if (!Number.isSafeInteger(micros)) {
    throw new RangeError(
      `Cannot convert "${usd}" USD to micro-USD: not a finite amount in range`,
    );
  }
  // Math.round(-0.4) is -0; keep the zero plain.
  return micros === 0 ? 0 : micros;
}

/**
 * Converts integer micro-USD to USD.
 *
 * @example
 * ```ts
 * import { microsToUsd } from "./money.ts";
 *
 * microsToUsd(1_250_000); // 1.25
 * ```
 *
 * @param micros An amount in micro-USD.
 * @returns The amount in USD.
 */
export function microsToUsd(micros: number): number {
  return micros / MICROS_PER_USD;
}

/**
 * Micro-USD as a USD decimal string with six places, for headers.
 *
 * @example
 * ```ts
 * import { formatUsd } from "./money.ts";
 *
 * formatUsd(123); // "0.000123"
 * ```
 *
 * @param micros Integer micro-USD.
 * @returns E.g. `"0.000123"`.
 */
export function formatUsd(micros: number): string {
  return (micros / MICROS_PER_USD).toFixed(6);
}

/**
 * Throws unless `value` is a non-negative integer of micro-USD.
 *
 * @example
 * ```ts
 * import { assertMicros } from "./money.ts";
 *
 * assertMicros("cost", 1_200); // passes
 * try {
 *   assertMicros("cost", 1.5);
 * } catch (error) {
 *   console.log((error as RangeError).message); // 'Invalid cost "1.5": expected a non-negative integer of micro-USD'
 * }
 * ```
 *
 * @param name What the value is, for the message.
 * @param value The amount.
 * @throws {RangeError} When it is negative, fractional or beyond a safe integer.
 */
export function assertMicros(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(
      `Invalid ${name} "${value}": expected a non-negative integer of micro-USD`,
    );
  }
}

// A price in USD per million tokens is the same number in micro-USD per token.
// Scaled by 10^6 it is an integer for any price quoted to six decimals, so the
// sum is exact and only the final division rounds.
const PRICE_SCALE = 1_000_000n;

function scaledPrice(usdPerMillion: number): bigint {
  if (!Number.isFinite(usdPerMillion) || usdPerMillion < 0) {
    throw new RangeError(
      `Invalid price "${usdPerMillion}": expected a non-negative number`,
    );
  }
  return BigInt(Math.round(usdPerMillion * Number(PRICE_SCALE)));
}

function tokenCount(name: string, value: number): bigint {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(
      `Invalid token count "${value}" for "${name}": expected a non-negative integer`,
    );
  }
  return BigInt(value);
}

/**
 * The cost of one call in micro-USD: uncached input tokens at the input price,
 * cache reads at the cached price (else the input price), 5-minute cache
 * writes at the cache-write price (else the input price), 1-hour writes at
 * the 1-hour price (else the 5-minute one), every
 * output token at the output price; the total rounded up to the next
 * micro-USD, once per call.
 *
 * @example
 * ```ts
 * import { costMicros } from "./money.ts";
 *
 * // 800 uncached input tokens at $3, 200 cached at $0.30, 100 output at $15 per million:
 * const usage = { inputTokens: 1_000, outputTokens: 100, cachedInputTokens: 200 };
 * costMicros(usage, { input: 3, cachedInput: 0.3, output: 15 }); // 3_960
 * ```
 *
 * @param usage The call's token usage (`inputTokens` includes the cached and cache-write parts).
 * @param pricing The model's prices, USD per million tokens.
 * @returns The cost, integer micro-USD.
 * @throws {RangeError} On negative or fractional token counts, parts above the whole, or negative prices.
 */
export function costMicros(usage: Usage, pricing: ModelPricing): number {
  const input = tokenCount("inputTokens", usage.inputTokens);
  const cached = tokenCount("cachedInputTokens", usage.cachedInputTokens);
  const write5m = tokenCount("cacheWriteTokens", usage.cacheWriteTokens ?? 0);
  const write1h = tokenCount(
    "cacheWrite1hTokens",
    usage.cacheWrite1hTokens ?? 0,
  );
  const output = tokenCount("outputTokens", usage.outputTokens);
  if (cached + write5m + write1h > input) {
    throw new RangeError(
      `Invalid usage: cached and cache-write tokens exceed inputTokens "${usage.inputTokens}"`,
    );
  }
  const inputPrice = scaledPrice(pricing.input);
  const priceOr = (price: number | undefined, fallback: bigint) =>
    price === undefined ? fallback : scaledPrice(price);
  const cachedPrice = priceOr(pricing.cachedInput, inputPrice);
  const write5mPrice = priceOr(pricing.cacheWrite, inputPrice);
  const write1hPrice = priceOr(pricing.cacheWrite1h, write5mPrice);
  const scaled = (input - cached - write5m - write1h) * inputPrice +
    cached * cachedPrice + write5m * write5mPrice + write1h * write1hPrice +
    output * scaledPrice(pricing.output);
  return Number((scaled + PRICE_SCALE - 1n) / PRICE_SCALE);
}

/**
 * The most a call can cost: the estimated input tokens, none cached, plus the
 * most output tokens the call may produce. This is what a reservation holds.
 *
 * @example
 * ```ts
 * import { maxCostMicros } from "./money.ts";
 *
 * // What a reservation holds for about 1 000 prompt tokens and max_tokens 500.
 * maxCostMicros({ input: 3, output: 15 }, 1_000, 500); // 10_500
 * ```
 *
 * @param pricing The model's prices.
 * @param inputTokensEstimate Estimated prompt tokens.
 * @param maxOutputTokens The call's `max_tokens`, else the model's limit.
 * @returns The ceiling, integer micro-USD.
 */
export function maxCostMicros(
  pricing: ModelPricing,
  inputTokensEstimate: number,
  maxOutputTokens: number,
): number {
  return costMicros(
    {
      inputTokens: Math.ceil(inputTokensEstimate),
      outputTokens: Math.ceil(maxOutputTokens),
      cachedInputTokens: 0,
    },
    pricing,
  );
}

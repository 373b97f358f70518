/**
 * Token usage where it enters the gateway: every provider's counts pass
 * through {@linkcode tokenCount} and {@linkcode normalUsage}, so what the
 * money path prices is always whole, non-negative and consistent. A count
 * that cannot be read is an {@linkcode UnreadableUsageError}: the call is an
 * upstream failure (502), never an unbilled answer.
 *
 * @module
 */

/** A provider reported a token count the gateway cannot read. */
export class UnreadableUsageError extends Error {
  /**
   * Creates the error.
   *
   * @param field The usage field, e.g. `usage.completion_tokens`.
   * @param value What the provider sent (quoted in the message, shortened).
   */
  constructor(field: string, value: unknown) {
    super(
      `The provider reported "${
        String(JSON.stringify(value)).slice(0, 40)
      }" for "${field}": expected a non-negative token count`,
    );
    this.name = "UnreadableUsageError";
  }
}

/**
 * The most tokens one count may report: a trillion, far above any call. A
 * call's classes are sums of a few counts, so they stay a few trillion
 * tokens: exact integers, which the money maths prices in big integers. A
 * provider reporting absurd counts fails the call where the usage enters,
 * instead of its settlement.
 */
export const MAX_TOKEN_COUNT = 1e12;

/**
 * One token count from a provider: a number or a numeric string, rounded up
 * to a whole token; absent (`undefined`, `null`) is 0.
 *
 * @param value What the provider sent.
 * @param field The field's name, for the error.
 * @returns The count.
 * @throws {UnreadableUsageError} For a negative, non-finite or non-numeric count, or one above {@linkcode MAX_TOKEN_COUNT}.
 */
export function tokenCount(value: unknown, field: string): number {
  if (value === undefined || value === null) return 0;
  const count = countOf(value);
  if (count === undefined) throw new UnreadableUsageError(field, value);
  return count;
}

/** {@linkcode tokenCount}'s rule without the throw: the count, or `undefined` for a value that is not one. */
function countOf(value: unknown): number | undefined {
  const number = typeof value === "string" && value.trim() !== ""
    ? Number(value)
    : value;
  if (
    typeof number !== "number" || !Number.isFinite(number) || number < 0 ||
    number > MAX_TOKEN_COUNT
  ) {
    return undefined;
  }
  return Math.ceil(number);
}

/**
 * Usage whose parts agree with each other: the cached, cache-write and
 * reasoning parts never exceed the whole they are part of (a provider that
 * reports more is capped, in the order cache reads, 5-minute writes, 1-hour
 * writes).
 *
 * @param usage Counts read with {@linkcode tokenCount}.
 * @returns The usage to price and trace.
 */
export function normalUsage(usage: Usage): Usage {
  const cached = Math.min(usage.cachedInputTokens, usage.inputTokens);
  const rest = usage.inputTokens - cached;
  const write5m = Math.min(usage.cacheWriteTokens ?? 0, rest);
  const write1h = Math.min(usage.cacheWrite1hTokens ?? 0, rest - write5m);
  const reasoning = Math.min(usage.reasoningTokens ?? 0, usage.outputTokens);
  return {
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    cachedInputTokens: cached,
    ...(write5m > 0 ? { cacheWriteTokens: write5m } : {}),
    ...(write1h > 0 ? { cacheWrite1hTokens: write1h } : {}),
    ...(reasoning > 0 ? { reasoningTokens: reasoning } : {}),
  };
}

/**
 * The usage objects of one stream folded into one. Providers send cumulative
 * counts, and a later event may repeat a total without the detail an earlier
 * one gave: Anthropic's `message_delta` carries the cache-write total without
 * its split from `message_start`; a Gemini chunk may leave out
 * `thoughtsTokenCount`. So each count keeps the larger of its readings, a
 * detail object (`cache_creation`, `*_tokens_details`) is folded field by
 * field, and a count an event leaves out or sends as `null` keeps its earlier
 * value. A value that is not a count replaces the earlier one, so the
 * provider's reader still refuses it.
 *
 * @example Anthropic's split from message_start, its larger total from message_delta
 * ```ts
 * import { mergeUsageCounts } from "./usage.ts";
 *
 * const start = {
 *   input_tokens: 5,
 *   cache_creation_input_tokens: 3_068,
 *   cache_creation: { ephemeral_5m_input_tokens: 3_068, ephemeral_1h_input_tokens: 0 },
 * };
 * const delta = { cache_creation_input_tokens: 3_337, output_tokens: 40, input_tokens: null };
 * mergeUsageCounts(mergeUsageCounts({}, start), delta);
 * // { input_tokens: 5, cache_creation_input_tokens: 3_337, cache_creation: {…3_068…}, output_tokens: 40 }
 * ```
 *
 * @param earlier What the stream's earlier events reported, folded.
 * @param later One more event's usage object (anything that is not an object adds nothing).
 * @returns A new object; neither argument is changed.
 */
export function mergeUsageCounts(
  earlier: Readonly<Record<string, unknown>>,
  later: unknown,
): Record<string, unknown> {
  return mergeCounts(earlier, later, 0);
}

// Usage objects nest one level (`cache_creation`, `prompt_tokens_details`);
// deeper values are replaced whole, so a hostile nesting costs no recursion.
const MAX_FOLDED_DEPTH = 1;

function mergeCounts(
  earlier: Readonly<Record<string, unknown>>,
  later: unknown,
  depth: number,
): Record<string, unknown> {
  // A Map, then Object.fromEntries: a "__proto__" field stays a plain field.
  const merged = new Map(Object.entries(earlier));
  if (!isPlainObject(later)) return Object.fromEntries(merged);
  for (const [field, value] of Object.entries(later)) {
    if (value === null || value === undefined) continue;
    const prior = merged.get(field);
    if (
      depth < MAX_FOLDED_DEPTH && isPlainObject(prior) && isPlainObject(value)
    ) {
      merged.set(field, mergeCounts(prior, value, depth + 1));
    } else merged.set(field, larger(prior, value));
  }
  return Object.fromEntries(merged);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The larger of two readable counts, else the later value. */
function larger(prior: unknown, value: unknown): unknown {
  const before = readableCount(prior);
  const after = readableCount(value);
  return before !== undefined && after !== undefined && before > after
    ? prior
    : value;
}

// Without a throw: folding meets values that are not counts on every event
// that carries one (a detail object past the folded depth, a tier name), and
// an error built per event was a cost of its own per streamed chunk.
function readableCount(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  return value === null ? 0 : countOf(value);
}

/**
 * Usage that counts at least the provider's total: tokens the total holds
 * beyond the classes reported are output, billed at the output price (the
 * class providers report beside the others, or leave out of a later event,
 * is reasoning). A total at or below the classes' sum changes nothing.
 *
 * @example A total that holds reasoning tokens no class reported
 * ```ts
 * import { coveringTotal } from "./usage.ts";
 *
 * coveringTotal({ inputTokens: 10, outputTokens: 5, cachedInputTokens: 0 }, 40);
 * // { inputTokens: 10, outputTokens: 30, cachedInputTokens: 0 }
 * ```
 *
 * @param usage Usage read from the provider's classes, through {@linkcode normalUsage}.
 * @param totalTokens The provider's total (`total_tokens`, `totalTokenCount`), read with {@linkcode tokenCount}; 0 when it sent none.
 * @returns The usage to price and trace.
 */
export function coveringTotal(usage: Usage, totalTokens: number): Usage {
  const unreported = totalTokens - usage.inputTokens - usage.outputTokens;
  if (unreported <= 0) return usage;
  return { ...usage, outputTokens: usage.outputTokens + unreported };
}

/**
 * Token usage of one call, normalised across providers (see `usage.ts`).
 * `inputTokens` counts every prompt token; the cached and cache-write counts
 * are parts of it, billed at their own prices. `outputTokens` counts every
 * output token the provider reported, reasoning included.
 */
export interface Usage {
  /** All prompt tokens: uncached, cache reads and cache writes. */
  inputTokens: number;
  /** Every output token, reasoning tokens included. */
  outputTokens: number;
  /** The part of `inputTokens` read from a cache. */
  cachedInputTokens: number;
  /** The part of `inputTokens` written to a 5-minute cache. */
  cacheWriteTokens?: number;
  /** The part of `inputTokens` written to a 1-hour cache. */
  cacheWrite1hTokens?: number;
  /** The part of `outputTokens` that was reasoning (reported, not priced apart). */
  reasoningTokens?: number;
  /** Web searches a server-side tool ran (Anthropic's `server_tool_use.web_search_requests`, OpenAI's `web_search_call` items), priced per 1,000. */
  webSearches?: number;
  /** What the provider said the call cost, USD (OpenRouter's `usage.cost`): charged where it is above the catalog's price. */
  reportedCostUsd?: number;
}

/**
 * The most USD one call may report it cost: a router's `usage.cost` above
 * it is unreadable, not a charge (a hostile upstream cannot empty a balance
 * with one answer beyond what the money maths holds).
 */
export const MAX_REPORTED_COST_USD = 10_000;

/**
 * A cost a provider reported, USD: a non-negative number up to
 * {@linkcode MAX_REPORTED_COST_USD}; absent is `undefined`.
 *
 * @example
 * ```ts
 * import { reportedCost } from "./usage.ts";
 *
 * reportedCost(0.1, "usage.cost"); // 0.1
 * reportedCost(undefined, "usage.cost"); // undefined
 * ```
 *
 * @param value What the provider sent.
 * @param field The field's name, for the error.
 * @returns The cost, or `undefined` when none was sent.
 * @throws {UnreadableUsageError} For a negative, non-finite, non-numeric or absurd cost.
 */
export function reportedCost(
  value: unknown,
  field: string,
): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (
    typeof value !== "number" || !Number.isFinite(value) || value < 0 ||
    value > MAX_REPORTED_COST_USD
  ) {
    throw new UnreadableUsageError(field, value);
  }
  return value;
}

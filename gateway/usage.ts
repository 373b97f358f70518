/**
 * Token usage where it enters the gateway: every provider's counts pass
 * through {@linkcode tokenCount} and {@linkcode normalUsage}, so what the
 * money path prices is always whole, non-negative and consistent. A count
 * that cannot be read is an {@linkcode UnreadableUsageError}: the call is an
 * upstream failure (502), never an unbilled answer.
 *
 * @module
 */
import type { Usage } from "./types.ts";

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
 * One token count from a provider: a number or a numeric string, rounded up
 * to a whole token; absent (`undefined`, `null`) is 0.
 *
 * @param value What the provider sent.
 * @param field The field's name, for the error.
 * @returns The count.
 * @throws {UnreadableUsageError} For a negative, non-finite, non-numeric or unsafe count.
 */
export function tokenCount(value: unknown, field: string): number {
  if (value === undefined || value === null) return 0;
  const number = typeof value === "string" && value.trim() !== ""
    ? Number(value)
    : value;
  if (
    typeof number !== "number" || !Number.isFinite(number) || number < 0 ||
    number > Number.MAX_SAFE_INTEGER
  ) {
    throw new UnreadableUsageError(field, value);
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

/**
 * Caller limits: what an operator sets on a caller key beside its balance,
 * and the checks that need no counter (expiry, the model allowlist). The
 * counted limits (requests and tokens per minute, spend per period) are
 * `counters.ts`.
 *
 * @module
 */
import { z } from "zod";
import { GatewayError } from "../../errors.ts";

/** The calendar periods a spend cap resets on, in UTC. */
export type SpendPeriod = "day" | "week" | "month";

/** Limits on one caller key; every field optional. */
export interface CallerLimits {
  /** Requests per minute (calendar minutes, UTC). */
  rpm?: number;
  /** Tokens per minute: each call counts the most it may use, then what it used. */
  tpm?: number;
  /** Spend per period, USD, on top of the balance. */
  spend?: { amount: number; period: SpendPeriod };
  /** The model ids the key may call; absent: every model. */
  models?: string[];
  /** ISO 8601 time after which the key is refused. */
  expiresAt?: string;
}

const positiveInt = z.number().int().positive().max(1e9);

/** The wire shape of {@linkcode CallerLimits}, as the admin API and CLI take it. */
export const limitsSchema: z.ZodType<CallerLimits> = z.strictObject({
  rpm: positiveInt.optional(),
  tpm: positiveInt.optional(),
  spend: z.strictObject({
    amount: z.number().positive().max(1e9),
    period: z.enum(["day", "week", "month"]),
  }).optional(),
  models: z.array(z.string().min(1)).min(1).max(1000).optional(),
  expiresAt: z.iso.datetime({ offset: true }).optional(),
});

/**
 * Whether a caller has a limit that needs counting.
 *
 * @example
 * ```ts
 * import { hasCountedLimits } from "./limits.ts";
 *
 * hasCountedLimits({ rpm: 60 }); // true
 * hasCountedLimits({ models: ["gpt-4o"] }); // false: checked without a counter
 * ```
 */
export function hasCountedLimits(limits: CallerLimits | undefined): boolean {
  return limits !== undefined &&
    (limits.rpm !== undefined || limits.tpm !== undefined ||
      limits.spend !== undefined);
}

/**
 * The calendar window containing `now`, in UTC: a minute, or a spend period
 * (days start at 00:00, weeks on Monday, months on the 1st).
 *
 * @example
 * ```ts
 * import { windowOf } from "./limits.ts";
 *
 * windowOf("week", Date.parse("2026-11-25T13:45:12Z")).start; // Date.parse("2026-11-23T00:00:00Z"), a Monday
 * ```
 *
 * @param unit The window's unit.
 * @param now Epoch ms.
 * @returns The window's start and end, epoch ms.
 */
export function windowOf(
  unit: "minute" | SpendPeriod,
  now: number,
): { start: number; end: number } {
  const date = new Date(now);
  switch (unit) {
    case "minute": {
      const start = Math.floor(now / 60_000) * 60_000;
      return { start, end: start + 60_000 };
    }
    case "day": {
      const start = Date.UTC(
        date.getUTCFullYear(),
        date.getUTCMonth(),
        date.getUTCDate(),
      );
      return { start, end: start + 86_400_000 };
    }
    case "week": {
      const day = Date.UTC(
        date.getUTCFullYear(),
        date.getUTCMonth(),
        date.getUTCDate(),
      );
      // getUTCDay: 0 is Sunday; weeks start on Monday.
      const start = day - ((date.getUTCDay() + 6) % 7) * 86_400_000;
      return { start, end: start + 7 * 86_400_000 };
    }
    case "month": {
      const start = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
      const end = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
      return { start, end };
    }
  }
}

/**
 * Refuses a call the key's static limits do not allow: an expired key (401),
 * a model outside the allowlist (403).
 *
 * @example
 * ```ts
 * import { checkStaticLimits } from "./limits.ts";
 *
 * checkStaticLimits({ models: ["gpt-4o"] }, "gpt-4o", Date.now()); // allowed
 * try {
 *   checkStaticLimits({ models: ["gpt-4o"] }, "o3", Date.now());
 * } catch (error) {
 *   console.log((error as { status: number }).status); // 403
 * }
 * ```
 *
 * @param limits The caller's limits.
 * @param model The model id asked for.
 * @param now Epoch ms.
 * @throws {GatewayError} When a limit refuses the call.
 */
export function checkStaticLimits(
  limits: CallerLimits | undefined,
  model: string,
  now: number,
): void {
  if (!limits) return;
  checkKeyExpiry(limits, now);
  if (limits.models !== undefined && !limits.models.includes(model)) {
    throw new GatewayError(
      403,
      `This key may not call "${model}"; it may call: ${
        limits.models.join(", ")
      }`,
      { code: "model_not_allowed", param: "model" },
    );
  }
}

/**
 * Refuses a key past its `expiresAt`: the part of
 * {@linkcode checkStaticLimits} that needs no body, checked before one is
 * read.
 *
 * @example
 * ```ts
 * import { checkKeyExpiry } from "./limits.ts";
 *
 * checkKeyExpiry({ expiresAt: "2999-01-01T00:00:00Z" }, Date.now()); // allowed
 * ```
 *
 * @param limits The caller's limits.
 * @param now Epoch ms.
 * @throws {GatewayError} A 401 once the key expired.
 */
export function checkKeyExpiry(
  limits: CallerLimits | undefined,
  now: number,
): void {
  if (limits?.expiresAt !== undefined && Date.parse(limits.expiresAt) <= now) {
    throw new GatewayError(
      401,
      `This key expired at ${limits.expiresAt}; ask the operator for a new one`,
      { code: "key_expired" },
    );
  }
}

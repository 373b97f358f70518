/**
 * The refusals a call gets before its body is parsed, and the reading of
 * the body: a key past its expiry; for a large body, a caller with no
 * credit, or whose counted limits (rpm, tpm, spend cap) are already
 * reached; a caller with too many bytes of bodies in flight; and, while the
 * body arrives, a balance below the least its structure can be held at
 * (`../call/hold_floor.ts`). Reading, parsing and estimating a body costs
 * time and memory in proportion to its size (a 31 MiB body took seconds and
 * hundreds of MB before its 402), so what can be refused from the headers,
 * one balance read and the body's first pieces is refused first, and each
 * caller's share of that work at any moment is bounded
 * ({@linkcode BodyBudget}).
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { GatewayError } from "../errors.ts";
import type { Billing } from "../state/credits/billing.ts";
import { formatUsd } from "../state/credits/money.ts";
import { checkKeyExpiry } from "../state/limits/limits.ts";
import type { LimitCounters } from "../state/limits/counters.ts";
import type { TokenPrices } from "../state/catalog.ts";
import type { RouteName } from "../conventions.ts";
import { floorHoldMicros } from "../call/hold_floor.ts";
import type { Caller } from "../state/callers.ts";
import { type ReadBody, readBody } from "./body_reader.ts";

/**
 * A body at least this large is refused before it is read when its caller
 * has no credit (one balance read): smaller ones cost less to read than the
 * read of the balance, and the call's hold refuses them anyway.
 */
export const PREFLIGHT_BODY_BYTES = 256 * 1024;

/**
 * The bytes of request bodies each caller has in flight in this process
 * (read, parsed, estimated, held by a call), against a bound: a caller with
 * nothing in flight always gets one body in (up to the gateway's largest),
 * and more only while their total stays within the bound.
 *
 * @example
 * ```ts
 * import { BodyBudget } from "./body_guard.ts";
 *
 * const budget = new BodyBudget(64);
 * budget.take("ck_1", 40); // true
 * budget.take("ck_1", 40); // false: 80 bytes would be in flight
 * budget.take("ck_2", 40); // true: another caller's share
 * budget.give("ck_1", 40);
 * ```
 */
export class BodyBudget {
  readonly #inFlight = new Map<string, number>();

  /**
   * A budget of `maxBytes` per caller.
   *
   * @param maxBytes The most bytes of bodies one caller may have in flight.
   */
  constructor(readonly maxBytes: number) {}

  /**
   * Counts a body in for its caller, if it fits.
   *
   * @param callerId The caller.
   * @param bytes The body's size.
   * @returns `true` when it is counted in (give it back once with {@linkcode BodyBudget.give}), `false` when the caller has too much in flight.
   */
  take(callerId: string, bytes: number): boolean {
    const held = this.#inFlight.get(callerId) ?? 0;
    if (held > 0 && held + bytes > this.maxBytes) return false;
    this.#inFlight.set(callerId, held + bytes);
    return true;
  }

  /**
   * Gives back a body counted in by {@linkcode BodyBudget.take}.
   *
   * @param callerId The caller.
   * @param bytes The body's size, as taken.
   */
  give(callerId: string, bytes: number): void {
    const left = (this.#inFlight.get(callerId) ?? 0) - bytes;
    if (left > 0) this.#inFlight.set(callerId, left);
    else this.#inFlight.delete(callerId);
  }

  /**
   * The bytes a caller has in flight.
   *
   * @param callerId The caller.
   * @returns Bytes.
   */
  inFlight(callerId: string): number {
    return this.#inFlight.get(callerId) ?? 0;
  }
}

/** What {@linkcode bodyGuard} puts on the context: the caller (set before it) and the body read. */
export type BodyEnv = { Variables: { caller: Caller; body: ReadBody } };

/** What {@linkcode bodyGuard} needs. */
export interface BodyGuardOptions {
  /** The callers' balances. */
  billing: Pick<Billing, "balance">;
  /** The callers' counted limits, read before a large body is. */
  limits: Pick<LimitCounters, "refusalBeforeBody">;
  /** Each caller's bytes in flight. */
  budget: BodyBudget;
  /** The largest body the gateway accepts (a body of unknown size counts as this). */
  maxBodyBytes: number;
  /** The cheapest rates any call on a route is held at (`cheapestRates`), from the catalog as it is now. */
  cheapestRates(route: RouteName): TokenPrices;
}

/**
 * Middleware run after the caller is authenticated: refuses an expired key
 * (401); for a body of at least {@linkcode PREFLIGHT_BODY_BYTES} (its
 * `content-length`; a body without one counts as the largest accepted), a
 * caller whose balance is not above zero (402) and, on an inference route,
 * one whose counted limits are already reached (429 or 402, as the call's
 * own check says); a body that would take its caller past the bytes it may
 * have in flight (429, `retry-after: 1`). Then it reads the body
 * (`c.get("body")`), refused with 413 past the largest accepted and, on an
 * inference route with a large body, with 402 as soon as what has arrived
 * is held at more than the balance: the rest is not read, nothing is parsed.
 *
 * @param options Balances, limits, the budget, the largest body and the catalog's rates.
 * @returns For a route, its middleware (`undefined`: a request that holds no credit, as counting tokens).
 */
export function bodyGuard(
  options: BodyGuardOptions,
): (route?: RouteName) => MiddlewareHandler<BodyEnv> {
  const { billing, limits, budget, maxBodyBytes } = options;
  return (route) => async (c, next) => {
    const caller = c.get("caller");
    checkKeyExpiry(caller.limits, Date.now());
    const declared = Number(c.req.header("content-length") ?? NaN);
    const bytes = Number.isSafeInteger(declared) && declared >= 0
      ? Math.min(declared, maxBodyBytes)
      : maxBodyBytes;
    let check: ((floorTokens: number) => void) | undefined;
    if (bytes >= PREFLIGHT_BODY_BYTES) {
      const balance = await billing.balance(caller.id);
      if (balance <= 0) {
        throw new GatewayError(
          402,
          `Insufficient credits: the balance is $${
            formatUsd(balance)
          }, and a call needs a balance above zero; add credits`,
        );
      }
      if (route !== undefined) {
        const rates = options.cheapestRates(route);
        const refusal = await limits.refusalBeforeBody(
          caller,
          floorHoldMicros(1, rates),
        );
        if (refusal) throw refusal;
        check = (floorTokens) => {
          const least = floorHoldMicros(floorTokens, rates);
          if (least > balance) throw bodyOverBalance(least, balance);
        };
      }
    }
    if (!budget.take(caller.id, bytes)) {
      throw new GatewayError(
        429,
        `This key has ${
          budget.inFlight(caller.id)
        } bytes of request bodies in flight, and may have at most ${budget.maxBytes} (GATEWAY_MAX_CALLER_BODY_BYTES); retry once they are answered`,
        { code: "bodies_in_flight", retryAfterSeconds: 1 },
      );
    }
    try {
      c.set(
        "body",
        await readBody(c.req.raw, { maxBytes: maxBodyBytes, check }),
      );
      await next();
    } finally {
      budget.give(caller.id, bytes);
    }
  };
}

/**
 * The 402 of a body whose structure alone is held at more than the balance:
 * the hold's own refusal (`reserveHold`), with what is known before the
 * body is parsed.
 */
function bodyOverBalance(leastMicros: number, balance: number): GatewayError {
  return new GatewayError(
    402,
    `Insufficient credits: this call may cost at least $${
      formatUsd(leastMicros)
    } (what its body holds at the cheapest price on this route) and $${
      formatUsd(Math.max(0, balance))
    } is available; send a smaller body or add credits`,
  );
}

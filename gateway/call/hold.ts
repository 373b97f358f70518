/**
 * The credit hold of a call: the most it may cost on whichever candidate
 * serves it, reserved from the caller's balance before anything is sent.
 *
 * @module
 */
import { GatewayError } from "../errors.ts";
import type { Billing } from "../state/credits/billing.ts";
import type { Reservation } from "../state/credits/reservation.ts";
import type { Caller } from "../state/callers.ts";
import type { CatalogEntry } from "../state/catalog.ts";
import { formatUsd, MAX_BALANCE_MICROS } from "../state/credits/money.ts";
import { outputLimit, type ParsedCall } from "./input.ts";
import type { BillableFeatures } from "./billable.ts";
import { chargeMicros } from "./charge.ts";

/**
 * The dearest cache write a request asks for: `1h` when any `cache_control`
 * in it asks for a 1-hour lifetime, `5m` for any other, `none` without one.
 * The hold prices its input as all written at that price, the most it can
 * be billed.
 */
export type HeldCacheWrite = "none" | "5m" | "1h";

/**
 * The dearest cache write a body asks for (see {@linkcode HeldCacheWrite}).
 *
 * @example
 * ```ts
 * import { heldCacheWrite } from "./hold.ts";
 *
 * heldCacheWrite({ system: [{ type: "text", text: "…", cache_control: { type: "ephemeral", ttl: "1h" } }] }); // "1h"
 * heldCacheWrite({ messages: [] }); // "none"
 * ```
 *
 * @param body The caller's parsed body.
 * @returns The write to hold for.
 */
export function heldCacheWrite(body: unknown): HeldCacheWrite {
  let held: HeldCacheWrite = "none";
  // A stack, not recursion: a hostile body may nest deep. Items are pushed
  // one at a time: spreading an array of a million messages into push()
  // passes a million arguments, past the call stack.
  const pending: unknown[] = [body];
  while (pending.length > 0) {
    const value = pending.pop();
    if (Array.isArray(value)) {
      for (const item of value) pending.push(item);
    } else if (typeof value === "object" && value !== null) {
      const record = value as Record<string, unknown>;
      const control = record.cache_control;
      if (typeof control === "object" && control !== null) {
        if ((control as { ttl?: unknown }).ttl === "1h") return "1h";
        held = "5m";
      }
      for (const key in record) pending.push(record[key]);
    }
  }
  return held;
}

/**
 * The most a call may cost on any of its candidates, micro-USD, with the
 * model that costs it.
 *
 * @param candidates The models that may serve the call.
 * @param inputTokens The input tokens estimated.
 * @param parsed The caller's output limit, answers asked for and predicted tokens.
 * @param features What the call asks for beyond tokens (a tier, web searches).
 * @param cacheWrite The dearest cache write the body asks for: the input is held at its price.
 * @param storedContext The body names stored context of unknown size (`namesStoredContext`): the input is held at the model's context window less the output.
 * @returns The amount to hold and the candidate it is for.
 * @throws {GatewayError} A 500 for a model whose price the money maths cannot hold; a 400 for stored context on a model whose context window the catalog does not give.
 */
export function holdFor(
  candidates: readonly CatalogEntry[],
  inputTokens: number,
  parsed: Pick<ParsedCall, "maxOutputTokens" | "choices" | "predictedTokens">,
  features: BillableFeatures = { webSearches: 0 },
  cacheWrite: HeldCacheWrite = "none",
  storedContext = false,
): { amount: number; entry: CatalogEntry } {
  let hold = { amount: -1, entry: candidates[0] };
  for (const entry of candidates) {
    const limit = outputLimit(entry, parsed.maxOutputTokens);
    // Stored context can fill the window, whatever the body shows of it.
    // Without a window nothing bounds what the provider bills for it, and
    // concurrent calls held below their bill ran a caller into debt and
    // past its spend cap: such a call is refused instead.
    if (storedContext && entry.contextWindow === undefined) {
      throw unboundedContext(entry);
    }
    const input = storedContext
      ? Math.max(Math.ceil(inputTokens), entry.contextWindow! - limit)
      : Math.ceil(inputTokens);
    let amount: number;
    try {
      amount = chargeMicros(
        {
          inputTokens: input,
          outputTokens: Math.ceil(
            parsed.choices * (parsed.predictedTokens + limit),
          ),
          cachedInputTokens: 0,
          ...(cacheWrite === "5m" && { cacheWriteTokens: input }),
          ...(cacheWrite === "1h" && { cacheWrite1hTokens: input }),
          webSearches: features.webSearches,
        },
        entry.pricing,
        features.tier,
      );
    } catch (error) {
      throw priceOutOfRange(entry, String(error));
    }
    if (!Number.isSafeInteger(amount) || amount > MAX_BALANCE_MICROS) {
      throw priceOutOfRange(
        entry,
        `a call may cost ${amount} micro-USD, above the most the gateway can charge (${MAX_BALANCE_MICROS})`,
      );
    }
    if (amount > hold.amount) hold = { amount, entry };
  }
  return hold;
}

/**
 * The 400 for a call naming stored context on a model whose context window
 * the catalog does not give: nothing bounds what it would be billed.
 *
 * @param entry The model.
 * @returns The error to throw.
 */
function unboundedContext(entry: CatalogEntry): GatewayError {
  return new GatewayError(
    400,
    `Model "${entry.id}" has no context window in the catalog, so the stored context this call names (previous_response_id, conversation, a stored prompt, an item_reference input or cachedContent) cannot be held for: send the context in the body, or ask the operator to set the model's contextWindow`,
    { code: "stored_context_unbounded" },
  );
}

/**
 * A model whose stored price the money maths cannot hold: the operator's to
 * fix, said in the log and to the caller.
 *
 * @param entry The model.
 * @param why What the maths refused.
 * @returns The 500 to fail the call with.
 */
export function priceOutOfRange(
  entry: CatalogEntry,
  why: string,
): GatewayError {
  return new GatewayError(
    500,
    `Model "${entry.id}" cannot be charged: its price (input ${entry.pricing.input}, output ${entry.pricing.output} USD per million tokens, up to ${entry.maxOutputTokens} output tokens) is out of range: ${why}; the operator must correct it (PUT /admin/models/${entry.id})`,
    { code: "model_price_out_of_range" },
  );
}

/**
 * Reserves the hold from the caller's balance.
 *
 * @param billing The credit store.
 * @param caller The caller.
 * @param hold The amount to hold, micro-USD.
 * @returns The reservation.
 * @throws {GatewayError} A 402 saying what the call may cost and what is available.
 */
export async function reserveHold(
  billing: Billing,
  caller: Caller,
  hold: { amount: number },
): Promise<Reservation> {
  const { amount } = hold;
  const result = await billing.reserve(caller.id, amount);
  if (!result.ok) {
    throw new GatewayError(
      402,
      `Insufficient credits: this call may cost up to $${
        formatUsd(amount)
      } and $${
        formatUsd(Math.max(0, result.availableMicros))
      } is available; lower max_tokens or add credits`,
    );
  }
  return result.reservation;
}

/**
 * Refuses a request that holds nothing (creating a conversation, counting
 * tokens) unless the caller's balance is above zero.
 *
 * @example
 * ```ts ignore
 * import { requireCredit } from "./hold.ts";
 *
 * await requireCredit(deps.billing, caller.id, "counting tokens");
 * ```
 *
 * @param billing The balances.
 * @param callerId The caller.
 * @param doing What the request does, for the refusal: `counting tokens`.
 * @throws {GatewayError} 402 naming the balance.
 */
export async function requireCredit(
  billing: Pick<Billing, "balance">,
  callerId: string,
  doing: string,
): Promise<void> {
  const balance = await billing.balance(callerId);
  if (balance <= 0) {
    throw new GatewayError(
      402,
      `Insufficient credits: ${doing} needs a balance above zero, and the balance is $${
        formatUsd(balance)
      }; add credits`,
    );
  }
}

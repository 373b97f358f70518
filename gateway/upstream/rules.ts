/**
 * What an upstream attempt's answer means, whatever the provider: pure
 * functions of the answer, tested on their own. {@linkcode ruleOfAnswer}
 * (status and headers) and {@linkcode ruleOfThrown} (no answer) give an
 * {@linkcode UpstreamRule}; {@linkcode keyOutcomeOf} says how the key goes
 * back to the pool, {@linkcode nextMove} whether the call tries another key
 * or fails, and the caller's errors are built here ({@linkcode answerError},
 * {@linkcode noKeyError}, {@linkcode upstreamFailure},
 * {@linkcode unreadableUsage}). `send.ts` carries them out.
 *
 * @module
 */
import { GatewayError } from "../errors.ts";
import type { KeyOutcome } from "./key_pool.ts";
import type { ProviderName } from "./providers/mod.ts";
import type { UnreadableUsageError } from "./usage.ts";

/** How many more keys of one provider a call tries after a 5xx or a connection failure. */
export const TRANSIENT_RETRIES = 1;

/**
 * The longest cool-down a provider's `retry-after` can set on a key, ms (an
 * hour, the longest a refused key cools down by default): a provider that
 * asks for more (`retry-after: 1e300`, a date years ahead) would otherwise
 * take the key out of every process sharing the store until restart.
 */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * What one upstream attempt's answer means, whatever the provider:
 * - `serve`: a 2xx; the answer goes to the caller;
 * - `cool`: a 429; the key cools down (the provider's `retry-after`, else the
 *   pool's default) and another key is tried;
 * - `refusal`: a 401 or 403; the pool says whether the key is to blame
 *   (another key is tried) or the request (the call fails with the
 *   provider's reason);
 * - `transient`: a 5xx or no connection; one more key, then the call fails
 *   (and may fall back to another model);
 * - `fail`: anything else (another 4xx, a timeout, the caller gone); the
 *   call fails with `status`;
 * - `requestRefused`: a 429 or 403 the provider worded as being about the
 *   request (its size, its content, a feature): the call fails with
 *   `status` and the key goes back untouched ({@linkcode aboutTheRequest});
 * - `skipKey`: a 429 of an endpoint with limits of its own (token
 *   counting): another key is tried, and this one goes back untouched, its
 *   room for calls unknown to the 429.
 */
export type UpstreamRule =
  | { action: "serve" }
  | { action: "cool"; retryAfterMs?: number }
  | { action: "refusal"; status: number }
  | { action: "transient" }
  | { action: "fail"; status: number }
  | { action: "requestRefused"; status: number }
  | { action: "skipKey"; retryAfterMs?: number };

/** What says a 429 or 403 is about the request rather than the key. */
export interface RequestBlame {
  /** The provider's wordings of an answer about the request (`Provider.requestRefusals`). */
  requestRefusals?: readonly RegExp[];
  /** The endpoint has rate limits of its own (token counting): its 429 says nothing of the key's limits for calls. */
  ownRateLimits?: boolean;
}

/**
 * Turns a 429 or 403 that is about the request into `requestRefused` (the
 * provider's message matches one of its wordings of such an answer: OpenAI's
 * 429 "Request too large", OpenRouter's moderation 403), and a 429 from an
 * endpoint with limits of its own into `skipKey`. Any other rule is
 * returned as it is: a 401 is always the key's.
 *
 * @param rule The rule of the answer's status.
 * @param message The provider's message, its key scrubbed.
 * @param blame The provider's wordings, and whether the endpoint has its own limits.
 * @returns The rule, `requestRefused` when the answer is about the request.
 *
 * @example
 * ```ts
 * import { aboutTheRequest } from "./rules.ts";
 *
 * aboutTheRequest({ action: "cool" }, "Request too large for gpt-4o", {
 *   requestRefusals: [/^Request too large/],
 * }); // { action: "requestRefused", status: 429 }
 * ```
 */
export function aboutTheRequest(
  rule: UpstreamRule,
  message: string,
  blame: RequestBlame,
): UpstreamRule {
  const status = rule.action === "cool"
    ? 429
    : rule.action === "refusal" && rule.status === 403
    ? 403
    : undefined;
  if (status === undefined) return rule;
  if (blame.requestRefusals?.some((wording) => wording.test(message))) {
    return { action: "requestRefused", status };
  }
  if (rule.action === "cool" && blame.ownRateLimits) {
    return { ...rule, action: "skipKey" };
  }
  return rule;
}

/**
 * The rule for an upstream answer, from its status and headers.
 *
 * @param status The upstream status.
 * @param headers The upstream headers (`retry-after`).
 * @param now Epoch ms, for a `retry-after` given as a date.
 * @returns The rule.
 *
 * @example
 * ```ts
 * import { ruleOfAnswer } from "./rules.ts";
 *
 * ruleOfAnswer(429, new Headers({ "retry-after": "3" })); // { action: "cool", retryAfterMs: 3000 }
 * ```
 */
export function ruleOfAnswer(
  status: number,
  headers: Headers,
  now: number = Date.now(),
): UpstreamRule {
  if (status >= 200 && status < 300) return { action: "serve" };
  if (status === 429) {
    return { action: "cool", retryAfterMs: retryAfterMs(headers, now) };
  }
  if (status === 401 || status === 403) return { action: "refusal", status };
  if (status >= 500) return { action: "transient" };
  return { action: "fail", status };
}

/**
 * The rule for an upstream request that got no answer: a timeout (504) or
 * the caller gone (499) fail the call; anything else (the provider
 * unreachable) is transient.
 *
 * @param signal The request's abort signal, which says why it stopped.
 * @returns The rule.
 */
export function ruleOfThrown(signal: AbortSignal): UpstreamRule {
  if (!signal.aborted) return { action: "transient" };
  return {
    action: "fail",
    status: (signal.reason as DOMException)?.name === "TimeoutError"
      ? 504
      : 499,
  };
}

/** Who sent the request an attempt was for: the pool weighs and names the evidence by it. */
export interface Sender {
  /** The gateway request. */
  requestId: string;
  /** The caller's id (a 403 counts once per caller; a cool-down names it). */
  callerId: string;
}

/**
 * How a key goes back to the pool after an attempt that did not serve.
 *
 * @param rule The attempt's rule.
 * @param sender The request and caller the attempt was for.
 * @returns The key's outcome.
 */
export function keyOutcomeOf(
  rule: UpstreamRule,
  sender: Sender,
): KeyOutcome {
  switch (rule.action) {
    case "cool":
      return {
        kind: "rateLimited",
        retryAfterMs: rule.retryAfterMs,
        ...sender,
      };
    case "refusal":
      return { kind: "refused", status: rule.status, ...sender };
    case "serve":
      // Not given back here: the answer is handed over with its key.
      return { kind: "answered", tokens: 0 };
    default:
      return { kind: "failed" };
  }
}

/**
 * What the call does after an attempt: serve the answer, try the provider's
 * next key, or fail.
 *
 * @param rule The attempt's rule.
 * @param keyBlamed Whether the pool blamed a refusal on the key.
 * @param transientRetries Transient failures already retried by this call.
 * @returns The move.
 */
export function nextMove(
  rule: UpstreamRule,
  keyBlamed: boolean,
  transientRetries: number,
): "serve" | "nextKey" | "fail" {
  switch (rule.action) {
    case "serve":
      return "serve";
    case "cool":
    case "skipKey":
      return "nextKey";
    case "refusal":
      return keyBlamed ? "nextKey" : "fail";
    case "transient":
      return transientRetries < TRANSIENT_RETRIES ? "nextKey" : "fail";
    case "fail":
    case "requestRefused":
      return "fail";
  }
}

/** What the attempts so far leave the caller with when no key is left. */
export interface Tried {
  /** The earliest a key that answered 429 during this call frees up, ms. */
  soonestCooledMs: number;
  /** The provider's message with the latest 429. */
  rateLimitMessage: string;
  /** The latest transient failure. */
  lastTransient?: GatewayError;
  /** The latest refusal blamed on a key. */
  lastRefusal?: GatewayError;
}

/**
 * The caller's error when the pool has no key left for the call.
 *
 * @param provider The provider.
 * @param retryAfterMs The pool's wait until a key frees up; -1 for no key at all.
 * @param tried What the call's attempts met.
 * @returns The error.
 */
export function noKeyError(
  provider: ProviderName,
  retryAfterMs: number,
  tried: Tried,
): GatewayError {
  if (Number.isFinite(tried.soonestCooledMs)) {
    // "Retry after" is when any key frees up: the soonest of the keys
    // refused here and of those the pool already held back.
    const waitMs = retryAfterMs < 0
      ? tried.soonestCooledMs
      : Math.min(tried.soonestCooledMs, retryAfterMs);
    return new GatewayError(429, tried.rateLimitMessage, {
      code: "upstream_rate_limited",
      retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
    });
  }
  if (tried.lastTransient) return tried.lastTransient;
  if (tried.lastRefusal) return tried.lastRefusal;
  if (retryAfterMs < 0) {
    return new GatewayError(
      503,
      `No ${provider} key is available to the gateway`,
      { code: "no_provider_key" },
    );
  }
  return new GatewayError(
    429,
    `Every ${provider} key is at its rate limit; retry later`,
    { retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) },
  );
}

/**
 * The caller's error for an upstream answer that did not serve.
 *
 * @param provider The provider.
 * @param rule The answer's rule.
 * @param status The upstream status.
 * @param message The provider's message, its key scrubbed.
 * @returns The error.
 */
export function answerError(
  provider: ProviderName,
  rule: UpstreamRule,
  status: number,
  message: string,
): GatewayError {
  switch (rule.action) {
    case "cool":
      return new GatewayError(429, message, { code: "upstream_rate_limited" });
    case "refusal":
      // Thrown when the request is to blame (a key blamed is tried no more).
      return new GatewayError(status, message, { code: "upstream_refused" });
    case "skipKey":
      return new GatewayError(429, message, { code: "upstream_rate_limited" });
    case "requestRefused":
      return new GatewayError(status, message, { code: "upstream_refused" });
    case "transient":
      return new GatewayError(
        502,
        `The ${provider} provider failed: ${message}`,
        { code: "upstream_error" },
      );
    default:
      return new GatewayError(status, message, { code: "upstream_error" });
  }
}

/** A `retry-after` header in ms (seconds or a date), capped at {@linkcode MAX_RETRY_AFTER_MS}. */
function retryAfterMs(headers: Headers, now: number): number | undefined {
  const value = headers.get("retry-after");
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) {
    return Math.min(MAX_RETRY_AFTER_MS, seconds * 1000);
  }
  const date = Date.parse(value);
  return Number.isNaN(date)
    ? undefined
    : Math.min(MAX_RETRY_AFTER_MS, Math.max(0, date - now));
}

/**
 * The caller's error for an upstream request that threw: a timeout (504), the
 * caller gone (499) or the provider unreachable (502).
 *
 * @param provider The provider.
 * @param error What fetch threw.
 * @param signal The request's abort signal, which says why it stopped.
 * @returns The error.
 */
export function upstreamFailure(
  provider: ProviderName,
  error: unknown,
  signal: AbortSignal,
): GatewayError {
  if (
    signal.aborted && (signal.reason as DOMException)?.name === "TimeoutError"
  ) {
    return new GatewayError(
      504,
      `The ${provider} provider did not answer in time`,
      { code: "upstream_timeout" },
    );
  }
  if (signal.aborted) {
    return new GatewayError(499, "The caller closed the request", {
      code: "client_closed",
    });
  }
  return new GatewayError(
    502,
    `The ${provider} provider could not be reached: ${
      (error as Error).message
    }`,
    {
      code: "upstream_unreachable",
    },
  );
}

/**
 * A usage count the gateway cannot read: the call failed upstream (502), and
 * its hold goes back.
 *
 * @param error The usage error.
 * @returns The caller's error.
 */
export function unreadableUsage(error: UnreadableUsageError): GatewayError {
  return new GatewayError(502, error.message, { code: "upstream_garbage" });
}

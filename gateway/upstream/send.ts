/**
 * Sending a request upstream with a key from the pool, and reading a
 * non-streamed answer: the one sender every route that spends a provider key
 * goes through (calls and token counting alike).
 *
 * What an answer means is decided by pure functions of the answer, tested on
 * their own: {@linkcode ruleOfAnswer} (status and headers) and
 * {@linkcode ruleOfThrown} (no answer) give an {@linkcode UpstreamRule};
 * {@linkcode keyOutcomeOf} says how the key goes back to the pool, and
 * {@linkcode nextMove} whether the call tries another key or fails.
 * {@linkcode sendUpstream} only carries them out: each key it takes is given
 * back once, in one `finally`, unless it is handed over with the answer.
 *
 * @module
 */
import { deadlines, upstreamTimeout } from "./deadlines.ts";
import { GatewayError } from "../errors.ts";
import { scrubKey } from "./key_pool.ts";
import type { Exchange, Provider } from "./providers/provider.ts";
import { parseJson } from "./providers/provider.ts";
import type { KeyOutcome, KeyPool, ProviderKey } from "./key_pool.ts";
import type { ProviderName } from "./providers/provider.ts";
import type { Usage } from "./usage.ts";
import { UnreadableUsageError } from "./usage.ts";

/** How many more keys of one provider a call tries after a 5xx or a connection failure. */
export const TRANSIENT_RETRIES = 1;

/**
 * The longest cool-down a provider's `retry-after` can set on a key, ms (an
 * hour, the longest a refused key cools down by default): a provider that
 * asks for more (`retry-after: 1e300`, a date years ahead) would otherwise
 * take the key out of every process sharing the store until restart.
 */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/** What the sender needs of the gateway: the key pool, where each provider is, and its timeouts. */
export interface UpstreamSettings {
  /** Provider keys. */
  keyPool: KeyPool;
  /** Upstream base URL of each provider. */
  baseUrls: Record<ProviderName, string>;
  /** Time allowed for an upstream to answer, ms. */
  upstreamTimeoutMs: number;
  /** Cool-down of a key after a 429 without `retry-after`, ms (the pool's default). */
  keyCooldownMs: number;
}

/** One request to send upstream. */
export interface UpstreamRequest {
  /** The provider: its auth headers and error messages. */
  provider: Pick<Provider, "name" | "headers" | "errorMessage">;
  /** The path after the provider's base URL. */
  path: string;
  /** The JSON body. */
  body: unknown;
  /** Headers beside the provider's auth headers. */
  headers?: Record<string, string>;
  /** The request's tokens, for the keys' TPM. */
  estimatedTokens: number;
  /** Aborted when the caller goes away. */
  signal: AbortSignal;
  /** The gateway request id (a 403 is counted once per request). */
  requestId: string;
  /** Where the sender lists the id of each key it tries, for the call's trace. */
  keysTried?: string[];
}

/**
 * An upstream answer in flight, handed over with its key: whoever receives
 * it gives the key back (`KeyPool.release`) once the answer is used up.
 */
export interface Upstream {
  /** The upstream's response (its status is 2xx). */
  response: Response;
  /** The key it was sent with, still lent. */
  key: ProviderKey;
  /** Aborts the upstream request (a timeout, the caller gone before the answer, or the relay). */
  abort: AbortController;
  /** `abort`'s signal. */
  signal: AbortSignal;
  /** Clears the answer timeout (the stream relay keeps its own idle timeout). */
  clearTimeout(): void;
}

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
 *   call fails with `status`.
 */
export type UpstreamRule =
  | { action: "serve" }
  | { action: "cool"; retryAfterMs?: number }
  | { action: "refusal"; status: number }
  | { action: "transient" }
  | { action: "fail"; status: number };

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
 * import { ruleOfAnswer } from "./send.ts";
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

/**
 * How a key goes back to the pool after an attempt that did not serve.
 *
 * @param rule The attempt's rule.
 * @param requestId The gateway request (a 403 counts once per request).
 * @returns The key's outcome.
 */
export function keyOutcomeOf(
  rule: UpstreamRule,
  requestId: string,
): KeyOutcome {
  switch (rule.action) {
    case "cool":
      return { kind: "rateLimited", retryAfterMs: rule.retryAfterMs };
    case "refusal":
      return { kind: "refused", status: rule.status, requestId };
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
      return "nextKey";
    case "refusal":
      return keyBlamed ? "nextKey" : "fail";
    case "transient":
      return transientRetries < TRANSIENT_RETRIES ? "nextKey" : "fail";
    case "fail":
      return "fail";
  }
}

/** What the attempts so far leave the caller with when no key is left. */
interface Tried {
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

/** The longest a call waits for a shared slice's claim before it is refused, ms. */
const CLAIM_WAIT_MS = 2_000;

/** Resolves when `promise` settles or after `ms`, whichever comes first. */
async function settledWithin(promise: Promise<void>, ms: number) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      promise.catch(() => {}),
      new Promise((resolve) => timer = setTimeout(resolve, ms)),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Sends a request with a key from the pool, following the rules above: a
 * 429 or a refusal blamed on the key moves to the next key, a transient
 * failure to one more key, anything else fails the call, since nothing has
 * reached the caller yet. Every key taken is given back to the pool once,
 * except the one handed over with the answer.
 *
 * @param settings The key pool, base URLs and timeouts.
 * @param request What to send, and the caller's signal.
 * @returns The answer, once its status is a success, with its key still lent.
 * @throws {GatewayError} When no key serves the request.
 */
export async function sendUpstream(
  settings: UpstreamSettings,
  request: UpstreamRequest,
): Promise<Upstream> {
  const { keyPool } = settings;
  const { provider } = request;
  const tried = new Set<string>();
  const body = JSON.stringify(request.body);
  const url = settings.baseUrls[provider.name] + request.path;
  const met: Tried = { soonestCooledMs: Infinity, rateLimitMessage: "" };
  let transientRetries = 0;
  let waitedForClaims = false;
  for (;;) {
    const acquired = keyPool.acquire(
      provider.name,
      request.estimatedTokens,
      tried,
    );
    if (!acquired.ok) {
      // A slice of a key's shared limit is one store commit away (the first
      // call of a new minute starts its claim): wait for it once, briefly,
      // rather than refuse a call the key has room for.
      const claims = waitedForClaims ? undefined : keyPool.pendingClaims?.();
      if (claims) {
        waitedForClaims = true;
        await settledWithin(claims, CLAIM_WAIT_MS);
        continue;
      }
      throw noKeyError(provider.name, acquired.retryAfterMs, met);
    }
    const key = acquired.key;
    tried.add(key.keyId);
    request.keysTried?.push(key.keyId);
    // Until the answer is in, a timeout or the caller going away aborts the
    // upstream request. Neither is AbortSignal.timeout/any: both must stop
    // once the answer is in (a stream then has an idle timeout per event,
    // and a caller who leaves a stream is handled by its relay, which may
    // read on for the usage event first), and those cannot be detached. The
    // timeout is a deadline on the process's one timer, not a timer per call.
    const abort = new AbortController();
    const signal = abort.signal;
    const onCallerGone = () =>
      abort.abort(new DOMException("Caller went away", "AbortError"));
    request.signal.addEventListener("abort", onCallerGone, { once: true });
    if (request.signal.aborted) onCallerGone();
    const answer = upstreamTimeout(abort);
    deadlines.watch(answer, settings.upstreamTimeoutMs);
    const clear = () => {
      deadlines.forget(answer);
      request.signal.removeEventListener("abort", onCallerGone);
    };
    let handedOver = false;
    try {
      let rule: UpstreamRule;
      let error: GatewayError;
      try {
        const response = await fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...request.headers,
            ...provider.headers(key.secret),
          },
          body,
          signal,
        });
        rule = ruleOfAnswer(response.status, response.headers);
        if (rule.action === "serve") {
          handedOver = true;
          return { response, key, abort, signal, clearTimeout: clear };
        }
        const text = await response.text().catch(() => "");
        // Providers may quote the key they were sent; it never goes further.
        const message = scrubKey(provider.errorMessage(text), key);
        error = answerError(provider.name, rule, response.status, message);
        if (rule.action === "cool") {
          met.soonestCooledMs = Math.min(
            met.soonestCooledMs,
            rule.retryAfterMs ?? settings.keyCooldownMs,
          );
          met.rateLimitMessage = message;
        }
      } catch (thrown) {
        rule = ruleOfThrown(signal);
        error = upstreamFailure(provider.name, thrown, signal);
      }
      const keyBlamed = keyPool.release(
        key,
        keyOutcomeOf(rule, request.requestId),
      );
      const move = nextMove(rule, keyBlamed, transientRetries);
      if (move === "fail") throw error;
      if (rule.action === "transient") {
        transientRetries++;
        met.lastTransient = error;
      }
      if (rule.action === "refusal") {
        met.lastRefusal = new GatewayError(
          502,
          `The ${provider.name} provider refused the gateway's key`,
          { code: "upstream_auth" },
        );
      }
    } finally {
      if (!handedOver) {
        clear();
        // Does nothing when the attempt already gave the key back.
        keyPool.release(key, { kind: "failed" });
      }
    }
  }
}

/** The caller's error for an upstream answer that did not serve. */
function answerError(
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

/**
 * Reads a non-streamed answer: its text, parsed for the caller's body and
 * the usage. A body the exchange passed through untouched is returned as
 * `text` alone (`body` undefined), for the caller as it came. The answer's
 * key stays lent: the call gives it back.
 *
 * @param exchange The exchange the call was sent by.
 * @param upstream The upstream answer.
 * @returns The caller's body (undefined when unchanged), the usage and the text.
 * @throws {GatewayError} 502 for an answer that is not JSON or not in the expected shape, or the answer's failure.
 */
export async function readAnswer(
  exchange: Pick<Exchange, "response">,
  upstream: Upstream,
): Promise<{ body?: unknown; usage: Usage; text: string }> {
  let text: string;
  try {
    text = await upstream.response.text();
  } catch (error) {
    throw upstreamFailure(upstream.key.provider, error, upstream.signal);
  } finally {
    upstream.clearTimeout();
  }
  const json = parseJson(text);
  if (json === undefined || typeof json !== "object" || json === null) {
    throw new GatewayError(
      502,
      `The ${upstream.key.provider} provider answered with a body that is not JSON`,
      { code: "upstream_garbage" },
    );
  }
  try {
    const { body, usage } = exchange.response(json);
    return { body: body === json ? undefined : body, usage, text };
  } catch (error) {
    if (error instanceof UnreadableUsageError) throw unreadableUsage(error);
    throw new GatewayError(
      502,
      `The ${upstream.key.provider} provider answered in an unexpected shape`,
      { code: "upstream_garbage" },
    );
  }
}

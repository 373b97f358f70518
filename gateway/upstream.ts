/**
 * Sending a call upstream with a key from the pool, and reading a
 * non-streamed answer: key rotation on 429s and refusals, one more key after
 * a 5xx or an unreachable provider, the answer timeout and the caller going
 * away.
 *
 * @module
 */
import { deadlines, upstreamTimeout } from "./_deadlines.ts";
import type { CallDeps } from "./call.ts";
import { GatewayError } from "./errors.ts";
import type { Exchange, Provider } from "./providers/provider.ts";
import { parseJson } from "./providers/provider.ts";
import type { ProviderKey, ProviderName, Usage } from "./types.ts";
import { UnreadableUsageError } from "./usage.ts";

/** How many more keys of one provider a call tries after a 5xx or a connection failure. */
const TRANSIENT_RETRIES = 1;

/** An upstream answer in flight: its response, key and how to stop it. */
export interface Upstream {
  /** The upstream's response (its status is 2xx). */
  response: Response;
  /** The key it was sent with. */
  key: ProviderKey;
  /** Aborts the upstream request (a timeout, the caller gone before the answer, or the relay). */
  abort: AbortController;
  /** `abort`'s signal. */
  signal: AbortSignal;
  /** Clears the answer timeout (the stream relay keeps its own idle timeout). */
  clearTimeout(): void;
}

/** What sending reads of the call, and the key it records there. */
export interface UpstreamCall {
  /** The caller's request: its abort signal and id. */
  readonly request: {
    readonly signal: AbortSignal;
    readonly requestId: string;
  };
  /** The key the latest attempt used. */
  key?: ProviderKey;
}

/**
 * Sends the exchange with a key from the pool. A 429 cools the key down, and a
 * refusal the pool blames on the key (a 401, or 403s across requests) cools it
 * for longer; either way the next key is tried, since nothing has reached the
 * caller yet. A 403 about the request fails the call.
 *
 * @param deps The key pool, base URLs and timeouts.
 * @param record The call (its key is recorded there).
 * @param provider The provider.
 * @param exchange What to send.
 * @param estimatedTokens The call's tokens for the keys' counted limits.
 * @returns The answer, once its status is a success.
 * @throws {GatewayError} When no key serves the call.
 */
export async function sendUpstream(
  deps: CallDeps,
  record: UpstreamCall,
  provider: Provider,
  exchange: Exchange,
  estimatedTokens: number,
): Promise<Upstream> {
  const providerName = provider.name;
  const tried = new Set<string>();
  const body = JSON.stringify(exchange.body);
  const url = deps.baseUrls[providerName] + exchange.path;
  let lastRefusal: GatewayError | undefined;
  // The earliest a key that answered 429 during this call frees up, ms.
  let soonestCooledMs = Infinity;
  let rateLimitMessage = "";
  // A 5xx or a connection failure on one key is tried on another key of the
  // provider, at most this many times, before the call gives up on it.
  let transientRetries = 0;
  let lastTransient: GatewayError | undefined;
  for (;;) {
    const acquired = deps.keyPool.acquire(providerName, estimatedTokens, tried);
    if (!acquired.ok) {
      if (Number.isFinite(soonestCooledMs)) {
        // "Retry after" is when any key frees up: the soonest of the keys
        // refused here and of those the pool already held back.
        const waitMs = acquired.retryAfterMs < 0
          ? soonestCooledMs
          : Math.min(soonestCooledMs, acquired.retryAfterMs);
        throw new GatewayError(429, rateLimitMessage, {
          code: "upstream_rate_limited",
          retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
        });
      }
      if (lastTransient) throw lastTransient;
      if (lastRefusal) throw lastRefusal;
      if (acquired.retryAfterMs < 0) {
        throw new GatewayError(
          503,
          `No ${providerName} key is available to the gateway`,
          { code: "no_provider_key" },
        );
      }
      throw new GatewayError(
        429,
        `Every ${providerName} key is at its rate limit; retry later`,
        {
          retryAfterSeconds: Math.max(
            1,
            Math.ceil(acquired.retryAfterMs / 1000),
          ),
        },
      );
    }
    const key = acquired.key;
    record.key = key;
    tried.add(key.keyId);
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
    record.request.signal.addEventListener("abort", onCallerGone, {
      once: true,
    });
    const answer = upstreamTimeout(abort);
    deadlines.watch(answer, deps.upstreamTimeoutMs);
    const clear = () => {
      deadlines.forget(answer);
      record.request.signal.removeEventListener("abort", onCallerGone);
    };
    let response: Response;
    try {
      response = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...exchange.headers,
          ...provider.headers(key.secret),
        },
        body,
        signal,
      });
    } catch (error) {
      clear();
      deps.keyPool.recordUsage(key, 0);
      const failure = upstreamFailure(providerName, error, signal);
      // Unreachable from one key may be a passing fault: one more key, then
      // the next candidate. A timeout is not retried here (it already took
      // the whole timeout), nor a caller who left.
      if (failure.status === 502 && transientRetries++ < TRANSIENT_RETRIES) {
        lastTransient = failure;
        continue;
      }
      throw failure;
    }
    if (response.ok) {
      deps.keyPool.answered(key);
      return { response, key, abort, signal, clearTimeout: clear };
    }
    const text = await response.text().catch(() => "");
    clear();
    // Providers may quote the key they were sent; it never goes further.
    const message = provider.errorMessage(text).replaceAll(
      key.secret,
      `[key ${key.keyId}]`,
    );
    if (response.status === 429) {
      const cooldownMs = retryAfterMs(response.headers);
      deps.keyPool.rateLimited(key, cooldownMs);
      soonestCooledMs = Math.min(
        soonestCooledMs,
        cooldownMs ?? deps.keyCooldownMs,
      );
      rateLimitMessage = message;
      continue;
    }
    if (response.status === 401 || response.status === 403) {
      // A refusal about the request (moderation, a model or beta the account
      // lacks) fails this call and leaves the key alone; one about the key
      // cools it down, and the call tries another.
      const keyBlamed = deps.keyPool.refused(
        key,
        response.status,
        record.request.requestId,
      );
      if (!keyBlamed) {
        throw new GatewayError(response.status, message, {
          code: "upstream_refused",
        });
      }
      lastRefusal = new GatewayError(
        502,
        `The ${providerName} provider refused the gateway's key`,
        {
          code: "upstream_auth",
        },
      );
      continue;
    }
    deps.keyPool.recordUsage(key, 0);
    if (response.status >= 500) {
      const failure = new GatewayError(
        502,
        `The ${providerName} provider failed: ${message}`,
        { code: "upstream_error" },
      );
      if (transientRetries++ < TRANSIENT_RETRIES) {
        lastTransient = failure;
        continue;
      }
      throw failure;
    }
    throw new GatewayError(response.status, message, {
      code: "upstream_error",
    });
  }
}

function retryAfterMs(headers: Headers): number | undefined {
  const value = headers.get("retry-after");
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
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
 * `text` alone (`body` undefined), for the caller as it came.
 *
 * @param deps The key pool (a failed answer records no usage).
 * @param exchange The exchange the call was sent by.
 * @param upstream The upstream answer.
 * @returns The caller's body (undefined when unchanged), the usage and the text.
 * @throws {GatewayError} 502 for an answer that is not JSON or not in the expected shape.
 */
export async function readAnswer(
  deps: CallDeps,
  exchange: Exchange,
  upstream: Upstream,
): Promise<{ body?: unknown; usage: Usage; text: string }> {
  let text: string;
  try {
    text = await upstream.response.text();
  } catch (error) {
    deps.keyPool.recordUsage(upstream.key, 0);
    throw upstreamFailure(
      upstream.key.provider,
      error,
      upstream.signal,
    );
  } finally {
    upstream.clearTimeout();
  }
  const json = parseJson(text);
  if (json === undefined || typeof json !== "object" || json === null) {
    deps.keyPool.recordUsage(upstream.key, 0);
    throw new GatewayError(
      502,
      `The ${upstream.key.provider} provider answered with a body that is not JSON`,
      {
        code: "upstream_garbage",
      },
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
      {
        code: "upstream_garbage",
      },
    );
  }
}

/**
 * Sending a request upstream with a key from the pool, and reading a
 * non-streamed answer: the one sender every route that spends a provider key
 * goes through (calls and token counting alike).
 *
 * What an answer means is decided by the pure functions of `rules.ts`
 * (`ruleOfAnswer`, `ruleOfThrown`, `keyOutcomeOf`, `nextMove`);
 * {@linkcode sendUpstream} only carries them out: each key it takes is given
 * back once, in one `finally`, unless it is handed over with the answer.
 *
 * @module
 */
import { deadlines, upstreamTimeout } from "./deadlines.ts";
import { GatewayError } from "../errors.ts";
import { scrubAnswer, scrubKey } from "./scrub.ts";
import type { Exchange, Provider } from "./providers/provider.ts";
import { parseJson } from "./providers/provider.ts";
import type { KeyPool, ProviderKey } from "./key_pool.ts";
import {
  aboutTheRequest,
  answerError,
  keyOutcomeOf,
  nextMove,
  noKeyError,
  ruleOfAnswer,
  ruleOfThrown,
  type Tried,
  unreadableUsage,
  upstreamFailure,
  type UpstreamRule,
} from "./rules.ts";
import type { ProviderName } from "./providers/mod.ts";
import type { Usage } from "./usage.ts";
import { UnreadableUsageError } from "./usage.ts";

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
  /** The provider: its auth headers, error messages and wordings of a refusal about the request. */
  provider: Pick<
    Provider<ProviderName>,
    "name" | "headers" | "errorMessage" | "requestRefusals"
  >;
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
  /** The gateway request id, named with any cool-down the request causes. */
  requestId: string;
  /** The caller (a 403 is counted once per caller; a cool-down names it). */
  callerId: string;
  /** The endpoint has rate limits of its own (token counting): its 429 fails the request and cools no key for calls. */
  ownRateLimits?: boolean;
  /** Where the sender lists the id of each key it tries, for the call's trace. */
  keysTried?: string[];
  /**
   * The one key the request may use: the key that holds the state it
   * continues (a Responses `previous_response_id`). No other key is tried;
   * while it cools down the request waits, at most `pinWaitMs`, else is
   * answered 429 with when to retry.
   */
  pinnedKeyId?: string;
  /** The longest a pinned request waits for its key, ms (default 0). */
  pinWaitMs?: number;
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
  // Not /_retry.ts: this loop moves to another key, not the same request
  // again after a delay. It runs as long as the pool lends a key not yet
  // tried (no fixed count), waits nowhere between keys (a jittered sleep
  // would add latency to every 429), decides each next step from the rule,
  // the pool's blame and the transient count rather than from an error, and
  // throws the caller's GatewayError as it is (never a RetryError, nor the
  // abort reason when the caller leaves: that is the attempt's 499).
  const pinned = request.pinnedKeyId;
  const waitUntil = Date.now() + (request.pinWaitMs ?? 0);
  for (;;) {
    // A pinned request may go back to its one key (a retry after a 5xx or
    // once it cooled down); any other request never reuses a key it tried.
    const acquired = keyPool.acquire(
      provider.name,
      request.estimatedTokens,
      pinned === undefined ? tried : undefined,
      pinned,
    );
    if (!acquired.ok && pinned !== undefined) {
      await waitForPinnedKey(
        keyPool,
        provider.name,
        pinned,
        acquired.retryAfterMs,
        waitUntil,
        request.signal,
        met,
      );
      continue;
    }
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
        // Providers may quote the key they were sent; it never goes further,
        // however the JSON spells it, and it is scrubbed from the whole body
        // before the message is cut short (a cut would keep part of it).
        const message = scrubKey(
          provider.errorMessage(scrubAnswer(text, key)),
          key,
        );
        rule = aboutTheRequest(rule, message, {
          requestRefusals: provider.requestRefusals,
          ownRateLimits: request.ownRateLimits,
        });
        error = answerError(provider.name, rule, response.status, message);
        if (rule.action === "cool" || rule.action === "skipKey") {
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
        keyOutcomeOf(rule, {
          requestId: request.requestId,
          callerId: request.callerId,
        }),
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

/** How long a pinned request looks again for a key that is busy without a known end (probing, or the pool's shared slice), ms. */
const PINNED_POLL_MS = 250;

/**
 * Waits for the one key a pinned request may use, if it frees up in time;
 * otherwise refuses the request: 429 with when to retry while the key cools
 * down (never another key: the state lives in that key's organization), or
 * 409 when the key is no longer configured.
 */
async function waitForPinnedKey(
  keyPool: KeyPool,
  provider: ProviderName,
  keyId: string,
  retryAfterMs: number,
  waitUntil: number,
  signal: AbortSignal,
  met: Tried,
): Promise<void> {
  if (!keyPool.health().some((key) => key.keyId === keyId)) {
    throw new GatewayError(
      409,
      `The ${provider} key that holds this conversation's stored state is no longer configured; start a new conversation`,
      { code: "state_key_gone" },
    );
  }
  const waitMs = retryAfterMs >= 0 ? retryAfterMs : PINNED_POLL_MS;
  if (Date.now() + waitMs > waitUntil || signal.aborted) {
    throw new GatewayError(
      429,
      met.rateLimitMessage ||
        `The ${provider} key that holds this conversation's stored state is busy; retry after the time given`,
      {
        code: "upstream_rate_limited",
        retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
      },
    );
  }
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, waitMs);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

/**
 * Reads a non-streamed answer's body whole, with the key scrubbed from it,
 * and parses it as a JSON object. The answer timeout is cleared; the key
 * stays lent: the caller gives it back.
 *
 * @example
 * ```ts ignore
 * import { readJsonAnswer } from "./send.ts";
 *
 * const { json } = await readJsonAnswer(upstream);
 * ```
 *
 * @param upstream The upstream answer.
 * @returns The parsed object and the (scrubbed) text it was parsed from.
 * @throws {GatewayError} 502 for a body that is not a JSON object, or the answer's failure.
 */
export async function readJsonAnswer(
  upstream: Upstream,
): Promise<{ json: object; text: string }> {
  let text: string;
  try {
    // A provider may quote the key in its answer: it goes no further, to
    // the caller or the trace.
    text = scrubAnswer(await upstream.response.text(), upstream.key);
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
  return { json, text };
}

/**
 * Reads a non-streamed answer: its text, parsed for the caller's body and
 * the usage. A body the exchange passed through untouched is returned as
 * `text` alone (`body` undefined), for the caller as it came. The answer's
 * key stays lent: the call gives it back.
 *
 * @param exchange The exchange the call was sent by.
 * @param upstream The upstream answer.
 * @returns The caller's body (undefined when unchanged), the usage, the text, and the id of the state the answer stored.
 * @throws {GatewayError} 502 for an answer that is not JSON or not in the expected shape, or the answer's failure.
 */
export async function readAnswer(
  exchange: Pick<Exchange, "response">,
  upstream: Upstream,
): Promise<{ body?: unknown; usage: Usage; text: string; stateId?: string }> {
  const { json, text } = await readJsonAnswer(upstream);
  try {
    const { body, usage, stateId } = exchange.response(json);
    return {
      body: body === json ? undefined : body,
      usage,
      text,
      ...(stateId !== undefined && { stateId }),
    };
  } catch (error) {
    if (error instanceof UnreadableUsageError) throw unreadableUsage(error);
    throw new GatewayError(
      502,
      `The ${upstream.key.provider} provider answered in an unexpected shape`,
      { code: "upstream_garbage" },
    );
  }
}

/**
 * Types shared across the gateway's modules, and the seams between the request
 * path (app, providers, translation) and the business state in Deno KV
 * (callers, credits, key pool, tracing). Each seam is an interface so the
 * request path reads in order and each store can be tested on its own.
 *
 * @module
 */
import type { CallerLimits } from "./limits/limits.ts";

/** The five upstream providers. */
export type ProviderName =
  | "openai"
  | "anthropic"
  | "gemini"
  | "xai"
  | "openrouter";

/** The routes a model can be listed on. */
export type RouteName = "chat" | "messages" | "responses" | "gemini";

/** Prices in USD per million tokens. */
export interface ModelPricing {
  /** USD per million uncached input tokens. */
  input: number;
  /** USD per million output tokens. */
  output: number;
  /** USD per million cached input tokens (cache reads), where the provider bills them apart. */
  cachedInput?: number;
  /** USD per million input tokens written to a 5-minute cache (Anthropic: 1.25× input); absent: the input price. */
  cacheWrite?: number;
  /** USD per million input tokens written to a 1-hour cache (Anthropic: 2× input); absent: the 5-minute price. */
  cacheWrite1h?: number;
}

/**
 * A model's end of life, dates in ISO 8601 (a bare day is its start in
 * UTC). Callers see the dates on `GET /models` and in `Deprecation` and
 * `Sunset` headers; from `retires` on a call is refused with 410 naming the
 * successor, or, with `reroute`, served by the successor at its price.
 */
export interface ModelLifecycle {
  /** From when the model is deprecated (still served). */
  deprecated?: string;
  /** From when the model is retired (no longer served as itself). */
  retires?: string;
  /** The catalog model that replaces it. */
  successor?: string;
  /** Whether calls after retirement go to the successor instead of being refused. */
  reroute?: boolean;
}

/** One entry of the model catalog (`gateway/catalog.json`). */
export interface CatalogEntry {
  /** The id callers send as `model`. */
  id: string;
  /** The provider that serves it. */
  provider: ProviderName;
  /** The id sent upstream. */
  upstream: string;
  /** The routes it is reachable on. */
  routes: RouteName[];
  /** Its prices. */
  pricing: ModelPricing;
  /** The most output tokens one call can produce; bounds the reservation. */
  maxOutputTokens: number;
  /** Other catalog models (the same model on another provider) a call falls back to, in order, when this one cannot be served. */
  alternates?: string[];
  /** Its deprecation, retirement and successor, when it has an end. */
  lifecycle?: ModelLifecycle;
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
}

/** An authenticated caller. */
export interface Caller {
  /** Short public id of the caller key (never the key itself). */
  id: string;
  /** Human name given at creation. */
  name: string;
  /** The operator's limits on the key, if any. */
  limits?: CallerLimits;
}

/** Looks a caller up by the secret key it presented. */
export interface CallerAuthenticator {
  /** Resolves the caller owning `secret`, or `null` for an unknown or revoked key. */
  authenticate(secret: string): Promise<Caller | null>;
}

/** Money held back for one call until it settles. Amounts are integer micro-USD. */
export interface Reservation {
  /** Unique id of the reservation. */
  id: string;
  /** The caller it was taken from. */
  callerId: string;
  /** Amount held, micro-USD. */
  amountMicros: number;
}

/**
 * The result of trying to reserve. `availableMicros` is what this process
 * could still reserve for the caller: their balance less the reservations
 * and queued charges it knows of.
 */
export type ReserveResult =
  | { ok: true; reservation: Reservation; availableMicros: number }
  | { ok: false; availableMicros: number };

/** One model a call tried. */
export interface CallAttempt {
  /** The model id. */
  model: string;
  /** Its provider. */
  provider: ProviderName;
  /** 200 when it served the call, else the status it failed with. */
  status: number;
  /** Why it failed. */
  error?: string;
}

/** One trace record: what the gateway saw of one call. */
export interface TraceRecord {
  /** Unique id of this call (also the `x-request-id` header). */
  requestId: string;
  /** Groups calls: the caller's `Trace-Id` header, or a new id. */
  traceId: string;
  /** Caller key id (an unauthenticated request is refused before it is traced). */
  callerId: string;
  /** Model id as the caller sent it. */
  model?: string;
  /** Route name. */
  route: RouteName;
  /** Provider, once the model is known. */
  provider?: ProviderName;
  /** Short id of the provider key used, if any. */
  providerKeyId?: string;
  /** HTTP status returned to the caller. */
  status: number;
  /** Whether the caller asked for a stream. */
  stream: boolean;
  /** Prompt tokens, cached included. */
  inputTokens: number;
  /** Completion tokens. */
  outputTokens: number;
  /** Cached prompt tokens. */
  cachedTokens: number;
  /** Cost charged, micro-USD. */
  costMicros: number;
  /** Wall time from request to last byte, ms. */
  latencyMs: number;
  /** Time to first token for streams, ms. */
  ttftMs?: number;
  /** Error message returned to the caller, if any (never a provider key). */
  error?: string;
  /** Figures estimated rather than reported by the provider (an abandoned or broken stream). */
  estimated?: ("input" | "output")[];
  /** Every model tried, in order, when the call could fall back (the last one served it, or failed it). */
  attempts?: CallAttempt[];
  /** Epoch ms when the call started. */
  time: number;
}

/** What settles one reserved call: its real cost and its trace, committed together. */
export interface Settlement {
  /** The reservation to close. */
  reservation: Reservation;
  /** Real cost, micro-USD (0 when nothing was generated). */
  costMicros: number;
  /** Usage behind the cost. */
  usage: Usage;
  /** The call's trace record. */
  trace: TraceRecord;
}

/**
 * Credits on the request path: reservations, settlement, the ledger and
 * trace storage. A caller's balance is the sum of their ledger entries.
 */
export interface Billing {
  /** Holds `amountMicros` of the caller's balance for one call, or reports that it cannot (not enough, or a debt). */
  reserve(callerId: string, amountMicros: number): Promise<ReserveResult>;
  /** Closes a reservation: charges the full real cost, writes a ledger entry and the trace, in one commit. */
  settle(settlement: Settlement): Promise<{ availableMicros: number }>;
  /**
   * Queues the same commit as {@linkcode Billing.settle} without waiting for
   * it (write-behind), and returns what will be available once this
   * process's queued work for the caller has committed. {@linkcode Billing.balance}
   * waits for queued settlements of the caller; {@linkcode Billing.flush}
   * waits for all. A settlement that finally fails is logged and not
   * charged: its hold goes back to the caller.
   */
  settleSoon(settlement: Settlement): { availableMicros: number };
  /** Resolves once every queued settlement has committed or finally failed, and unused credit keys went back. */
  flush(): Promise<void>;
  /** Stores a trace of a call that never reserved (rejected before forwarding). */
  recordTrace(trace: TraceRecord): Promise<void>;
  /** The caller's balance, micro-USD, once this process's queued settlements for them have committed. */
  balance(callerId: string): Promise<number>;
}

/** A provider key lent to one upstream attempt. */
export interface ProviderKey {
  /** The provider the key belongs to. */
  provider: ProviderName;
  /** Short id naming the key in logs and traces. */
  keyId: string;
  /** The key itself; only ever placed in the upstream request's headers. */
  secret: string;
}

/** The result of asking the pool for a key. */
export type AcquireResult =
  | { ok: true; key: ProviderKey }
  | { ok: false; retryAfterMs: number };

/** What the pool says of one key, for the operator. */
export interface KeyHealth {
  /** The provider. */
  provider: ProviderName;
  /** The key's id (never the key). */
  keyId: string;
  /** `healthy`; `cooling` after a 429; `refused` while a refused key cools down; `probing` while one call tries it again. */
  state: "healthy" | "cooling" | "refused" | "probing";
  /** Epoch ms the key is usable again, when it is cooling or refused. */
  coolUntil?: number;
  /** Refusals in a row. */
  refusals: number;
  /** Calls on the key right now. */
  inFlight: number;
  /** Requests in the last minute. */
  requestsLastMinute: number;
  /** Tokens in the last minute. */
  tokensLastMinute: number;
  /** The per-key request limit per minute, if any. */
  rpm?: number;
  /** The per-key token limit per minute, if any. */
  tpm?: number;
}

/**
 * How a call ended on a key the pool lent it, which is how the pool takes
 * the key back:
 * - `answered`: the provider took the key (a 2xx, whatever the body then
 *   held); `tokens` is what the call really used, for the key's TPM;
 * - `rateLimited`: a 429; the key cools down for `retryAfterMs` (or the
 *   pool's default);
 * - `refused`: a 401 or 403; the pool decides whether the key or the request
 *   is to blame;
 * - `failed`: nothing is known of the key (a 5xx, another 4xx, no answer, a
 *   timeout, the caller gone before the answer); it goes back as it was.
 */
export type KeyOutcome =
  | { kind: "answered"; tokens: number }
  | { kind: "rateLimited"; retryAfterMs?: number }
  | { kind: "refused"; status: number; requestId: string }
  | { kind: "failed" };

/** A provider's pool of keys, with per-key RPM/TPM limits and cool-downs. */
export interface KeyPool {
  /** Lends a healthy key with room for `estimatedTokens`, skipping `exclude` key ids; give it back once with `release`. */
  acquire(
    provider: ProviderName,
    estimatedTokens: number,
    exclude?: ReadonlySet<string>,
  ): AcquireResult;
  /** The shared-limit claims being committed now, if any (a call with no slot waits for them once); `undefined` when none runs. */
  pendingClaims?(): Promise<void> | undefined;
  /** Gives a lent key back, once (a second release of one loan does nothing); returns `true` when the outcome is a refusal blamed on the key (try another key). */
  release(key: ProviderKey, outcome: KeyOutcome): boolean;
  /** Every key's health, by id, for the operator. */
  health(): KeyHealth[];
}

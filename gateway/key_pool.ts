/**
 * Provider key pool: lends each call the least-used healthy key that has room
 * under its requests-per-minute and tokens-per-minute limits, cools a key
 * down after a 429 and takes it out after a 401/403.
 *
 * The pool lives in the memory of one process (see docs/decisions.md): it is
 * on the hot path, and the limits it enforces are the provider's own, which
 * answer 429 anyway when several processes together pass them.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type {
  AcquireResult,
  KeyHealth,
  KeyPool,
  ProviderKey,
  ProviderName,
} from "./types.ts";

const WINDOW_MS = 60_000;
const BUCKET_MS = 1_000;
const BUCKETS = WINDOW_MS / BUCKET_MS;

/** Per-provider key settings. */
export interface ProviderKeys {
  /** The provider's keys. */
  keys: readonly string[];
  /** Requests per minute allowed on each key. */
  rpm?: number;
  /** Tokens per minute allowed on each key. */
  tpm?: number;
}

/** Options of {@linkcode MemoryKeyPool}. */
export interface KeyPoolOptions {
  /** Cool-down after a 429 without `retry-after`, ms. */
  defaultCooldownMs: number;
  /** The first cool-down of a key the provider refused (401, or 403s across different requests), ms; it doubles with each refusal in a row. Default 60 s. */
  refusedCooldownMs?: number;
  /** The longest cool-down of a refused key, ms. Default 1 hour. */
  maxRefusedCooldownMs?: number;
  /** Called when the provider refuses a key (by its id, never its secret), with the cool-down it got. */
  onRefused?: (
    provider: ProviderName,
    keyId: string,
    status: number,
    cooldownMs: number,
  ) => void;
  /** The clock, ms since epoch; tests pass their own. */
  now?: () => number;
}

/** A minute of use, in one-second buckets. */
class Window {
  readonly #requests = new Float64Array(BUCKETS);
  readonly #tokens = new Float64Array(BUCKETS);
  readonly #stamps = new Float64Array(BUCKETS).fill(-1);

  /** The bucket of `now`, or -1 when that second has left the window. */
  #slot(now: number): number {
    const second = Math.floor(now / BUCKET_MS);
    const slot = second % BUCKETS;
    if (this.#stamps[slot] > second) return -1;
    if (this.#stamps[slot] !== second) {
      this.#stamps[slot] = second;
      this.#requests[slot] = 0;
      this.#tokens[slot] = 0;
    }
    return slot;
  }

  add(now: number, requests: number, tokens: number): void {
    const slot = this.#slot(now);
    if (slot < 0) return;
    this.#requests[slot] += requests;
    this.#tokens[slot] += tokens;
  }

  /** Requests and tokens in the last minute. */
  totals(now: number): { requests: number; tokens: number } {
    const oldest = Math.floor(now / BUCKET_MS) - BUCKETS + 1;
    let requests = 0;
    let tokens = 0;
    for (let i = 0; i < BUCKETS; i++) {
      if (this.#stamps[i] >= oldest) {
        requests += this.#requests[i];
        tokens += this.#tokens[i];
      }
    }
    return { requests, tokens };
  }

  /** Ms until the window has room for one more request and `tokens` more tokens. */
  msUntilRoom(now: number, rpm: number, tpm: number, tokens: number): number {
    const second = Math.floor(now / BUCKET_MS);
    let { requests, tokens: used } = this.totals(now);
    // Walk forward second by second as the oldest buckets leave the window.
    for (let ahead = 1; ahead <= BUCKETS; ahead++) {
      if (requests + 1 <= rpm && used + tokens <= tpm) {
        return ahead === 1 ? 0 : (ahead - 1) * BUCKET_MS;
      }
      const leavingSecond = second - BUCKETS + ahead;
      const slot = leavingSecond % BUCKETS;
      if (this.#stamps[slot] === leavingSecond) {
        requests -= this.#requests[slot];
        used -= this.#tokens[slot];
      }
    }
    return WINDOW_MS;
  }
}

interface KeyState {
  key: ProviderKey;
  window: Window;
  coolUntil: number;
  /** Refusals of the key in a row; 0 for a healthy key. */
  refusals: number;
  /** A refused key's cool-down ended and one call is probing it. */
  probing: boolean;
  /** Requests that got a 403 on this key since its last success. */
  forbidden: Set<string>;
  inFlight: number;
}

/** How many different requests must get a 403 on one key before the key, not the requests, is blamed. */
export const FORBIDDEN_REQUESTS_TO_REFUSE = 3;

/** An estimate charged to the window at acquire time, corrected by `recordUsage`. */
interface PoolKey extends ProviderKey {
  readonly estimatedTokens: number;
  readonly acquiredAt: number;
}

/**
 * The short id that names a provider key in logs and traces: the provider
 * and the first 8 hex digits of the key's SHA-256. Stable across processes.
 *
 * @param provider The provider.
 * @param secret The key.
 * @returns An id such as `openai:3f9a0c1d`.
 */
export function providerKeyId(provider: ProviderName, secret: string): string {
  return `${provider}:${
    createHash("sha256").update(secret).digest("hex").slice(0, 8)
  }`;
}

/** The in-memory {@linkcode KeyPool}. */
export class MemoryKeyPool implements KeyPool {
  readonly #keys = new Map<ProviderName, KeyState[]>();
  readonly #limits = new Map<ProviderName, { rpm: number; tpm: number }>();
  readonly #options: KeyPoolOptions;
  readonly #now: () => number;

  /**
   * Builds a pool; key ids are derived from the keys' hashes.
   *
   * @param providers Each provider's keys and limits.
   * @param options Cool-down default, revoke callback, clock.
   */
  constructor(
    providers: Partial<Record<ProviderName, ProviderKeys>>,
    options: KeyPoolOptions,
  ) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    for (
      const [name, settings] of Object.entries(providers) as [
        ProviderName,
        ProviderKeys,
      ][]
    ) {
      const states: KeyState[] = [];
      for (const secret of new Set(settings.keys)) {
        const keyId = providerKeyId(name, secret);
        states.push({
          key: { provider: name, keyId, secret },
          window: new Window(),
          coolUntil: 0,
          refusals: 0,
          probing: false,
          forbidden: new Set(),
          inFlight: 0,
        });
      }
      this.#keys.set(name, states);
      this.#limits.set(name, {
        rpm: settings.rpm ?? Infinity,
        tpm: settings.tpm ?? Infinity,
      });
    }
  }

  /**
   * Lends the least-used usable key.
   *
   * @param provider The provider.
   * @param estimatedTokens Tokens the call is expected to use, for TPM.
   * @param exclude Key ids already tried by this call.
   * @returns A key, or how long until a key frees up.
   */
  acquire(
    provider: ProviderName,
    estimatedTokens: number,
    exclude?: ReadonlySet<string>,
  ): AcquireResult {
    const now = this.#now();
    const { rpm, tpm } = this.#limits.get(provider) ??
      { rpm: Infinity, tpm: Infinity };
    let best: KeyState | undefined;
    let bestLoad = Infinity;
    let soonest = Infinity;
    for (const state of this.#keys.get(provider) ?? []) {
      // A refused key whose cool-down ended takes one probing call at a time.
      if (state.probing || exclude?.has(state.key.keyId)) continue;
      const wait = Math.max(
        state.coolUntil - now,
        state.window.msUntilRoom(now, rpm, tpm, Math.min(estimatedTokens, tpm)),
      );
      if (wait > 0) {
        soonest = Math.min(soonest, wait);
        continue;
      }
      const { requests } = state.window.totals(now);
      const load = requests + state.inFlight;
      if (load < bestLoad) {
        best = state;
        bestLoad = load;
      }
    }
    if (!best) {
      return {
        ok: false,
        retryAfterMs: Number.isFinite(soonest) ? soonest : -1,
      };
    }
    best.window.add(now, 1, estimatedTokens);
    best.inFlight++;
    if (best.refusals > 0) best.probing = true;
    const key: PoolKey = {
      ...best.key,
      estimatedTokens,
      acquiredAt: now,
    };
    return { ok: true, key };
  }

  /**
   * Cools a key down after an upstream 429.
   *
   * @param key The key that was refused.
   * @param retryAfterMs The upstream's `retry-after`, if it sent one.
   */
  rateLimited(key: ProviderKey, retryAfterMs?: number): void {
    const state = this.#release(key);
    if (!state) return;
    const cooldown = retryAfterMs ?? this.#options.defaultCooldownMs;
    state.coolUntil = Math.max(state.coolUntil, this.#now() + cooldown);
  }

  /**
   * Records the provider's refusal of a call on a key: a 401, or a 403. A 401
   * is about the key. A 403 may be about the request (moderation, a model or
   * beta the account lacks): it counts against the key only once 403s came
   * from {@linkcode FORBIDDEN_REQUESTS_TO_REFUSE} different requests since the
   * key last answered. A key refused cools down for a time that doubles with
   * each refusal in a row, and is then probed by one call.
   *
   * @param key The key that was refused.
   * @param status The upstream status, 401 or 403.
   * @param requestId The gateway request, so one request is counted once.
   * @returns `true` when the key was blamed (try another key), `false` when the request was (fail the call).
   */
  refused(key: ProviderKey, status: number, requestId: string): boolean {
    const state = this.#release(key);
    if (!state) return status === 401;
    state.probing = false;
    if (status !== 401) {
      state.forbidden.add(requestId);
      if (state.forbidden.size < FORBIDDEN_REQUESTS_TO_REFUSE) return false;
    }
    state.forbidden.clear();
    state.refusals++;
    const base = this.#options.refusedCooldownMs ?? 60_000;
    const max = this.#options.maxRefusedCooldownMs ?? 3_600_000;
    const cooldown = Math.min(max, base * 2 ** (state.refusals - 1));
    state.coolUntil = Math.max(state.coolUntil, this.#now() + cooldown);
    this.#options.onRefused?.(key.provider, key.keyId, status, cooldown);
    return true;
  }

  /**
   * Records that a key answered a call: a refused key that was probed is
   * healthy again, and earlier 403s no longer count against it.
   *
   * @param key The key that answered.
   */
  answered(key: ProviderKey): void {
    const state = this.#find(key);
    if (!state) return;
    state.refusals = 0;
    state.probing = false;
    state.forbidden.clear();
  }

  /**
   * Ends a key, replacing its token estimate with what the call used.
   *
   * @param key The key.
   * @param tokens Input plus output tokens the call really used.
   */
  recordUsage(key: ProviderKey, tokens: number): void {
    const state = this.#release(key);
    const { estimatedTokens, acquiredAt } = key as PoolKey;
    if (state && tokens !== estimatedTokens) {
      state.window.add(acquiredAt, 0, tokens - estimatedTokens);
    }
  }

  /**
   * Every key's health, by id, for the operator.
   *
   * @returns One entry per key.
   */
  health(): KeyHealth[] {
    const now = this.#now();
    return [...this.#keys].flatMap(([provider, states]) => {
      const { rpm, tpm } = this.#limits.get(provider)!;
      return states.map((state): KeyHealth => {
        const { requests, tokens } = state.window.totals(now);
        const cooling = state.coolUntil > now;
        return {
          provider,
          keyId: state.key.keyId,
          state: state.probing
            ? "probing"
            : state.refusals > 0
            ? "refused"
            : cooling
            ? "cooling"
            : "healthy",
          ...(cooling ? { coolUntil: state.coolUntil } : {}),
          refusals: state.refusals,
          inFlight: state.inFlight,
          requestsLastMinute: requests,
          tokensLastMinute: tokens,
          ...(Number.isFinite(rpm) ? { rpm } : {}),
          ...(Number.isFinite(tpm) ? { tpm } : {}),
        };
      });
    });
  }

  #find(key: ProviderKey): KeyState | undefined {
    return this.#keys.get(key.provider)?.find((s) => s.key.keyId === key.keyId);
  }

  #release(key: ProviderKey): KeyState | undefined {
    const state = this.#find(key);
    if (state && state.inFlight > 0) state.inFlight--;
    return state;
  }
}

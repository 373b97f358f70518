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
  /** Called when a key is taken out of the pool (by its id, never its secret). */
  onRevoke?: (provider: ProviderName, keyId: string, status: number) => void;
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
  revoked: boolean;
  inFlight: number;
}

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
          revoked: false,
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
      if (state.revoked || exclude?.has(state.key.keyId)) continue;
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
   * Takes a key out of the pool after an upstream 401/403.
   *
   * @param key The key that was refused.
   * @param status The upstream status.
   */
  revoke(key: ProviderKey, status: number): void {
    const state = this.#release(key);
    if (!state || state.revoked) return;
    state.revoked = true;
    this.#options.onRevoke?.(key.provider, key.keyId, status);
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
   * How many keys of a provider are still in the pool (not revoked).
   *
   * @param provider The provider.
   * @returns The count.
   */
  healthyKeys(provider: ProviderName): number {
    return (this.#keys.get(provider) ?? []).filter((s) => !s.revoked).length;
  }

  #release(key: ProviderKey): KeyState | undefined {
    const state = this.#keys.get(key.provider)?.find((s) =>
      s.key.keyId === key.keyId
    );
    if (state && state.inFlight > 0) state.inFlight--;
    return state;
  }
}

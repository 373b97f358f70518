/**
 * Provider key pool: lends each call the least-loaded usable key (fewest
 * requests in the last minute plus calls in flight) that has room under its
 * requests-per-minute and tokens-per-minute limits, and takes each loan back
 * once ({@linkcode MemoryKeyPool.release}) with how the call ended on it
 * ({@linkcode KeyOutcome}):
 * - `answered`: the key is healthy again (its refusals and 403s forgotten),
 *   and its minute is corrected from the estimate to the tokens used;
 * - `rateLimited` (a 429): the key cools down for the provider's
 *   `retry-after`, else the pool's default, and never longer than
 *   `maxCallerCooldownMs` (a minute): any caller can earn a 429, so what one
 *   request can do to a key for everyone is bounded, and each cool-down is
 *   reported with the caller and request that met it (`onCooled`);
 * - `refused` (401, or 403s from several different callers: `refusalBlame`
 *   in `key_refusals.ts`): the key cools down for a time that doubles with
 *   each refusal in a row (`refusedCooldownMs`); when that ends, one call
 *   at a time probes it, and the probe's answer makes it healthy again;
 * - `failed`: the key goes back as it was, its estimated tokens returned.
 *
 * The pool lives in the memory of one process: it is on the hot path. Given
 * the gateway's store, two things hold across every process sharing it:
 * each key's limits (a process lends a key only from a slice it claimed of
 * the key's per-minute counter, `state/limits/provider_keys.ts` states the
 * bound) and its cool-downs (a 429 or refusal one process met is reported,
 * and the others skip the key until it ends). Without a store both are per
 * process.
 *
 * @module
 */
import { createHash } from "node:crypto";
import {
  SharedKeyHealth,
  SharedKeyWindows,
} from "../state/limits/provider_keys.ts";
import type { ProviderName } from "./providers/mod.ts";
import { MinuteWindow } from "./key_window.ts";
import { refusalBlame, refusedCooldownMs } from "./key_refusals.ts";

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
  /** The longest a 429 cools a key, ms, whatever its `retry-after`: one caller's request can take a key out of service for everyone no longer than this. Default 60 s, the window of the providers' per-minute limits. */
  maxCallerCooldownMs?: number;
  /** Called when a 429 cools a key, with the caller and request that met it, so a caller who keeps cooling keys is named in the log. */
  onCooled?: (cooled: KeyCooled) => void;
  /** The first cool-down of a key the provider refused (401, or 403s across different callers), ms; it doubles with each refusal in a row. Default 60 s. */
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
  /**
   * The gateway's store: with it, each key's `rpm`/`tpm` hold for the key
   * across every process sharing the store (each process lends from slices
   * of a shared per-minute counter, `limits/provider_keys.ts`); without it,
   * per process.
   */
  store?: Deno.Kv;
}

interface KeyState {
  key: ProviderKey;
  window: MinuteWindow;
  coolUntil: number;
  /** Refusals of the key in a row; 0 for a healthy key. */
  refusals: number;
  /** A refused key's cool-down ended and one call is probing it. */
  probing: boolean;
  /** Callers whose requests got a 403 on this key since its last success. */
  forbidden: Set<string>;
  inFlight: number;
}

/** A lent key: the estimate charged to the window at acquire time, corrected when it is given back. */
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
 *
 * @example
 * ```ts
 * import { providerKeyId } from "./key_pool.ts";
 *
 * providerKeyId("openai", "sk-proj-0123456789abcdefghij"); // "openai:" and 8 hex digits
 * ```
 */
export function providerKeyId(provider: ProviderName, secret: string): string {
  return `${provider}:${
    createHash("sha256").update(secret).digest("hex").slice(0, 8)
  }`;
}

/**
 * The in-memory {@linkcode KeyPool} (see the module doc for its rules).
 *
 * @example Lend a key and give it back
 * ```ts
 * import { MemoryKeyPool } from "./key_pool.ts";
 *
 * const pool = new MemoryKeyPool(
 *   { openai: { keys: ["sk-a", "sk-b"], rpm: 60 } },
 *   { defaultCooldownMs: 10_000 },
 * );
 * const lent = pool.acquire("openai", 100);
 * if (lent.ok) pool.release(lent.key, { kind: "answered", tokens: 80 });
 * ```
 */
export class MemoryKeyPool implements KeyPool {
  readonly #keys = new Map<ProviderName, KeyState[]>();
  readonly #limits = new Map<ProviderName, { rpm: number; tpm: number }>();
  readonly #options: KeyPoolOptions;
  readonly #now: () => number;
  /** The keys lent and not yet given back: each loan is given back once. */
  readonly #lent = new WeakSet<ProviderKey>();
  readonly #shared: SharedKeyWindows | undefined;
  readonly #health: SharedKeyHealth | undefined;

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
    this.#shared = options.store
      ? new SharedKeyWindows(options.store, { now: this.#now })
      : undefined;
    this.#health = options.store
      ? new SharedKeyHealth(options.store, this.#now)
      : undefined;
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
          window: new MinuteWindow(),
          coolUntil: 0,
          refusals: 0,
          probing: false,
          forbidden: new Set(),
          inFlight: 0,
        });
      }
      this.#keys.set(name, states);
      const limits = {
        rpm: settings.rpm ?? Infinity,
        tpm: settings.tpm ?? Infinity,
      };
      this.#limits.set(name, limits);
      for (const state of states) {
        this.#shared?.add(state.key.keyId, limits);
        this.#health?.add(state.key.keyId);
      }
    }
  }

  /**
   * Lends the least-used usable key. The caller gives it back once, with
   * {@linkcode MemoryKeyPool.release}.
   *
   * @param provider The provider.
   * @param estimatedTokens Tokens the call is expected to use, for TPM.
   * @param exclude Key ids already tried by this call.
   * @param only The one key id the call may use (the key that holds its
   * state), when it is pinned.
   * @returns A key, or how long until a key frees up (`-1`: no key to wait for).
   */
  acquire(
    provider: ProviderName,
    estimatedTokens: number,
    exclude?: ReadonlySet<string>,
    only?: string,
  ): AcquireResult {
    const now = this.#now();
    const { rpm, tpm } = this.#limits.get(provider) ??
      { rpm: Infinity, tpm: Infinity };
    let best: KeyState | undefined;
    let bestLoad = Infinity;
    let soonest = Infinity;
    for (const state of this.#keys.get(provider) ?? []) {
      // A refused key whose cool-down ended takes one probing call at a time.
      if (only !== undefined && state.key.keyId !== only) continue;
      if (state.probing || exclude?.has(state.key.keyId)) continue;
      const wait = Math.max(
        state.coolUntil - now,
        (this.#health?.coolUntil(state.key.keyId) ?? 0) - now,
        state.window.msUntilRoom(now, rpm, tpm, Math.min(estimatedTokens, tpm)),
        this.#shared?.waitMs(state.key.keyId, estimatedTokens) ?? 0,
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
    this.#shared?.take(best.key.keyId, estimatedTokens);
    best.inFlight++;
    if (best.refusals > 0) best.probing = true;
    const key: PoolKey = {
      ...best.key,
      estimatedTokens,
      acquiredAt: now,
    };
    this.#lent.add(key);
    return { ok: true, key };
  }

  /**
   * Gives a lent key back, with how the call ended on it. Each key
   * {@linkcode MemoryKeyPool.acquire} lent is given back once: a second
   * release of the same loan does nothing. Whatever the outcome, a key that
   * was on its probe call is offered again (a refused key is probed again by
   * the next call, once its cool-down is over).
   *
   * @param key The key as `acquire` lent it.
   * @param outcome How the call ended on the key.
   * @returns `true` when the outcome is a refusal blamed on the key (try another key), else `false`.
   */
  release(key: ProviderKey, outcome: KeyOutcome): boolean {
    if (!this.#lent.delete(key)) return false;
    const state = this.#find(key);
    if (!state) return false;
    if (state.inFlight > 0) state.inFlight--;
    state.probing = false;
    const { estimatedTokens, acquiredAt } = key as PoolKey;
    switch (outcome.kind) {
      case "answered": {
        // The provider took the key: a refused key is healthy again, and
        // earlier 403s no longer count against it.
        state.refusals = 0;
        state.forbidden.clear();
        if (outcome.tokens !== estimatedTokens) {
          state.window.add(acquiredAt, 0, outcome.tokens - estimatedTokens);
          this.#shared?.adjust(
            key.keyId,
            acquiredAt,
            outcome.tokens - estimatedTokens,
          );
        }
        return false;
      }
      case "failed":
        if (estimatedTokens !== 0) {
          state.window.add(acquiredAt, 0, -estimatedTokens);
          this.#shared?.adjust(key.keyId, acquiredAt, -estimatedTokens);
        }
        return false;
      case "rateLimited": {
        const cooldown = Math.min(
          outcome.retryAfterMs ?? this.#options.defaultCooldownMs,
          this.#options.maxCallerCooldownMs ?? 60_000,
        );
        state.coolUntil = Math.max(state.coolUntil, this.#now() + cooldown);
        this.#health?.report(key.keyId, {
          coolUntil: state.coolUntil,
          reason: "rateLimited",
        });
        this.#options.onCooled?.({
          provider: key.provider,
          keyId: key.keyId,
          cooldownMs: cooldown,
          callerId: outcome.callerId,
          requestId: outcome.requestId,
        });
        return false;
      }
      case "refused": {
        if (outcome.status !== 401) state.forbidden.add(outcome.callerId);
        if (refusalBlame(outcome.status, state.forbidden.size) === "request") {
          return false;
        }
        state.forbidden.clear();
        state.refusals++;
        const cooldown = refusedCooldownMs(
          state.refusals,
          this.#options.refusedCooldownMs ?? 60_000,
          this.#options.maxRefusedCooldownMs ?? 3_600_000,
        );
        state.coolUntil = Math.max(state.coolUntil, this.#now() + cooldown);
        this.#health?.report(key.keyId, {
          coolUntil: state.coolUntil,
          reason: "refused",
        });
        this.#options.onRefused?.(
          key.provider,
          key.keyId,
          outcome.status,
          cooldown,
        );
        return true;
      }
    }
  }

  /**
   * The claims of shared slices being committed now, if any: a call that
   * found no slot (the first call of a new minute) waits for them once
   * rather than being refused.
   *
   * @returns A promise that resolves once they are done, or `undefined` when none runs.
   */
  pendingClaims(): Promise<void> | undefined {
    return this.#shared?.claimsUnderWay() ? this.#shared.settled() : undefined;
  }

  /**
   * Resolves once every claim of a shared slice under way has committed (or
   * failed and been logged): at start-up, the first slice of each limited key.
   *
   * @returns A promise.
   */
  async ready(): Promise<void> {
    await this.#shared?.settled();
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
 *   pool's default), bounded, in the name of the caller and request;
 * - `refused`: a 401 or 403; the pool decides whether the key or the request
 *   is to blame;
 * - `failed`: nothing is known of the key (a 5xx, another 4xx, no answer, a
 *   timeout, the caller gone before the answer); it goes back as it was.
 */
export type KeyOutcome =
  | { kind: "answered"; tokens: number }
  | {
    kind: "rateLimited";
    retryAfterMs?: number;
    callerId: string;
    requestId: string;
  }
  | { kind: "refused"; status: number; requestId: string; callerId: string }
  | { kind: "failed" };

/** A key a 429 cooled down, and who met the 429. */
export interface KeyCooled {
  /** The provider. */
  provider: ProviderName;
  /** The key's id (never the key). */
  keyId: string;
  /** How long the key cools down, ms (bounded by `maxCallerCooldownMs`). */
  cooldownMs: number;
  /** The caller whose request met the 429. */
  callerId: string;
  /** The gateway request that met it. */
  requestId: string;
}

/** A provider's pool of keys, with per-key RPM/TPM limits and cool-downs. */
export interface KeyPool {
  /** Lends a healthy key with room for `estimatedTokens`, skipping `exclude` key ids and, with `only`, every key but that one; give it back once with `release`. */
  acquire(
    provider: ProviderName,
    estimatedTokens: number,
    exclude?: ReadonlySet<string>,
    only?: string,
  ): AcquireResult;
  /** The shared-limit claims being committed now, if any (a call with no slot waits for them once); `undefined` when none runs. */
  pendingClaims?(): Promise<void> | undefined;
  /** Gives a lent key back, once (a second release of one loan does nothing); returns `true` when the outcome is a refusal blamed on the key (try another key). */
  release(key: ProviderKey, outcome: KeyOutcome): boolean;
  /** Every key's health, by id, for the operator. */
  health(): KeyHealth[];
}

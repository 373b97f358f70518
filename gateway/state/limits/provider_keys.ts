/**
 * A provider key's RPM/TPM shared by every gateway process on one store. Each
 * calendar minute (UTC) of a key has one counter in the store,
 * `["provider_key_window", keyId, minuteStart]` = `{requests, tokens}`: what
 * all processes together claimed of that minute. A process claims a slice of
 * it (about 1/32 of the limit at a time, as credit leases take money ahead)
 * and lends the key from its slice in memory, so the request path never waits
 * for the store; a slice runs low → the next one is claimed in the
 * background, and the first slice of the next minute is claimed shortly
 * before it starts.
 *
 * The bound: the counter never grants past the limit, so across every
 * process and host the upstream sees at most `rpm` requests of a key in each
 * calendar minute (at most 2 × `rpm` in a sliding minute that spans two
 * calendar ones, as with any fixed window), and at most `tpm` tokens as
 * estimated when lent (a call that uses more than its estimate passes it by
 * the difference). What a process claimed and did not use in a minute is
 * lost to the others for that minute: at most two slices a process.
 *
 * A process with no slot left refuses the key until its claim commits; the
 * upstream sender (`upstream/send.ts`) then waits once, at most 2 s, for the
 * claims under way before it answers 429 with a `retry-after`, so a burst
 * that outruns the background claims waits a moment rather than meeting the
 * upstream's 429s.
 *
 * A key's cool-downs (after an upstream 429 or a refusal of the key) are
 * shared too, `["provider_key_health", keyId]`: every process stops using
 * the key within 2 s of one seeing it refused ({@linkcode SharedKeyHealth}).
 *
 * @module
 */
import { commitWithRetry } from "../_kv_retry.ts";
import { providerKeyHealthKey, providerKeyWindowKey } from "../kv_keys.ts";

const MINUTE_MS = 60_000;
/** A slice is about this fraction of a limit. */
const SLICES_PER_LIMIT = 32;
/** The next minute's first slice is claimed this long before it starts, ms. */
const PREFETCH_MS = 2_000;

/** What all processes together claimed of one key in one minute. */
export interface KeyWindowRecord {
  /** Requests granted. */
  requests: number;
  /** Tokens granted. */
  tokens: number;
}

/** A key's limits; `Infinity` for none. */
export interface KeyLimits {
  /** Requests per minute. */
  rpm: number;
  /** Tokens per minute. */
  tpm: number;
}

interface Slice {
  minute: number;
  requests: number;
  tokens: number;
  /**
   * The smallest need (tokens) the shared counter could not grant this
   * minute: a call needing that many or more waits for the next minute,
   * a smaller one may still claim (0: no request left at all; `Infinity`:
   * nothing refused). The counter only grows within a minute, so what it
   * refused once it refuses again.
   */
  refusedNeed: number;
}

interface KeySlices {
  limits: KeyLimits;
  slices: Map<number, Slice>;
  claiming: Map<number, Promise<void>>;
  usedIn: number;
}

/**
 * The slices this process holds of each limited key's minutes, taken from
 * the store's shared counters.
 */
export class SharedKeyWindows {
  readonly #kv: Deno.Kv;
  readonly #now: () => number;
  readonly #keys = new Map<string, KeySlices>();
  readonly #log: (message: string) => void;

  /**
   * Creates the shared windows.
   *
   * @param kv The gateway's store.
   * @param options The clock; where a failed claim is reported.
   */
  constructor(
    kv: Deno.Kv,
    options: { now?: () => number; log?: (message: string) => void } = {},
  ) {
    this.#kv = kv;
    this.#now = options.now ?? Date.now;
    this.#log = options.log ?? ((message) => console.error(message));
  }

  /**
   * Registers a limited key and claims its first slice in the background.
   *
   * @param keyId The key's id.
   * @param limits Its limits.
   */
  add(keyId: string, limits: KeyLimits): void {
    if (!Number.isFinite(limits.rpm) && !Number.isFinite(limits.tpm)) return;
    this.#keys.set(keyId, {
      limits,
      slices: new Map(),
      claiming: new Map(),
      usedIn: -1,
    });
    this.#claim(keyId, minuteOf(this.#now()), 0);
  }

  /**
   * Whether this process may send one request of `tokens` on the key now,
   * and if not, how long until it may.
   *
   * @param keyId The key's id.
   * @param tokens The call's estimated tokens.
   * @returns 0 when a slot is held, else ms to wait.
   */
  waitMs(keyId: string, tokens: number): number {
    const key = this.#keys.get(keyId);
    if (!key) return 0;
    const now = this.#now();
    const minute = minuteOf(now);
    const slice = key.slices.get(minute);
    const need = needed(key, tokens);
    if (slice && slice.requests >= 1 && slice.tokens >= need) return 0;
    if (slice && need >= slice.refusedNeed) return minute + MINUTE_MS - now;
    this.#claim(keyId, minute, tokens);
    // The claim is one commit away.
    return 1_000;
  }

  /**
   * Takes one request of `tokens` from the key's slice (after `waitMs`
   * returned 0), and claims more in the background when it runs low.
   *
   * @param keyId The key's id.
   * @param tokens The call's estimated tokens.
   */
  take(keyId: string, tokens: number): void {
    const key = this.#keys.get(keyId);
    if (!key) return;
    const now = this.#now();
    const minute = minuteOf(now);
    const slice = key.slices.get(minute);
    if (!slice) return;
    slice.requests--;
    slice.tokens -= needed(key, tokens);
    key.usedIn = minute;
    const chunk = chunkOf(key.limits);
    const low = (Number.isFinite(chunk.requests) &&
      slice.requests < chunk.requests) ||
      (chunk.tokens > 0 && slice.tokens < chunk.tokens);
    if (low && needed(key, tokens) < slice.refusedNeed) {
      this.#claim(keyId, minute, tokens);
    }
    if (minute + MINUTE_MS - now < PREFETCH_MS) {
      this.#claim(keyId, minute + MINUTE_MS, 0);
    }
  }

  /**
   * Corrects a call's tokens once its real use is known: the difference goes
   * back to (or comes out of) the slice of the minute it was lent in.
   *
   * @param keyId The key's id.
   * @param lentAt Epoch ms the key was lent.
   * @param deltaTokens Real tokens less the estimate.
   */
  adjust(keyId: string, lentAt: number, deltaTokens: number): void {
    const key = this.#keys.get(keyId);
    const slice = key?.slices.get(minuteOf(lentAt));
    if (!key || !slice || !Number.isFinite(key.limits.tpm)) return;
    slice.tokens -= deltaTokens;
  }

  /**
   * Whether a claim of a slice is being committed for any key.
   *
   * @returns `true` while one runs.
   */
  claimsUnderWay(): boolean {
    for (const key of this.#keys.values()) {
      if (key.claiming.size > 0) return true;
    }
    return false;
  }

  /**
   * Waits for every claim under way (tests, shutdown).
   *
   * @returns A promise that resolves once none is running.
   */
  async settled(): Promise<void> {
    for (;;) {
      const running = [...this.#keys.values()].flatMap((key) => [
        ...key.claiming.values(),
      ]);
      if (running.length === 0) return;
      await Promise.all(running);
    }
  }

  #claim(keyId: string, minute: number, tokens: number): void {
    const key = this.#keys.get(keyId)!;
    if (key.claiming.has(minute)) return;
    for (const old of key.slices.keys()) {
      if (old < minuteOf(this.#now())) key.slices.delete(old);
    }
    const chunk = chunkOf(key.limits);
    const want = {
      requests: chunk.requests,
      tokens: Math.max(chunk.tokens, needed(key, tokens)),
    };
    const claim = commitWithRetry(
      `slice of provider key "${keyId}"`,
      async () => {
        const windowKey = providerKeyWindowKey(keyId, minute);
        const current = await this.#kv.get<KeyWindowRecord>(windowKey);
        const used = current.value ?? { requests: 0, tokens: 0 };
        const granted = {
          requests: Number.isFinite(key.limits.rpm)
            ? Math.max(
              0,
              Math.min(want.requests, key.limits.rpm - used.requests),
            )
            : Infinity,
          tokens: Math.max(
            0,
            Math.min(want.tokens, key.limits.tpm - used.tokens),
          ),
        };
        if (granted.requests === 0 || granted.tokens < needed(key, tokens)) {
          // No request left refuses every call; too few tokens, this need up.
          const refused = granted.requests === 0 ? 0 : needed(key, tokens);
          return { requests: 0, tokens: 0, refused };
        }
        const committed = await this.#kv.atomic().check(current).set(
          windowKey,
          {
            requests: Number.isFinite(key.limits.rpm)
              ? used.requests + granted.requests
              : 0,
            tokens: Number.isFinite(key.limits.tpm)
              ? used.tokens + granted.tokens
              : 0,
          },
          { expireIn: minute + 2 * MINUTE_MS - this.#now() },
        ).commit();
        return committed.ok ? { ...granted, refused: Infinity } : null;
      },
    ).then((granted) => {
      const slice = key.slices.get(minute) ??
        { minute, requests: 0, tokens: 0, refusedNeed: Infinity };
      slice.requests += granted.requests;
      slice.tokens += granted.tokens;
      slice.refusedNeed = Math.min(slice.refusedNeed, granted.refused);
      key.slices.set(minute, slice);
    }).catch((error) => {
      this.#log(`Claiming a slice of provider key "${keyId}" failed: ${error}`);
    }).finally(() => key.claiming.delete(minute));
    key.claiming.set(minute, claim);
  }
}

function minuteOf(now: number): number {
  return now - now % MINUTE_MS;
}

/** What a call takes of a key's tokens: its estimate, or nothing without a TPM. */
function needed(key: KeySlices, tokens: number): number {
  return Number.isFinite(key.limits.tpm) ? Math.min(tokens, key.limits.tpm) : 0;
}

/** The slice a claim asks for: about 1/32 of each limit, at least one. */
function chunkOf(limits: KeyLimits): { requests: number; tokens: number } {
  return {
    requests: Number.isFinite(limits.rpm)
      ? Math.max(1, Math.ceil(limits.rpm / SLICES_PER_LIMIT))
      : Infinity,
    tokens: Number.isFinite(limits.tpm)
      ? Math.max(1, Math.ceil(limits.tpm / SLICES_PER_LIMIT))
      : 0,
  };
}

/** A provider key's cool-down as the store keeps it for every process. */
export interface KeyHealthRecord {
  /** Epoch ms until which no process should use the key. */
  coolUntil: number;
  /** Why: an upstream 429, or a refusal of the key (401, repeated 403s). */
  reason: "rateLimited" | "refused";
}

/** How often a process reads the other processes' cool-downs, at most, ms. */
const HEALTH_REFRESH_MS = 2_000;

/**
 * Provider key cool-downs shared through the store: a key that one process
 * saw answered 429 or refused cools down in every process within
 * {@linkcode HEALTH_REFRESH_MS} (read when a call needs a key and the last
 * read is older than that; no timer). Probing a refused key stays per
 * process.
 */
export class SharedKeyHealth {
  readonly #kv: Deno.Kv;
  readonly #now: () => number;
  readonly #keyIds: string[] = [];
  readonly #shared = new Map<string, number>();
  #readAt = -Infinity;
  #reading?: Promise<void>;

  /**
   * Creates the shared health.
   *
   * @param kv The gateway's store.
   * @param now The clock, epoch ms.
   */
  constructor(kv: Deno.Kv, now: () => number = Date.now) {
    this.#kv = kv;
    this.#now = now;
  }

  /**
   * Registers a key to follow.
   *
   * @param keyId The key's id.
   */
  add(keyId: string): void {
    this.#keyIds.push(keyId);
  }

  /**
   * Until when the other processes said the key cools down (0 for none
   * known), and a background read when the last one is stale.
   *
   * @param keyId The key's id.
   * @returns Epoch ms.
   */
  coolUntil(keyId: string): number {
    const now = this.#now();
    if (!this.#reading && now - this.#readAt >= HEALTH_REFRESH_MS) {
      this.#readAt = now;
      this.#reading = this.#read().catch(() => {}).finally(() =>
        this.#reading = undefined
      );
    }
    return this.#shared.get(keyId) ?? 0;
  }

  /**
   * Tells every process the key cools down until `coolUntil` (a later
   * cool-down already stored stays).
   *
   * @param keyId The key's id.
   * @param health Until when, and why.
   */
  report(keyId: string, health: KeyHealthRecord): void {
    this.#shared.set(
      keyId,
      Math.max(this.#shared.get(keyId) ?? 0, health.coolUntil),
    );
    const key = providerKeyHealthKey(keyId);
    commitWithRetry(`health of provider key "${keyId}"`, async () => {
      const current = await this.#kv.get<KeyHealthRecord>(key);
      if ((current.value?.coolUntil ?? 0) >= health.coolUntil) return true;
      const committed = await this.#kv.atomic().check(current).set(
        key,
        health,
        { expireIn: Math.max(1, health.coolUntil - this.#now()) },
      ).commit();
      return committed.ok ? true : null;
    }).catch(() => {});
  }

  async #read(): Promise<void> {
    for (let i = 0; i < this.#keyIds.length; i += 10) {
      const ids = this.#keyIds.slice(i, i + 10);
      const entries = await this.#kv.getMany<KeyHealthRecord[]>(
        ids.map(providerKeyHealthKey),
      );
      entries.forEach((entry, j) => {
        if (entry.value) this.#shared.set(ids[j], entry.value.coolUntil);
        else this.#shared.delete(ids[j]);
      });
    }
  }
}

/**
 * A store that went away, and the one loop that waits for it to come back.
 *
 * The first operation that finds the store unreachable (a database stopped,
 * restarting, or a pooled connection it dropped) starts an outage: one
 * probe loop per process then tries the store with a growing, jittered delay
 * ({@linkcode PROBE_MIN_MS} to {@linkcode PROBE_MAX_MS}) until it answers.
 * Meanwhile nothing else is sent to it: an operation that needs the store
 * waits for the probe's success, so a hundred waiting calls cost the
 * database one probe at a time, not a hundred reconnects. The wait is
 * bounded: an operation gives up {@linkcode StoreOutageOptions.waitMs} after
 * it began or after the outage began, whichever comes first, with a
 * {@linkcode StoreUnavailableError} (a 503 with `retry-after`); once an
 * outage is older than the bound, operations give up at once rather than
 * pile up.
 *
 * @example Wait for a store that comes back
 * ```ts
 * import { StoreOutage } from "./outage.ts";
 *
 * let up = false;
 * const outage = new StoreOutage({
 *   waitMs: 5_000,
 *   probe: () => up ? Promise.resolve() : Promise.reject(new Error("down")),
 * });
 * outage.report(Object.assign(new Error("refused"), { code: "ECONNREFUSED" }));
 * setTimeout(() => up = true, 100);
 * await outage.back(performance.now() + 5_000); // resolves once a probe succeeds
 * outage.close();
 * ```
 *
 * @module
 */

/** The first delay between two probes of an unreachable store, ms. */
export const PROBE_MIN_MS = 50;
/** The longest delay between two probes, ms: a store that is back is seen within it. */
export const PROBE_MAX_MS = 1_000;
/** How often operations under way are checked against their deadline, ms. */
const WATCHDOG_MS = 250;
/** How long a probe may go unanswered before it counts as failed, ms. */
export const PROBE_TIMEOUT_MS = 2_000;
/** Probes in a row sent again at once after failing on a pooled connection that was lost (more than a pool holds). */
const STALE_PROBES = 32;
/** What a caller refused past the bound is told to wait before trying again, seconds. */
const RETRY_AFTER_SECONDS = 5;

/** Error codes of a store that cannot be reached: the client's own (postgres.js, Node) and PostgreSQL's shutdown and start-up states. */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "57P01",
  "57P02",
  "57P03",
]);

/** Codes of a connection that was open and is found lost. */
const LOST = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "ECONNRESET",
  "EPIPE",
]);

/** Codes of errors a client raises before anything reached the store. */
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "CONNECT_TIMEOUT",
  "CONNECTION_ENDED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/**
 * Whether an error says the store cannot be reached now (a database down,
 * restarting, or a connection it dropped), not that the gateway has a bug.
 *
 * @param error What a store operation threw.
 * @returns `true` for an unreachable store.
 *
 * @example
 * ```ts
 * import { isStoreUnreachable } from "./outage.ts";
 * import assert from "node:assert/strict";
 *
 * assert.ok(isStoreUnreachable(Object.assign(new Error("x"), { code: "57P01" })));
 * assert.ok(!isStoreUnreachable(new TypeError("x is undefined")));
 * ```
 */
export function isStoreUnreachable(error: unknown): boolean {
  const code = codeOf(error);
  return (code !== undefined && UNREACHABLE.has(code)) ||
    error instanceof Deno.errors.ConnectionRefused ||
    error instanceof Deno.errors.ConnectionReset ||
    error instanceof StoreUnavailableError;
}

/**
 * Whether an error was raised before the operation reached the store (no
 * connection could be made), so a write that threw it was certainly not
 * applied and may be sent again.
 *
 * @param error What a store operation threw.
 * @returns `true` when nothing reached the store.
 *
 * @example
 * ```ts
 * import { neverReachedStore } from "./outage.ts";
 * import assert from "node:assert/strict";
 *
 * assert.ok(neverReachedStore(Object.assign(new Error("x"), { code: "ECONNREFUSED" })));
 * assert.ok(!neverReachedStore(Object.assign(new Error("x"), { code: "ECONNRESET" })));
 * ```
 */
export function neverReachedStore(error: unknown): boolean {
  const code = codeOf(error);
  return (code !== undefined && NOT_SENT.has(code)) ||
    error instanceof Deno.errors.ConnectionRefused ||
    error instanceof StoreUnavailableError;
}

/**
 * The store has been unreachable for longer than the gateway waits for it:
 * a 503 with `retry-after` (`errors.ts`). `cause` is the store's last error.
 */
export class StoreUnavailableError extends Error {
  /** How long the outage has lasted, ms. */
  readonly downForMs: number;
  /** What the caller is told to wait before trying again, seconds. */
  readonly retryAfterSeconds: number;

  /**
   * Creates the error.
   *
   * @param downForMs How long the store has been unreachable, ms.
   * @param cause The error that began the outage.
   */
  constructor(downForMs: number, cause?: unknown) {
    super(
      `The gateway's store has been unreachable for ${
        Math.round(downForMs / 100) / 10
      } s; retry shortly`,
      { cause },
    );
    this.name = "StoreUnavailableError";
    this.downForMs = downForMs;
    this.retryAfterSeconds = RETRY_AFTER_SECONDS;
  }
}

/**
 * The store did not answer an operation before its deadline: a database
 * that accepts connections and never answers, or a connection whose far
 * side vanished without a reset. Whether a write that timed out was applied
 * is unknown (`code` is `ETIMEDOUT`, which `neverReachedStore` refuses).
 */
export class StoreTimeoutError extends Error {
  /** `ETIMEDOUT`, as a socket that timed out says. */
  readonly code = "ETIMEDOUT";

  /**
   * Creates the error.
   *
   * @param waitedMs How long the operation waited, ms.
   */
  constructor(waitedMs: number) {
    super(`The store did not answer within ${Math.round(waitedMs)} ms`);
    this.name = "StoreTimeoutError";
  }
}

/** Options of {@linkcode StoreOutage}. */
export interface StoreOutageOptions {
  /** The longest an operation waits for the store, ms (`GATEWAY_STORE_WAIT_MS`). */
  waitMs: number;
  /** One cheap round trip to the store, bypassing the outage; it rejects while the store is away. */
  probe: () => Promise<unknown>;
  /** Told when an outage begins and ends. */
  log?: (record: Record<string, unknown>) => void;
}

/** Whether the store answers, as {@linkcode StoreOutage.status} reports it. */
export interface StoreStatus {
  /** Whether the store is reachable (no outage under way). */
  reachable: boolean;
  /** How long it has been unreachable, ms (during an outage). */
  downForMs?: number;
  /** How long an operation waits for it, ms. */
  waitMs: number;
}

/** One process's view of its store's reachability, and its one probe loop. */
export class StoreOutage {
  /** The longest an operation waits for the store, ms. */
  readonly waitMs: number;
  readonly #probe: () => Promise<unknown>;
  readonly #log: (record: Record<string, unknown>) => void;
  /** When the outage under way began (`performance.now()`), or `undefined`. */
  #since: number | undefined;
  #cause: unknown;
  #back: PromiseWithResolvers<void> | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  /** Probes in a row that failed on a connection that was open, not on connecting. */
  #staleProbes = 0;
  /** Operations under way, each failed at its deadline by one watchdog. */
  readonly #running = new Set<{ deadline: number; fail: () => void }>();
  #watchdog: ReturnType<typeof setInterval> | undefined;

  /**
   * Creates the tracker; the store is taken to be reachable.
   *
   * @param options The bound, the probe and the log.
   */
  constructor(options: StoreOutageOptions) {
    this.waitMs = options.waitMs;
    this.#probe = options.probe;
    this.#log = options.log ?? (() => {});
  }

  /** Whether the store is reachable (no outage under way). */
  get reachable(): boolean {
    return this.#since === undefined;
  }

  /**
   * Whether the store answers, and for how long it has not.
   *
   * @returns The status.
   */
  status(): StoreStatus {
    return this.#since === undefined
      ? { reachable: true, waitMs: this.waitMs }
      : {
        reachable: false,
        downForMs: Math.round(performance.now() - this.#since),
        waitMs: this.waitMs,
      };
  }

  /**
   * Notes what an operation threw: an unreachable store begins an outage
   * (and its probe loop) unless one is under way.
   *
   * @param error What the operation threw.
   * @returns Whether the error says the store is unreachable.
   */
  report(error: unknown): boolean {
    if (!isStoreUnreachable(error)) return false;
    // Our own refusal past the bound says nothing new about the store.
    if (error instanceof StoreUnavailableError) return true;
    if (this.#since === undefined && !this.#closed) {
      this.#since = performance.now();
      this.#cause = error;
      this.#staleProbes = 0;
      this.#back = Promise.withResolvers<void>();
      // Nobody may be waiting: the promise is only ever resolved.
      this.#log({
        level: "warn",
        message:
          `The store is unreachable (${error}); calls that need it wait for it up to ${this.waitMs} ms (GATEWAY_STORE_WAIT_MS)`,
      });
      this.#schedule(PROBE_MIN_MS);
    }
    return true;
  }

  /**
   * Resolves at once when the store is reachable; during an outage, once a
   * probe finds it back.
   *
   * @param deadline When the waiting operation gives up (`performance.now()` ms); the outage's own bound may come first.
   * @returns A promise that resolves when the store is back.
   * @throws {StoreUnavailableError} When the store is still away at the deadline, or the outage is older than the bound.
   * @throws {Deno.errors.BadResource} When the store is closed meanwhile.
   */
  async back(deadline: number): Promise<void> {
    if (this.#closed) throw new Deno.errors.BadResource("The store is closed");
    const since = this.#since;
    const back = this.#back;
    if (since === undefined || !back) return;
    const left = Math.min(deadline, since + this.waitMs) - performance.now();
    if (left <= 0) {
      throw new StoreUnavailableError(performance.now() - since, this.#cause);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new StoreUnavailableError(performance.now() - since, this.#cause),
          ),
        left,
      );
    });
    try {
      await Promise.race([back.promise, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Runs one operation, failing it with a {@linkcode StoreTimeoutError} if
   * the store has not answered by `deadline` (the operation itself is left
   * to end, unheard). One watchdog checks every operation under way, a
   * quarter of a second apart, rather than a timer each.
   *
   * @param attempt The operation.
   * @param deadline When it is given up (`performance.now()` ms).
   * @returns What the operation returned.
   * @throws {StoreTimeoutError} When the store did not answer in time.
   */
  async within<T>(attempt: () => Promise<T>, deadline: number): Promise<T> {
    const started = performance.now();
    const { promise: timedOut, reject } = Promise.withResolvers<never>();
    const entry = {
      deadline,
      fail: () => reject(new StoreTimeoutError(performance.now() - started)),
    };
    const running = attempt();
    // Answered after its deadline, or failing then: nobody listens.
    running.catch(() => {});
    this.#running.add(entry);
    this.#watchdog ??= setInterval(() => this.#expire(), WATCHDOG_MS);
    try {
      return await Promise.race([running, timedOut]);
    } finally {
      this.#running.delete(entry);
      if (this.#running.size === 0) {
        clearInterval(this.#watchdog);
        this.#watchdog = undefined;
      }
    }
  }

  #expire(): void {
    const now = performance.now();
    for (const entry of this.#running) {
      if (entry.deadline <= now) {
        this.#running.delete(entry);
        entry.fail();
      }
    }
  }

  /** Stops probing; operations waiting are told the store is closed. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    clearInterval(this.#watchdog);
    this.#watchdog = undefined;
    this.#back?.reject(new Deno.errors.BadResource("The store is closed"));
    // Nobody may be waiting.
    this.#back?.promise.catch(() => {});
    this.#since = undefined;
    this.#back = undefined;
  }

  #schedule(ceilingMs: number): void {
    this.#timer = setTimeout(
      () => this.#probeOnce(ceilingMs),
      ceilingMs * (0.5 + Math.random() / 2),
    );
  }

  async #probeOnce(ceilingMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      // A probe sent on a connection whose server half died (a backend
      // orphaned by a killed postmaster) may never be answered: it counts
      // as failed after a while, and the next goes on another connection.
      await Promise.race([
        this.#probe(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error("The probe was not answered")),
            PROBE_TIMEOUT_MS,
          );
        }),
      ]);
    } catch (error) {
      if (this.#closed || this.#since === undefined) return;
      // A pooled connection that was already lost fails the probe sent on
      // it, and is dropped: the next probe goes at once, on another
      // connection (or a new one), until the pool's stale ones are gone.
      const code = codeOf(error);
      if (
        code !== undefined && LOST.has(code) &&
        this.#staleProbes < STALE_PROBES
      ) {
        this.#staleProbes++;
        this.#timer = setTimeout(() => this.#probeOnce(ceilingMs), 0);
        return;
      }
      this.#schedule(Math.min(ceilingMs * 2, PROBE_MAX_MS));
      return;
    } finally {
      clearTimeout(timer);
    }
    this.#staleProbes = 0;
    if (this.#closed || this.#since === undefined) return;
    const downForMs = Math.round(performance.now() - this.#since);
    const back = this.#back;
    this.#since = undefined;
    this.#back = undefined;
    this.#cause = undefined;
    this.#log({
      level: "warn",
      message: `The store is back after ${downForMs} ms`,
    });
    back?.resolve();
  }
}

/**
 * One retry helper for the whole package, in the shape of std's `retry`:
 * options with defaults, an exponential delay with full jitter, and, when
 * every attempt failed, a {@linkcode RetryError} that keeps the last error as
 * its `cause`. Private to the package.
 *
 * @module
 */

/** How {@linkcode retry} retries. Every field has a default. */
export interface RetryOptions {
  /** Attempts in all, the first included (default 5). */
  maxAttempts?: number;
  /** Delay ceiling before the second attempt, ms (default 1). */
  minTimeout?: number;
  /** Largest delay ceiling, ms (default 50). */
  maxTimeout?: number;
  /** What the delay ceiling is multiplied by after each attempt (default 2). */
  multiplier?: number;
  /** Share of the ceiling drawn at random, 0 to 1 (default 1: full jitter). */
  jitter?: number;
  /** Whether an error is worth another attempt (default: every error is). */
  isRetriable?: (error: unknown) => boolean;
  /** Stops waiting and retrying; the abort reason is thrown. */
  signal?: AbortSignal;
}

/** Every attempt of {@linkcode retry} failed; `cause` is the last error. */
export class RetryError extends Error {
  /** How many attempts were made. */
  readonly attempts: number;

  /**
   * Creates the error.
   *
   * @param message What was being done, and that it kept failing.
   * @param attempts How many attempts were made.
   * @param cause The last attempt's error.
   */
  constructor(message: string, attempts: number, cause: unknown) {
    super(message, { cause });
    this.name = "RetryError";
    this.attempts = attempts;
  }
}

/**
 * Calls `fn` until it returns, waiting a growing, jittered delay between
 * attempts. An error `isRetriable` refuses is thrown as it is; when the
 * attempts run out, a {@linkcode RetryError} carries the last error.
 *
 * @param fn One attempt; gets its number, from 1.
 * @param options Attempts, delays and which errors to retry.
 * @returns What the first successful attempt returned.
 * @throws {RetryError} When every attempt failed with a retriable error.
 * @example
 * ```ts
 * import { retry } from "./_retry.ts";
 * let calls = 0;
 * const value = await retry(() => {
 *   calls++;
 *   if (calls < 3) throw new Error("busy");
 *   return Promise.resolve("done");
 * }, { maxAttempts: 5 });
 * console.log(value, calls); // "done" 3
 * ```
 */
export async function retry<T>(
  fn: (attempt: number) => Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  const {
    maxAttempts = 5,
    minTimeout = 1,
    maxTimeout = 50,
    multiplier = 2,
    jitter = 1,
    isRetriable = () => true,
    signal,
  } = options;
  let ceiling = minTimeout;
  for (let attempt = 1;; attempt++) {
    signal?.throwIfAborted();
    try {
      return await fn(attempt);
    } catch (error) {
      if (!isRetriable(error)) throw error;
      if (attempt >= maxAttempts) {
        throw new RetryError(
          `Still failing after ${attempt} attempts: ${messageOf(error)}`,
          attempt,
          error,
        );
      }
    }
    const wait = ceiling * (1 - jitter * Math.random());
    ceiling = Math.min(maxTimeout, ceiling * multiplier);
    if (wait >= 0.5) await sleep(wait, signal);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener("abort", aborted);
      resolve();
    }
    function aborted() {
      clearTimeout(timer);
      reject(signal!.reason);
    }
    signal?.addEventListener("abort", aborted, { once: true });
  });
}

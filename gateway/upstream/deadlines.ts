/**
 * One timer for the deadlines of every upstream request in flight: the
 * answer timeout of each call and the idle timeout of each open stream. A
 * timer per call (Node's `Timeout` under Deno 2, created and cleared on every
 * call) cost about 3 % of the gateway's CPU at saturation; one sweep over the
 * waiting set costs almost nothing. Private to the gateway.
 *
 * @module
 */

/** A request waiting on its upstream: its deadline and what to do past it. */
export interface Deadline {
  /** Epoch ms; `Infinity` while not waiting. */
  deadline: number;
  /** Called once, from the sweep, when the deadline has passed. */
  expire(): void;
}

/**
 * A waiter that aborts `abort` with a `TimeoutError` past its deadline: an
 * upstream request that took too long to answer or to send its next event.
 *
 * @param abort The upstream request's controller.
 * @returns The waiter, not yet watched.
 */
export function upstreamTimeout(abort: AbortController): Deadline {
  return {
    deadline: Infinity,
    expire: () =>
      abort.abort(new DOMException("Upstream timed out", "TimeoutError")),
  };
}

/**
 * The waiting set and its timer. The timer ticks a quarter of the shortest
 * timeout it was given (at most 250 ms, at least 10 ms), so a deadline fires
 * at most a tick late; it stops at the first sweep that finds nothing
 * waiting, not at every removal, so steady traffic never re-creates it.
 */
class Deadlines {
  readonly #waiting = new Set<Deadline>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #tickMs = 250;

  /** How many are waiting. */
  get size(): number {
    return this.#waiting.size;
  }

  /**
   * Sets `waiter`'s deadline `timeoutMs` from now and watches it.
   *
   * @param waiter The request (its `deadline` is overwritten).
   * @param timeoutMs How long from now.
   */
  watch(waiter: Deadline, timeoutMs: number): void {
    waiter.deadline = Date.now() + timeoutMs;
    this.#waiting.add(waiter);
    const tick = Math.max(10, Math.min(250, Math.floor(timeoutMs / 4)));
    if (this.#timer !== undefined && tick >= this.#tickMs) return;
    clearInterval(this.#timer);
    this.#tickMs = tick;
    this.#timer = setInterval(() => this.#sweep(), tick);
    Deno.unrefTimer(this.#timer);
  }

  /**
   * Stops watching `waiter`.
   *
   * @param waiter The request.
   */
  forget(waiter: Deadline): void {
    waiter.deadline = Infinity;
    this.#waiting.delete(waiter);
  }

  #sweep(): void {
    if (this.#waiting.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
      this.#tickMs = 250;
      return;
    }
    const now = Date.now();
    for (const waiter of this.#waiting) {
      if (waiter.deadline <= now) {
        this.#waiting.delete(waiter);
        waiter.expire();
      }
    }
  }
}

/** The process's deadlines. */
export const deadlines: Deadlines = new Deadlines();

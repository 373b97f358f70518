/**
 * The memory the control port lends to frames in progress. A connection's
 * first 64 KiB of a frame are its own; past that, a frame being read must
 * hold a share of one budget every connection draws on, so twenty peers each
 * sending a 16 MiB frame at once cost the budget, not twenty frames. A
 * reader that finds the budget spent stops reading (the peer's bytes wait
 * in the kernel) until a share comes back.
 *
 * @module
 */

/** Bytes of a frame a connection reads without drawing on the budget. */
export const FREE_FRAME_BYTES = 64 * 1024;

/** A waiter: how much it needs and how to wake it. */
interface Waiter {
  bytes: number;
  grant: () => void;
  refuse: (error: Error) => void;
}

/**
 * A byte budget shared by every connection's frame in progress, handed out
 * first come, first served.
 *
 * @example
 * ```ts
 * import { FrameBudget } from "./frame_budget.ts";
 *
 * const budget = new FrameBudget(32 * 1024 * 1024);
 * await budget.acquire(16 * 1024 * 1024);
 * budget.release(16 * 1024 * 1024);
 * ```
 */
export class FrameBudget {
  readonly #total: number;
  #free: number;
  readonly #waiters: Waiter[] = [];

  /**
   * Creates the budget.
   *
   * @param total Bytes lent at most at once.
   */
  constructor(total: number) {
    this.#total = total;
    this.#free = total;
  }

  /** Bytes lent now. */
  get lent(): number {
    return this.#total - this.#free;
  }

  /**
   * Takes `bytes` of the budget, waiting in line while it is spent.
   *
   * @param bytes How much (at most the total).
   * @param signal Aborting it leaves the line with an error.
   * @returns When the bytes are taken.
   */
  acquire(bytes: number, signal?: AbortSignal): Promise<void> {
    const wanted = Math.min(bytes, this.#total);
    if (this.#waiters.length === 0 && wanted <= this.#free) {
      this.#free -= wanted;
      return Promise.resolve();
    }
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    const waiter: Waiter = {
      bytes: wanted,
      grant: resolve,
      refuse: reject,
    };
    this.#waiters.push(waiter);
    signal?.addEventListener("abort", () => {
      const at = this.#waiters.indexOf(waiter);
      if (at < 0) return;
      this.#waiters.splice(at, 1);
      waiter.refuse(new Error("The connection closed while its frame waited"));
      this.#wake();
    }, { once: true });
    return promise;
  }

  /**
   * Gives back what {@linkcode FrameBudget.acquire} took.
   *
   * @param bytes The same amount.
   */
  release(bytes: number): void {
    this.#free = Math.min(
      this.#total,
      this.#free + Math.min(bytes, this.#total),
    );
    this.#wake();
  }

  #wake(): void {
    while (this.#waiters.length > 0 && this.#waiters[0].bytes <= this.#free) {
      const waiter = this.#waiters.shift()!;
      this.#free -= waiter.bytes;
      waiter.grant();
    }
  }
}

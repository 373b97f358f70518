/**
 * The credit lease as a pure state machine: what one gateway process does
 * with one caller's money in one commit. No I/O; `_commit.ts` reads KV,
 * calls {@linkcode planBatch} and commits what it says.
 *
 * A caller's balance (the sum of their ledger) lives in two places in KV:
 * the unleased credits, and the leases gateway processes hold, at most one
 * per process and caller. A process takes reservations from its lease in
 * memory, with no commit; a batch moves money between the unleased credits
 * and the lease, and charges settled calls to them:
 *
 * - a reserve the lease's free part cannot cover grows the lease by what it
 *   lacks plus some calls ahead, if the unleased credits hold that much;
 * - a settle charges its cost to its reservation's hold, then to the lease's
 *   free part, then to the unleased credits, which may go below zero: the
 *   full cost is always charged, and a debt refuses the caller's next reserve;
 * - `return` gives the lease's free part back; settles that left the lease
 *   far above what calls need trim it.
 *
 * Invariants, checked by `lease_test.ts` and the model test:
 * - `unleased + leased` moves only by the costs settled (one ledger entry each);
 * - `0 <= held <= leased`: reservations never hold more than the lease;
 * - a reserve is granted only when the lease and the unleased credits cover it.
 *
 * @module
 */

/** What one process knows of a caller's money when it plans a batch, integer micro-USD. */
export interface LaneView {
  /** The caller's unleased credits in KV; below zero is a debt. */
  unleased: number;
  /** The amount of this process's lease in KV; 0 without one. */
  leased: number;
  /** The part of the lease that open reservations and queued settles hold. */
  held: number;
  /** The latest reservation's amount: the lease grows ahead by multiples of it. */
  callMicros: number;
}

/** One operation of a batch. */
export type LaneOperation =
  | {
    /** Hold `amountMicros` for one call. */
    kind: "reserve";
    amountMicros: number;
  }
  | {
    /** Charge a call's real cost. */
    kind: "settle";
    costMicros: number;
    /** The part of `held` the call's reservation still holds in this lease (0 when the lease it came from is gone). */
    earmarkMicros: number;
  }
  | {
    /** Take calls ahead of demand into the lease. */
    kind: "grow";
  }
  | {
    /** Give the lease's free part back to the unleased credits. */
    kind: "return";
  };

/** What an operation came to; in the order of the operations. */
export type LaneOutcome =
  | {
    kind: "reserve";
    granted: boolean;
    /** The lane's money not held by reservations, right after this one: `unleased + leased - held`. */
    unheldMicros: number;
  }
  | { kind: "settle"; fromLeaseMicros: number; fromUnleasedMicros: number }
  | { kind: "grow" | "return" };

/** How far ahead of demand a lease grows. */
export interface LeaseSizing {
  /** At most this many calls of the latest reservation's size. */
  aheadCalls: number;
  /** At most this share of the unleased credits, so processes sharing a small balance never strand it in their leases. */
  aheadShare: number;
}

/** A planned batch: the view once it commits, and what each operation came to. */
export interface BatchPlan {
  /** The view after the commit. */
  next: LaneView;
  /** One outcome per operation. */
  outcomes: LaneOutcome[];
  /**
   * Money that leaves the lease's free part in this batch. Reserves taken in
   * memory while the commit runs must leave it alone, so the lease still
   * covers them whether the commit wins or not.
   */
  outflowMicros: number;
}

/**
 * The money a lease takes ahead of demand.
 *
 * @param sizing The sizing rule.
 * @param callMicros The latest reservation's amount.
 * @param unleasedMicros The unleased credits.
 * @returns Micro-USD, a multiple of `callMicros`.
 */
export function aheadMicros(
  sizing: LeaseSizing,
  callMicros: number,
  unleasedMicros: number,
): number {
  if (callMicros <= 0 || unleasedMicros <= 0) return 0;
  const calls = Math.min(
    sizing.aheadCalls,
    Math.floor(sizing.aheadShare * unleasedMicros / callMicros),
  );
  return callMicros * calls;
}

/**
 * Applies a batch of operations to a lane, one at a time, as separate commits
 * would, then sizes the lease: grown ahead of demand after a reserve the lease
 * could not cover (or on `grow`), trimmed when settles left it far above that,
 * emptied on `return`.
 *
 * @param view The lane as last read from KV.
 * @param operations The batch, in order.
 * @param sizing How far ahead the lease grows.
 * @returns The lane after the batch, each operation's outcome, and the money leaving the lease's free part.
 */
export function planBatch(
  view: LaneView,
  operations: readonly LaneOperation[],
  sizing: LeaseSizing,
): BatchPlan {
  let { unleased, leased, held, callMicros } = view;
  let grew = false;
  let wantsGrow = false;
  let wantsReturn = false;
  let settled = false;
  const outcomes = operations.map((operation): LaneOutcome => {
    switch (operation.kind) {
      case "grow":
        wantsGrow = true;
        return { kind: "grow" };
      case "return":
        wantsReturn = true;
        return { kind: "return" };
      case "reserve": {
        const amount = operation.amountMicros;
        const lacking = Math.max(0, amount - (leased - held));
        if (lacking > 0 && lacking > unleased) {
          return {
            kind: "reserve",
            granted: false,
            unheldMicros: unleased + leased - held,
          };
        }
        unleased -= lacking;
        leased += lacking;
        held += amount;
        grew ||= lacking > 0;
        callMicros = amount;
        return {
          kind: "reserve",
          granted: true,
          unheldMicros: unleased + leased - held,
        };
      }
      case "settle": {
        settled = true;
        const { costMicros, earmarkMicros } = operation;
        const fromHold = Math.min(earmarkMicros, costMicros);
        const rest = costMicros - fromHold;
        const fromFree = Math.min(rest, leased - held);
        held -= earmarkMicros;
        leased -= fromHold + fromFree;
        unleased -= rest - fromFree;
        return {
          kind: "settle",
          fromLeaseMicros: fromHold + fromFree,
          fromUnleasedMicros: rest - fromFree,
        };
      }
    }
  });

  const free = leased - held;
  const ahead = aheadMicros(sizing, callMicros, unleased);
  // Positive: from the lease to the unleased credits; negative: the other way.
  let moved = 0;
  if (wantsReturn) moved = free;
  else if ((grew || wantsGrow) && free < ahead) {
    moved = -Math.min(ahead - free, Math.max(0, unleased));
  } else if (settled && free > 2 * ahead) moved = free - ahead;
  unleased += moved;
  leased -= moved;

  const freeBefore = view.leased - view.held;
  return {
    next: { unleased, leased, held, callMicros },
    outcomes,
    outflowMicros: Math.max(0, freeBefore - (leased - held)),
  };
}

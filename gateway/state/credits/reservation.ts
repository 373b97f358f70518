/**
 * What the call and `Billing` (`billing.ts`) hand each other: a reservation, the
 * result of asking for one, and the settlement that closes it.
 *
 * @module
 */
import type { TraceRecord } from "../traces.ts";
import type { Usage } from "../../upstream/usage.ts";

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
  /** The id of the charge's ledger entry: given by the billing once, before the charge is queued (and journaled), so a charge committed again is found, never doubled. */
  chargeId?: string;
}

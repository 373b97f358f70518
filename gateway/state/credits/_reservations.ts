/**
 * The reservations this process took and has not settled yet, each with the
 * lease it holds money of: opened by a reserve, claimed by its settle (the
 * unspent part of the hold goes back to the lease at once), closed once the
 * settle commits or abandoned when it never will. Private to `credits/`.
 *
 * @module
 */
import { randomId } from "../../_ids.ts";
import type { Lane, OpenReservation } from "./_lane.ts";
import type { Reservation, Settlement } from "./reservation.ts";

/** One process's open reservations, by id. */
export class OpenReservations {
  readonly #open = new Map<string, OpenReservation>();

  /**
   * Records a reservation granted from the lease `leaseId`.
   *
   * @param callerId The caller.
   * @param leaseId The lease it holds money of.
   * @param amountMicros What it holds.
   * @returns The reservation handed to the call.
   */
  open(callerId: string, leaseId: string, amountMicros: number): Reservation {
    const id = randomId("rs_", 16);
    this.#open.set(id, {
      id,
      callerId,
      leaseId,
      amountMicros,
      settling: false,
    });
    return { id, callerId, amountMicros };
  }

  /**
   * Marks the reservation as settling and gives the unspent part of its hold
   * back to the lease at once, so reserves can use it before the settle
   * commits.
   *
   * @param settlement The settle.
   * @param laneOf The lane of a caller.
   * @returns The reservation, now holding the part of the cost its hold pays.
   * @throws {Error} When the reservation is unknown, another caller's, or settled already.
   */
  claim(
    settlement: Settlement,
    laneOf: (callerId: string) => Lane,
  ): OpenReservation {
    const { reservation, costMicros } = settlement;
    const cannot = `Cannot settle reservation "${reservation.id}"`;
    const open = this.#open.get(reservation.id);
    // Settled reservations are forgotten: settling one again finds nothing.
    if (!open) throw new Error(`${cannot}: it is unknown or already settled`);
    if (open.callerId !== reservation.callerId) {
      throw new Error(
        `${cannot}: it belongs to "${open.callerId}", not "${reservation.callerId}"`,
      );
    }
    if (open.settling) throw new Error(`${cannot}: it is already settled`);
    open.settling = true;
    const lane = laneOf(open.callerId);
    const earmark = Math.min(costMicros, open.amountMicros);
    if (lane.lease?.record.id === open.leaseId) {
      lane.heldMicros -= open.amountMicros - earmark;
    }
    open.amountMicros = earmark;
    lane.pendingChargeMicros += costMicros - earmark;
    return open;
  }

  /**
   * Forgets a claimed reservation whose settle will never commit: its hold
   * goes back to the lease, uncharged (the operator loses the charge, never
   * the caller).
   *
   * @param open The claimed reservation.
   * @param settlement Its settle.
   * @param laneOf The lane of a caller.
   */
  abandon(
    open: OpenReservation,
    settlement: Settlement,
    laneOf: (callerId: string) => Lane,
  ): void {
    if (!this.#open.delete(open.id)) return;
    const lane = laneOf(open.callerId);
    if (lane.lease?.record.id === open.leaseId) {
      lane.heldMicros -= open.amountMicros;
    }
    lane.pendingChargeMicros -= settlement.costMicros - open.amountMicros;
  }

  /**
   * Forgets a reservation whose settle committed.
   *
   * @param id The reservation's id.
   * @returns Whether it was open.
   */
  close(id: string): boolean {
    return this.#open.delete(id);
  }
}

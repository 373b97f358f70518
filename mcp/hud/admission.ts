/**
 * Who the control port lets in. Every connection is a guest until it
 * proves it is the harness (`hello` or `tunnel.open` carrying the harness
 * token): guests are capped in total and per peer address. Past either
 * cap a connection is not refused at once, since the harness cannot be
 * told from a flood before it speaks: it becomes a knock, a short-lived
 * connection that is let in only if its first frame carries the token.
 * Knocks are few; past their cap the oldest knock is closed, so a flood
 * of guests and knocks never locks the harness out.
 *
 * @module
 */

/** The most guest connections open at once. */
export const MAX_CONNECTIONS = 512;

/** The most guest connections open at once from one peer address. */
export const MAX_PER_PEER = 128;

/** The most knocks (connections past the caps, waiting to show the token) at once. */
export const MAX_KNOCKS = 64;

/** How long a knock may take to send its first frame, ms. */
export const KNOCK_TIMEOUT_MS = 2_000;

/** The caps of {@linkcode Admission}. */
export interface AdmissionLimits {
  /** Guests in total (default {@linkcode MAX_CONNECTIONS}). */
  maxConnections?: number;
  /** Guests per peer address (default {@linkcode MAX_PER_PEER}). */
  maxPerPeer?: number;
  /** Knocks (default {@linkcode MAX_KNOCKS}). */
  maxKnocks?: number;
}

/** One admitted connection's place. */
export interface Slot {
  /** `guest` under the caps, `knock` past them, `harness` once it showed the token. */
  readonly kind: "guest" | "knock" | "harness";
  /** The connection showed the token: it stops counting toward the caps. */
  trust(): void;
  /** The connection closed. */
  release(): void;
}

/** The guest and knock counts of one control port. */
export class Admission {
  readonly #maxConnections: number;
  readonly #maxPerPeer: number;
  readonly #maxKnocks: number;
  #guests = 0;
  readonly #perPeer = new Map<string, number>();
  /** Knocks in arrival order, each with the way to close it. */
  readonly #knocks = new Set<() => void>();

  /**
   * Creates the counts.
   *
   * @param limits The caps.
   */
  constructor(limits: AdmissionLimits = {}) {
    this.#maxConnections = limits.maxConnections ?? MAX_CONNECTIONS;
    this.#maxPerPeer = limits.maxPerPeer ?? MAX_PER_PEER;
    this.#maxKnocks = limits.maxKnocks ?? MAX_KNOCKS;
  }

  /** Guests open now. */
  get guests(): number {
    return this.#guests;
  }

  /** Knocks open now. */
  get knocks(): number {
    return this.#knocks.size;
  }

  /**
   * Admits a new connection as a guest, or past the caps as a knock
   * (closing the oldest knock when there are too many).
   *
   * @param peer The peer's address.
   * @param close Closes the connection (when a newer knock displaces it).
   * @returns Its slot.
   */
  admit(peer: string, close: () => void): Slot {
    const fromPeer = this.#perPeer.get(peer) ?? 0;
    if (this.#guests < this.#maxConnections && fromPeer < this.#maxPerPeer) {
      this.#guests++;
      this.#perPeer.set(peer, fromPeer + 1);
      return this.#slot("guest", () => {
        this.#guests--;
        const left = (this.#perPeer.get(peer) ?? 1) - 1;
        if (left > 0) this.#perPeer.set(peer, left);
        else this.#perPeer.delete(peer);
      });
    }
    if (this.#knocks.size >= this.#maxKnocks) {
      const oldest = this.#knocks.values().next().value!;
      this.#knocks.delete(oldest);
      oldest();
    }
    this.#knocks.add(close);
    return this.#slot("knock", () => this.#knocks.delete(close));
  }

  /** A slot whose counts `leave` gives back once, on trust or release. */
  #slot(kind: "guest" | "knock", leave: () => void): Slot {
    let current: Slot["kind"] = kind;
    let counted = true;
    const giveBack = () => {
      if (counted) leave();
      counted = false;
    };
    return {
      get kind() {
        return current;
      },
      trust: () => {
        giveBack();
        current = "harness";
      },
      release: giveBack,
    };
  }
}

/**
 * Who gets a legacy session (Streamable HTTP's `/mcp` sessions, legacy SSE
 * streams): the idea of the HUD control port's admission (`hud/admission.ts`:
 * guests capped in total and per peer address, the harness let in past
 * them) for transports that can tell the harness before admitting it, since
 * its token comes with the request. There are no knocks; instead a session
 * idle a minute or more makes room for a new one.
 *
 * - A guest is refused with 429 past its peer's cap (unless that peer's own
 *   session idle longest has idled a minute: it is closed instead), and with
 *   503 past the total cap (unless any guest idled a minute). Refusing,
 *   rather than closing the peer's oldest session, keeps a peer from pushing
 *   out sessions in use, which matters behind a proxy where every client
 *   is one peer.
 * - The harness counts toward no peer and may go `harnessReserve` sessions
 *   past the total cap (PostgreSQL's reserved connections), so a flood of
 *   guests never locks it out; its reserve is bounded too.
 *
 * @module
 */
import { jsonRpcErrorResponse } from "./_jsonrpc.ts";

/** Default cap on sessions open at once (`MCP_MAX_SESSIONS`). */
export const DEFAULT_MAX_SESSIONS = 256;

/** Default cap on one peer address's sessions (`MCP_MAX_SESSIONS_PER_PEER`): a quarter of the total, as on the HUD port. */
export const DEFAULT_MAX_SESSIONS_PER_PEER = 64;

/** Default sessions kept for the harness past the total cap (`MCP_HARNESS_RESERVE`). */
export const DEFAULT_HARNESS_RESERVE = 32;

/** A session idle this long may be closed to make room for a new one, ms. */
export const EVICTABLE_IDLE_MS = 60_000;

/** The caps of {@linkcode SessionAdmission}; each has a documented default. */
export interface SessionLimits {
  /** Sessions in total (default {@linkcode DEFAULT_MAX_SESSIONS}). */
  maxSessions?: number;
  /** Guest sessions per peer address (default {@linkcode DEFAULT_MAX_SESSIONS_PER_PEER}). */
  maxSessionsPerPeer?: number;
  /** Harness sessions past `maxSessions` (default {@linkcode DEFAULT_HARNESS_RESERVE}). */
  harnessReserve?: number;
  /** A session idle this long may be closed to make room, ms (default {@linkcode EVICTABLE_IDLE_MS}). */
  evictableIdleMs?: number;
}

/** One admitted session's place. */
export interface Seat {
  /** Whether the harness holds it. */
  readonly harness: boolean;
  /** The session was used now: it is not idle. */
  touch(): void;
  /** The session closed; gives the place back (once). */
  release(): void;
}

/** Why a new session is refused: the HTTP status, when to retry and one line. */
export interface Refusal {
  /** 429 past the peer's cap, 503 past the total (or the harness's reserve). */
  status: 429 | 503;
  /** Seconds until a session in the way may be closed to make room. */
  retryAfterSeconds: number;
  /** What happened and what to do, one line. */
  message: string;
}

/** How the refusals name the sessions of one transport. */
export interface SessionWording {
  /** What a session is called: `"sessions"`, `"SSE streams"`. */
  noun: string;
  /** How a client closes one: `"close one with DELETE /mcp"`. */
  closeHint: string;
}

interface Place {
  readonly peer: string | undefined;
  readonly harness: boolean;
  lastSeen: number;
  readonly close: () => Promise<void>;
}

/** The sessions of one transport, counted in total and per peer. */
export class SessionAdmission {
  readonly #maxSessions: number;
  readonly #maxPerPeer: number;
  readonly #reserve: number;
  readonly #evictableIdleMs: number;
  readonly #wording: SessionWording;
  readonly #places = new Set<Place>();
  readonly #perPeer = new Map<string, number>();

  /**
   * Creates empty counts.
   *
   * @param limits The caps.
   * @param wording How refusals name the sessions.
   */
  constructor(limits: SessionLimits, wording: SessionWording) {
    this.#maxSessions = limits.maxSessions ?? DEFAULT_MAX_SESSIONS;
    this.#maxPerPeer = limits.maxSessionsPerPeer ??
      DEFAULT_MAX_SESSIONS_PER_PEER;
    this.#reserve = limits.harnessReserve ?? DEFAULT_HARNESS_RESERVE;
    this.#evictableIdleMs = limits.evictableIdleMs ?? EVICTABLE_IDLE_MS;
    this.#wording = wording;
  }

  /** Sessions admitted and not yet released. */
  get size(): number {
    return this.#places.size;
  }

  /**
   * Admits a new session, closing an idle one to make room when the caps
   * are reached and one idled long enough. The counts change before the
   * first `await`, so concurrent calls never pass a cap together.
   *
   * @param peer The client's address; `undefined` (an in-process caller)
   * counts toward the total cap only.
   * @param harness Whether the request carried the harness token.
   * @param close Closes the session (when a newer one takes its place).
   * @param now The current time.
   * @returns Its seat, or why it is refused.
   * @example
   * ```ts
   * import { SessionAdmission } from "./session_admission.ts";
   *
   * const admission = new SessionAdmission({ maxSessionsPerPeer: 1 }, {
   *   noun: "sessions",
   *   closeHint: "close one with DELETE /mcp",
   * });
   * await admission.admit("127.0.0.1", false, async () => {});
   * const refused = await admission.admit("127.0.0.1", false, async () => {});
   * "status" in refused; // true: 429
   * ```
   */
  async admit(
    peer: string | undefined,
    harness: boolean,
    close: () => Promise<void>,
    now: number = Date.now(),
  ): Promise<Seat | Refusal> {
    const evicted: Place[] = [];
    const { noun, closeHint } = this.#wording;
    if (!harness && peer !== undefined) {
      if ((this.#perPeer.get(peer) ?? 0) >= this.#maxPerPeer) {
        const idlest = this.#idlest((p) => !p.harness && p.peer === peer);
        if (!this.#evictable(idlest, now)) {
          const wait = this.#retryAfter(idlest, now);
          return {
            status: 429,
            retryAfterSeconds: wait,
            message:
              `Too many ${noun} from ${peer}: ${this.#maxPerPeer} are open and active (the cap per peer, MCP_MAX_SESSIONS_PER_PEER); retry in ${wait} s or ${closeHint}`,
          };
        }
        evicted.push(idlest!);
        this.#leave(idlest!);
      }
    }
    const cap = harness ? this.#maxSessions + this.#reserve : this.#maxSessions;
    if (this.#places.size >= cap) {
      // A guest makes room only at another guest's expense.
      const idlest = this.#idlest((p) => harness || !p.harness);
      if (!this.#evictable(idlest, now)) {
        const wait = this.#retryAfter(idlest, now);
        return {
          status: 503,
          retryAfterSeconds: wait,
          message: harness
            ? `Too many ${noun}: the harness's reserve of ${this.#reserve} past ${this.#maxSessions} is in use too; retry in ${wait} s or ${closeHint}`
            : `Too many ${noun}: ${this.#maxSessions} are open and active (MCP_MAX_SESSIONS); retry in ${wait} s or ${closeHint}`,
        };
      }
      evicted.push(idlest!);
      this.#leave(idlest!);
    }
    const place: Place = { peer, harness, lastSeen: now, close };
    this.#places.add(place);
    if (!harness && peer !== undefined) {
      this.#perPeer.set(peer, (this.#perPeer.get(peer) ?? 0) + 1);
    }
    await Promise.all(evicted.map((p) => p.close().catch(() => {})));
    return {
      harness,
      touch: () => {
        place.lastSeen = Date.now();
      },
      release: () => this.#leave(place),
    };
  }

  /**
   * Closes the sessions idle for longer than `idleMs`.
   *
   * @param idleMs Maximum idle time.
   * @param now The current time.
   * @returns How many were closed.
   */
  async expire(idleMs: number, now: number = Date.now()): Promise<number> {
    const idle = [...this.#places].filter((p) => now - p.lastSeen > idleMs);
    await Promise.all(idle.map((p) => p.close()));
    return idle.length;
  }

  #idlest(among: (place: Place) => boolean): Place | undefined {
    let idlest: Place | undefined;
    for (const place of this.#places) {
      if (among(place) && (!idlest || place.lastSeen < idlest.lastSeen)) {
        idlest = place;
      }
    }
    return idlest;
  }

  #evictable(place: Place | undefined, now: number): boolean {
    return place !== undefined && now - place.lastSeen >= this.#evictableIdleMs;
  }

  #retryAfter(place: Place | undefined, now: number): number {
    const wait = place ? place.lastSeen + this.#evictableIdleMs - now : 0;
    return Math.max(1, Math.ceil(wait / 1000));
  }

  #leave(place: Place): void {
    if (!this.#places.delete(place)) return;
    if (place.harness || place.peer === undefined) return;
    const left = (this.#perPeer.get(place.peer) ?? 1) - 1;
    if (left > 0) this.#perPeer.set(place.peer, left);
    else this.#perPeer.delete(place.peer);
  }
}

/**
 * The HTTP answer to a refused session: its status, a JSON-RPC error with
 * the one-line message, and `Retry-After`.
 *
 * @param refusal Why the session is refused.
 * @returns The response.
 */
export function refusalResponse(refusal: Refusal): Response {
  const response = jsonRpcErrorResponse(
    refusal.status,
    -32000,
    refusal.message,
  );
  response.headers.set("retry-after", String(refusal.retryAfterSeconds));
  return response;
}

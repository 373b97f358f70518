/**
 * Legacy SSE sessions (protocol 2024-11-05): one protocol instance per GET
 * `/sse` stream, messages POSTed to `/messages?sessionId=…`.
 *
 * @module
 */
import type { streamSSE } from "hono/streaming";
import type { SessionHost } from "./stdio.ts";
import {
  type Refusal,
  type Seat,
  SessionAdmission,
  type SessionLimits,
} from "./session_admission.ts";
import { SseServerTransport } from "./sse_transport.ts";

/** One open stream and its place in the admission counts. */
interface SseSession {
  transport: SseServerTransport;
  seat: Seat;
}

/** The SSE stream a GET `/sse` opens, as Hono's `streamSSE` hands it over. */
export type SseStream = Parameters<Parameters<typeof streamSSE>[1]>[0];

/**
 * Legacy SSE sessions. A stream lasts as long as its client keeps it open,
 * so streams are closed when their client posts nothing for the session
 * idle time; they are capped in total and per peer, with a reserve for the
 * harness (see `session_admission.ts`): idle streams cannot lock new
 * clients out.
 */
export class SseSessions {
  readonly #host: SessionHost;
  readonly #sessions = new Map<string, SseSession>();
  readonly #admission: SessionAdmission;

  /**
   * Creates an empty session table.
   *
   * @param host The server whose registry the sessions share.
   * @param limits The caps (total, per peer, the harness's reserve, when an idle stream may make room).
   */
  constructor(host: SessionHost, limits: SessionLimits = {}) {
    this.#host = host;
    this.#admission = new SessionAdmission(limits, {
      noun: "SSE streams",
      closeHint: "close an SSE stream",
    });
  }

  /** Number of open sessions. */
  get size(): number {
    return this.#sessions.size;
  }

  /**
   * Takes a place for a new stream before it opens, closing an idle one to
   * make room when it must.
   *
   * @param peer The client's address (`undefined` in process).
   * @param harness Whether the request carried the harness token.
   * @returns The place to open the stream with, or why there is none.
   */
  async admit(
    peer: string | undefined,
    harness: boolean,
  ): Promise<Admit | Refusal> {
    // The stream opens once admitted; eviction closes it through this.
    const opened: { transport?: SseServerTransport } = {};
    const seat = await this.#admission.admit(
      peer,
      harness,
      async () => await opened.transport?.close(),
    );
    if ("status" in seat) return seat;
    return {
      seat,
      bind: (transport) => {
        opened.transport = transport;
      },
    };
  }

  /**
   * Closes streams whose client posted nothing for longer than `idleMs`.
   *
   * @param idleMs Maximum idle time.
   * @param now The current time.
   * @returns How many were closed.
   */
  expire(idleMs: number, now: number = Date.now()): Promise<number> {
    return this.#admission.expire(idleMs, now);
  }

  /**
   * Opens a session on a GET `/sse` stream and waits until it closes.
   *
   * @param stream The SSE stream.
   * @param place What {@linkcode SseSessions.admit} gave the request.
   */
  async open(stream: SseStream, place: Admit): Promise<void> {
    const transport = new SseServerTransport("/messages", stream);
    place.bind(transport);
    this.#sessions.set(transport.sessionId, { transport, seat: place.seat });
    transport.onclose = () => {
      this.#sessions.delete(transport.sessionId);
      place.seat.release();
    };
    try {
      await this.#host.createInstance().connect(transport);
    } catch (error) {
      await transport.close(); // gives the seat back
      throw error;
    }
    await transport.closed;
  }

  /**
   * Delivers a POSTed message to its session.
   *
   * @param sessionId The `sessionId` query parameter.
   * @param body The parsed body.
   * @returns Whether the session exists.
   */
  deliver(sessionId: string, body: unknown): boolean {
    const session = this.#sessions.get(sessionId);
    if (!session) return false;
    session.seat.touch();
    for (const message of Array.isArray(body) ? body : [body]) {
      session.transport.handleMessage(message);
    }
    return true;
  }

  /** Closes every session. */
  async closeAll(): Promise<void> {
    await this.expire(-1, Infinity);
  }
}

/** A place {@linkcode SseSessions.admit} took for a stream not yet open. */
export interface Admit {
  /** The stream's seat in the counts. */
  seat: Seat;
  /** Ties the seat to the stream's transport, so eviction can close it. */
  bind(transport: SseServerTransport): void;
}

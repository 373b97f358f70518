/**
 * Legacy SSE sessions (protocol 2024-11-05): one protocol instance per GET
 * `/sse` stream, messages POSTed to `/messages?sessionId=…`.
 *
 * @module
 */
import type { streamSSE } from "hono/streaming";
import type { SessionHost } from "./run_stdio.ts";
import { DEFAULT_MAX_SESSIONS, EVICTABLE_IDLE_MS } from "./http_sessions.ts";
import { SseServerTransport } from "./sse_transport.ts";

/** One open stream and when its client last posted a message. */
interface SseSession {
  transport: SseServerTransport;
  lastSeen: number;
}

/**
 * Legacy SSE sessions. A stream lasts as long as its client keeps it open,
 * so streams are closed when their client posts nothing for the session
 * idle time, and past the cap the stream idle longest makes room when it
 * has been idle a minute or more: idle streams cannot lock new clients out.
 */
export class SseSessions {
  readonly #host: SessionHost;
  readonly #sessions = new Map<string, SseSession>();
  readonly #maxSessions: number;
  readonly #evictableIdleMs: number;

  /**
   * Creates an empty session table.
   *
   * @param host The server whose registry the sessions share.
   * @param maxSessions The most streams open at once.
   * @param evictableIdleMs A stream idle this long may be closed to make room, ms.
   */
  constructor(
    host: SessionHost,
    maxSessions: number = DEFAULT_MAX_SESSIONS,
    evictableIdleMs: number = EVICTABLE_IDLE_MS,
  ) {
    this.#host = host;
    this.#maxSessions = maxSessions;
    this.#evictableIdleMs = evictableIdleMs;
  }

  /** Number of open sessions. */
  get size(): number {
    return this.#sessions.size;
  }

  /**
   * Makes room for one more stream under the cap: closes the stream idle
   * the longest when it has been idle long enough to be evicted.
   *
   * @returns Whether another stream may open.
   */
  async makeRoom(): Promise<boolean> {
    if (this.#sessions.size < this.#maxSessions) return true;
    let oldest: SseSession | undefined;
    for (const session of this.#sessions.values()) {
      if (!oldest || session.lastSeen < oldest.lastSeen) oldest = session;
    }
    if (!oldest || Date.now() - oldest.lastSeen < this.#evictableIdleMs) {
      return false;
    }
    await oldest.transport.close();
    return this.#sessions.size < this.#maxSessions;
  }

  /**
   * Closes streams whose client posted nothing for longer than `idleMs`.
   *
   * @param idleMs Maximum idle time.
   * @param now The current time.
   * @returns How many were closed.
   */
  async expire(idleMs: number, now: number = Date.now()): Promise<number> {
    const idle = [...this.#sessions.values()].filter((session) =>
      now - session.lastSeen > idleMs
    );
    await Promise.all(idle.map((session) => session.transport.close()));
    return idle.length;
  }

  /**
   * Opens a session on a GET `/sse` stream and waits until it closes.
   *
   * @param stream The SSE stream.
   */
  async open(
    stream: Parameters<Parameters<typeof streamSSE>[1]>[0],
  ): Promise<void> {
    const transport = new SseServerTransport("/messages", stream);
    this.#sessions.set(transport.sessionId, {
      transport,
      lastSeen: Date.now(),
    });
    transport.onclose = () => this.#sessions.delete(transport.sessionId);
    await this.#host.createInstance().connect(transport);
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
    session.lastSeen = Date.now();
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

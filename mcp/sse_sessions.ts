/**
 * Legacy SSE sessions (protocol 2024-11-05): one protocol instance per GET
 * `/sse` stream, messages POSTed to `/messages?sessionId=…`.
 *
 * @module
 */
import type { streamSSE } from "hono/streaming";
import type { SessionHost } from "./run_stdio.ts";
import { DEFAULT_MAX_SESSIONS } from "./http_sessions.ts";
import { SseServerTransport } from "./sse_transport.ts";

/** Legacy SSE sessions. */
export class SseSessions {
  readonly #host: SessionHost;
  readonly #sessions = new Map<string, SseServerTransport>();
  readonly #maxSessions: number;

  /**
   * Creates an empty session table.
   *
   * @param host The server whose registry the sessions share.
   */
  constructor(host: SessionHost, maxSessions: number = DEFAULT_MAX_SESSIONS) {
    this.#host = host;
    this.#maxSessions = maxSessions;
  }

  /** Number of open sessions. */
  get size(): number {
    return this.#sessions.size;
  }

  /** Whether another stream may open (SSE sessions last as long as their stream, so the cap refuses). */
  get full(): boolean {
    return this.#sessions.size >= this.#maxSessions;
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
    this.#sessions.set(transport.sessionId, transport);
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
    const transport = this.#sessions.get(sessionId);
    if (!transport) return false;
    for (const message of Array.isArray(body) ? body : [body]) {
      transport.handleMessage(message);
    }
    return true;
  }

  /** Closes every session. */
  async closeAll(): Promise<void> {
    await Promise.all(
      [...this.#sessions.values()].map((transport) => transport.close()),
    );
  }
}

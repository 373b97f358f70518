/**
 * Streamable HTTP's legacy (2025-era) sessions: one protocol instance per
 * `Mcp-Session-Id`, idle expiry, a cap with eviction of the idlest, and the
 * limits every session shares with the legacy SSE ones.
 *
 * @module
 */
import {
  isInitializeRequest,
  WebStandardStreamableHTTPServerTransport,
} from "./_sdk.ts";
import type { SessionHost } from "./run_stdio.ts";
import {
  inputError,
  jsonRpcErrorResponse,
  type JsonRpcInputError,
  readJsonRpcBody,
} from "./_jsonrpc.ts";
import { SessionEventStore } from "./event_store.ts";

/** How long a client waits before resuming a closed SSE stream, ms. */
const SSE_RETRY_MS = 1000;

/**
 * Default cap on legacy sessions open at once (`MCP_MAX_SESSIONS`): a
 * session holds a protocol instance and what the client sent (a few KiB), so
 * 256 fit a small container many times over.
 */
export const DEFAULT_MAX_SESSIONS = 256;

/** A session idle this long may be closed to make room for a new one, ms. */
export const EVICTABLE_IDLE_MS = 60_000;

/** The most bytes of `clientInfo` (and of `capabilities`) an `initialize` may carry. */
export const MAX_CLIENT_INFO_BYTES = 4 * 1024;

/**
 * The error for an `initialize` whose `clientInfo` or `capabilities` are
 * larger than a session keeps ({@linkcode MAX_CLIENT_INFO_BYTES}), or
 * `undefined` when they fit.
 *
 * @param body A parsed POST body: one message or a batch.
 * @returns The JSON-RPC error to answer with, or `undefined`.
 */
export function oversizedClientInfo(
  body: unknown,
): JsonRpcInputError | undefined {
  for (const message of Array.isArray(body) ? body : [body]) {
    if (!isInitializeRequest(message)) continue;
    for (const field of ["clientInfo", "capabilities"] as const) {
      const size = JSON.stringify(message.params[field] ?? null).length;
      if (size > MAX_CLIENT_INFO_BYTES) {
        return inputError(
          -32602,
          `Invalid params: "${field}" is ${size} bytes; at most ${MAX_CLIENT_INFO_BYTES} are kept per session`,
          message,
        );
      }
    }
  }
  return undefined;
}

/** Streamable HTTP sessions, each with its own protocol instance. */
export class StreamableHttpSessions {
  readonly #host: SessionHost;
  readonly #resumable: boolean;
  readonly #maxSessions: number;
  readonly #evictableIdleMs: number;
  readonly #sessions = new Map<
    string,
    { transport: WebStandardStreamableHTTPServerTransport; lastSeen: number }
  >();

  /**
   * Creates an empty session table.
   *
   * @param host The server whose registry the sessions share.
   * @param resumable Give each session an event store and a retry interval,
   * so a client on protocol 2025-11-25 can resume a broken stream (or one a
   * tool closed with `closeSSEStream`) with `Last-Event-ID`. Opt-in, as in the
   * SDK: it costs every streamed answer a priming event and a stored copy.
   */
  constructor(
    host: SessionHost,
    resumable = false,
    maxSessions: number = DEFAULT_MAX_SESSIONS,
    evictableIdleMs: number = EVICTABLE_IDLE_MS,
  ) {
    this.#host = host;
    this.#resumable = resumable;
    this.#maxSessions = maxSessions;
    this.#evictableIdleMs = evictableIdleMs;
  }

  /** Number of open sessions. */
  get size(): number {
    return this.#sessions.size;
  }

  /**
   * Handles one legacy request to `/mcp`: routes it to its session, or opens
   * a session for an `initialize` request without one.
   *
   * @param request The HTTP request.
   * @param parsed The POST body, when the caller already read it.
   * @returns The response.
   */
  async handle(request: Request, parsed?: unknown): Promise<Response> {
    const id = request.headers.get("mcp-session-id");
    const session = id ? this.#sessions.get(id) : undefined;
    if (id && !session) {
      return jsonRpcErrorResponse(404, -32001, `Session "${id}" not found`);
    }
    if (session) session.lastSeen = Date.now();
    if (request.method !== "POST") {
      if (session) return session.transport.handleRequest(request);
      return jsonRpcErrorResponse(
        400,
        -32000,
        "Bad Request: Mcp-Session-Id header is required",
      );
    }
    // Bodies are read here, not by the SDK: it answers JSON that is not
    // JSON-RPC with -32700, where JSON-RPC 2.0 says -32600.
    const body = parsed ?? await readJsonRpcBody(request);
    if (body instanceof Response) return body;
    if (session) {
      return session.transport.handleRequest(request, { parsedBody: body });
    }
    const initializes = Array.isArray(body)
      ? body.some(isInitializeRequest)
      : isInitializeRequest(body);
    if (!initializes) {
      return jsonRpcErrorResponse(
        400,
        -32000,
        "Bad Request: no valid session ID provided",
      );
    }
    const oversized = oversizedClientInfo(body);
    if (oversized) return Response.json(oversized, { status: 400 });
    if (!(await this.#makeRoom())) {
      return jsonRpcErrorResponse(
        503,
        -32000,
        `Too many sessions: ${this.#maxSessions} are open and active; retry later or close one with DELETE /mcp`,
      );
    }
    const server = this.#host.createInstance();
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      ...(this.#resumable
        ? { eventStore: new SessionEventStore(), retryInterval: SSE_RETRY_MS }
        : {}),
      onsessioninitialized: (sessionId) => {
        this.#sessions.set(sessionId, { transport, lastSeen: Date.now() });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) this.#sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    const response = await transport.handleRequest(request, {
      parsedBody: body,
    });
    // The SDK registers the session before `initialize` is answered. If it
    // failed (an initialize hook threw), the session can never be used (a
    // second initialize is refused), so release it once the answer is out
    // instead of holding it until it idles out.
    const release = () => {
      if (!server.server.getClientVersion()) {
        transport.close().catch(() => {});
      }
    };
    if (!response.body) {
      release();
      return response;
    }
    return new Response(
      response.body.pipeThrough(new TransformStream({ flush: release })),
      response,
    );
  }

  /**
   * Makes room for one more session under the cap: closes the session idle
   * the longest, when it has been idle for {@linkcode EVICTABLE_IDLE_MS} or
   * more; otherwise there is no room (the new one is refused, so a flood of
   * initializes cannot push out sessions in use).
   */
  async #makeRoom(): Promise<boolean> {
    if (this.#sessions.size < this.#maxSessions) return true;
    let oldest:
      | { transport: { close(): Promise<void> }; lastSeen: number }
      | undefined;
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
   * Closes sessions idle for longer than `idleMs`.
   *
   * @param idleMs Maximum idle time.
   * @param now The current time.
   * @returns How many sessions were closed.
   */
  async expire(idleMs: number, now: number = Date.now()): Promise<number> {
    const idle = [...this.#sessions.values()].filter((session) =>
      now - session.lastSeen > idleMs
    );
    await Promise.all(idle.map((session) => session.transport.close()));
    return idle.length;
  }

  /** Closes every session. */
  async closeAll(): Promise<void> {
    await this.expire(-1, Infinity);
  }
}

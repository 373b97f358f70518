/**
 * Streamable HTTP's legacy (2025-era) sessions: one protocol instance per
 * `Mcp-Session-Id`, idle expiry, and caps in total and per peer with a
 * reserve for the harness (`session_admission.ts`, shared with the legacy
 * SSE sessions).
 *
 * @module
 */
import {
  isInitializeRequest,
  WebStandardStreamableHTTPServerTransport,
} from "../_sdk.ts";
import type { SessionHost } from "./stdio.ts";
import {
  inputError,
  jsonRpcErrorResponse,
  type JsonRpcInputError,
  readJsonRpcBody,
} from "./_jsonrpc.ts";
import { SessionEventStore } from "./event_store.ts";
import { showsHarnessToken } from "./http_guards.ts";
import {
  refusalResponse,
  type Seat,
  SessionAdmission,
  type SessionLimits,
} from "./session_admission.ts";

/** How long a client waits before resuming a closed SSE stream, ms. */
const SSE_RETRY_MS = 1000;

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
  readonly #admission: SessionAdmission;
  readonly #harnessToken: string | undefined;
  readonly #sessions = new Map<
    string,
    { transport: WebStandardStreamableHTTPServerTransport; seat: Seat }
  >();

  /**
   * Creates an empty session table.
   *
   * @param host The server whose registry the sessions share.
   * @param resumable Give each session an event store and a retry interval,
   * so a client on protocol 2025-11-25 can resume a broken stream (or one a
   * tool closed with `closeSSEStream`) with `Last-Event-ID`. Opt-in, as in the
   * SDK: it costs every streamed answer a priming event and a stored copy.
   * @param limits The caps (total, per peer, the harness's reserve, when an idle session may make room).
   * @param harnessToken `MCP_HARNESS_TOKEN`: a request that shows it is let in past the caps.
   */
  constructor(
    host: SessionHost,
    resumable = false,
    limits: SessionLimits = {},
    harnessToken?: string,
  ) {
    this.#host = host;
    this.#resumable = resumable;
    this.#admission = new SessionAdmission(limits, {
      noun: "sessions",
      closeHint: "close one with DELETE /mcp",
    });
    this.#harnessToken = harnessToken;
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
   * @param peer The client's address (`undefined` in process).
   * @returns The response.
   */
  async handle(
    request: Request,
    parsed?: unknown,
    peer?: string,
  ): Promise<Response> {
    const id = request.headers.get("mcp-session-id");
    const session = id ? this.#sessions.get(id) : undefined;
    if (id && !session) {
      return jsonRpcErrorResponse(404, -32001, `Session "${id}" not found`);
    }
    session?.seat.touch();
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
    // The transport is made once admitted; eviction closes it through this.
    const opened: { transport?: WebStandardStreamableHTTPServerTransport } = {};
    const seat = await this.#admission.admit(
      peer,
      showsHarnessToken(request, body, this.#harnessToken),
      async () => await opened.transport?.close(),
    );
    if ("status" in seat) return refusalResponse(seat);
    const server = this.#host.createInstance();
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      ...(this.#resumable
        ? { eventStore: new SessionEventStore(), retryInterval: SSE_RETRY_MS }
        : {}),
      onsessioninitialized: (sessionId) => {
        this.#sessions.set(sessionId, { transport, seat });
      },
    });
    opened.transport = transport;
    transport.onclose = () => {
      if (transport.sessionId) this.#sessions.delete(transport.sessionId);
      seat.release();
    };
    let response: Response;
    try {
      await server.connect(transport);
      response = await transport.handleRequest(request, { parsedBody: body });
    } catch (error) {
      seat.release();
      await transport.close().catch(() => {});
      throw error;
    }
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
   * Closes sessions idle for longer than `idleMs`.
   *
   * @param idleMs Maximum idle time.
   * @param now The current time.
   * @returns How many sessions were closed.
   */
  expire(idleMs: number, now: number = Date.now()): Promise<number> {
    return this.#admission.expire(idleMs, now);
  }

  /** Closes every session. */
  async closeAll(): Promise<void> {
    await this.expire(-1, Infinity);
  }
}

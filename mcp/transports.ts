/**
 * The HTTP runners: Streamable HTTP (`/mcp`, both protocol eras) and legacy
 * SSE (`/sse` + `/messages`), with per-session protocol instances, idle
 * expiry, CORS and DNS-rebinding protection. `run()` loads this module only
 * for those transports (stdio is `run_stdio.ts`).
 *
 * @module
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import { streamSSE } from "hono/streaming";
import {
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  WebStandardStreamableHTTPServerTransport,
} from "./_sdk.ts";
import type { RunningTransport, SessionHost } from "./run_stdio.ts";
import { inputError, PARSE_ERROR, validateMessage } from "./_jsonrpc.ts";
import {
  browserGuard,
  devGuard,
  dnsRebindingGuard,
  isLocalHost,
} from "./http_guards.ts";
import { DevClient, devRoutes, type DevSource } from "./dev.ts";
import { SessionEventStore } from "./event_store.ts";
import { serveResilient } from "../_serve.ts";
import { SseServerTransport } from "./sse_transport.ts";

/** Options of {@linkcode startHttp}. */
export interface HttpOptions {
  /** `"http"` (Streamable HTTP) or `"sse"` (legacy SSE). */
  transport: "http" | "sse";
  /** Port; 0 picks a free one. */
  port: number;
  /** Interface to bind. */
  host: string;
  /** Sessions without a request for this long are closed. */
  sessionIdleMs: number;
  /** The most sessions open at once (see {@linkcode SessionLimits}). */
  maxSessions?: number;
  /** `MCP_DEV_TOKEN`: when set, `/dev` requires `Authorization: Bearer <token>`. */
  devToken?: string;
  /** Keep each session's recent events so broken streams can resume (see {@linkcode StreamableHttpSessions}). */
  resumable?: boolean;
  /** Refuse every request from a browser page (see {@linkcode RunOptions.refuseBrowsers}). */
  refuseBrowsers?: boolean;
  /** Called with the bound address once listening. */
  onListen?: (addr: Deno.NetAddr) => void;
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
      return jsonRpcError(404, -32001, `Session "${id}" not found`);
    }
    if (session) session.lastSeen = Date.now();
    if (request.method !== "POST") {
      if (session) return session.transport.handleRequest(request);
      return jsonRpcError(
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
      return jsonRpcError(
        400,
        -32000,
        "Bad Request: no valid session ID provided",
      );
    }
    const oversized = oversizedClientInfo(body);
    if (oversized) return Response.json(oversized, { status: 400 });
    if (!(await this.#makeRoom())) {
      return jsonRpcError(
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

/**
 * `/mcp` for both eras: a request with a session, a GET or DELETE, or a body
 * the SDK classifies as 2025-era goes to the legacy sessions; everything else
 * to the SDK's stateless modern handler, one protocol instance per request.
 */
export class McpEndpoint {
  /** The legacy sessions. */
  readonly sessions: StreamableHttpSessions;
  readonly #modern: ReturnType<typeof createMcpHandler>;
  readonly #unsubscribe: () => void;

  /**
   * Creates the endpoint.
   *
   * @param host The server.
   * @param sessions The legacy session table.
   */
  constructor(host: SessionHost, sessions: StreamableHttpSessions) {
    this.sessions = sessions;
    this.#modern = createMcpHandler(({ era }) => host.createInstance(era), {
      legacy: "reject",
      onerror: (error) => {
        if (!/^Rejected inbound request/.test(error.message)) {
          console.error(`MCP: ${error.message}`);
        }
      },
    });
    const notify = this.#modern.notify;
    this.#unsubscribe = host.onListChanged((list) =>
      list === "tools"
        ? notify.toolsChanged()
        : list === "resources"
        ? notify.resourcesChanged()
        : notify.promptsChanged()
    );
  }

  /**
   * Answers one request to `/mcp`.
   *
   * @param request The HTTP request.
   * @returns The response.
   */
  async handle(request: Request): Promise<Response> {
    if (request.method !== "POST" || request.headers.has("mcp-session-id")) {
      return this.sessions.handle(request);
    }
    const body = await readJsonRpcBody(request);
    if (body instanceof Response) return body;
    if (await isLegacyRequest(request, body)) {
      return this.sessions.handle(request, body);
    }
    return this.#modern.fetch(request, { parsedBody: body });
  }

  /** Closes legacy sessions and running modern exchanges. */
  async close(): Promise<void> {
    this.#unsubscribe();
    await Promise.all([this.sessions.closeAll(), this.#modern.close()]);
  }
}

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
 */
function oversizedClientInfo(body: unknown) {
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

/** Largest body accepted on `/mcp` and `/messages` (the SDK transport's default). */
export const MAX_BODY_BYTES: number = 4 * 1024 * 1024;

/** Parses a POST body as JSON-RPC: one message or a batch, else the error response. */
async function readJsonRpcBody(request: Request): Promise<unknown> {
  let value: unknown;
  try {
    value = JSON.parse(await request.text());
  } catch {
    return jsonRpcError(400, PARSE_ERROR, "Parse error: invalid JSON");
  }
  const messages = Array.isArray(value) && value.length > 0 ? value : [value];
  for (const message of messages) {
    const read = validateMessage(message);
    if ("error" in read) {
      return Response.json(read.error, { status: 400 });
    }
  }
  return value;
}

function jsonRpcError(status: number, code: number, message: string): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, {
    status,
  });
}

/** Options of {@linkcode createHttpApp}. */
export interface HttpAppOptions {
  /** Whether Streamable HTTP sessions keep events for resuming. */
  resumable?: boolean;
  /** The most legacy sessions open at once. */
  maxSessions?: number;
  /** When set, `/dev` requires `Authorization: Bearer <token>`. */
  devToken?: string;
  /** A session idle this long may be closed to make room under the cap, ms (default {@linkcode EVICTABLE_IDLE_MS}). */
  evictableIdleMs?: number;
  /** Refuse every request that carries an `Origin` header (a browser page). */
  refuseBrowsers?: boolean;
}

/** The HTTP app and what it owns. */
export interface HttpApp {
  /** The Hono app: transport routes plus `/dev`. */
  app: Hono;
  /** Streamable HTTP sessions (empty for SSE). */
  sessions: StreamableHttpSessions;
  /** Legacy SSE sessions (empty for Streamable HTTP). */
  sseSessions: SseSessions;
  /** Closes every session and the dev client. */
  close(): Promise<void>;
  /** Refuses new requests (503, a JSON-RPC error) while running ones finish. */
  drain(): void;
}

/**
 * Builds the Hono app for `"http"` or `"sse"`, without listening; tests drive
 * it with `app.request()`.
 *
 * @param host The server.
 * @param transport Which transport to serve.
 * @param boundHost The interface the server listens on (for the DNS-rebinding guard).
 * @param options Resumable streams, the session cap, the dev token.
 * @returns The app and its session tables.
 */
export function createHttpApp(
  host: SessionHost,
  transport: "http" | "sse",
  boundHost: string,
  options: HttpAppOptions = {},
): HttpApp {
  const sessions = new StreamableHttpSessions(
    host,
    options.resumable,
    options.maxSessions,
    options.evictableIdleMs,
  );
  const endpoint = new McpEndpoint(host, sessions);
  const sseSessions = new SseSessions(host, options.maxSessions);
  let draining = false;
  const source: DevSource = {
    info: host.info,
    transport,
    get hubs() {
      return host.hubs;
    },
    createInstance: () => host.createInstance(),
  };
  const devClient = new DevClient(source);
  const app = new Hono();
  app.use("*", dnsRebindingGuard(boundHost));
  if (options.refuseBrowsers) app.use("*", browserGuard());
  app.use("/dev", devGuard(options.devToken));
  app.use("/dev/*", devGuard(options.devToken));
  app.use("*", async (c, next) => {
    if (draining && c.req.method === "POST") {
      return jsonRpcError(503, -32000, "The server is shutting down");
    }
    await next();
  });
  app.use(
    "*",
    cors({
      // `/dev` answers loopback pages only (devGuard refused the rest).
      origin: (origin, c) =>
        c.req.path.startsWith("/dev") ? origin || null : "*",
      allowMethods: ["GET", "POST", "DELETE", "OPTIONS"],
      allowHeaders: [
        "Content-Type",
        "Accept",
        "Authorization",
        "Mcp-Session-Id",
        "Mcp-Protocol-Version",
        "Mcp-Method",
        "Mcp-Name",
        "Last-Event-ID",
      ],
      exposeHeaders: ["Mcp-Session-Id", "Mcp-Protocol-Version"],
    }),
  );
  const limit = bodyLimit({
    maxSize: MAX_BODY_BYTES,
    onError: () =>
      jsonRpcError(
        413,
        -32000,
        `Payload Too Large: the body exceeds ${MAX_BODY_BYTES} bytes`,
      ),
  });
  if (transport === "http") {
    app.all("/mcp", limit, (c) => endpoint.handle(c.req.raw));
  } else {
    app.get("/sse", (c) => {
      if (sseSessions.full) {
        return jsonRpcError(
          503,
          -32000,
          "Too many sessions: retry later or close an SSE stream",
        );
      }
      return streamSSE(c, (stream) => sseSessions.open(stream));
    });
    app.post("/messages", limit, async (c) => {
      const sessionId = c.req.query("sessionId") ?? "";
      // The same JSON-RPC errors as Streamable HTTP, for the same input.
      const body = await readJsonRpcBody(c.req.raw);
      if (body instanceof Response) return body;
      const oversized = oversizedClientInfo(body);
      if (oversized) return Response.json(oversized, { status: 400 });
      if (!sseSessions.deliver(sessionId, body)) {
        return jsonRpcError(404, -32001, `Session "${sessionId}" not found`);
      }
      return c.text("Accepted", 202);
    });
  }
  app.route("/", devRoutes(source, devClient));
  app.onError((error, c) => c.json({ error: error.message }, 500));
  return {
    app,
    sessions,
    sseSessions,
    close: async () => {
      await Promise.all([
        endpoint.close(),
        sseSessions.closeAll(),
        devClient.close(),
      ]);
    },
    drain: () => {
      draining = true;
    },
  };
}

/**
 * Serves the host over Streamable HTTP or legacy SSE on `Deno.serve`.
 *
 * @param host The server.
 * @param options Transport, address and session expiry.
 * @returns The running transport.
 */
export function startHttp(
  host: SessionHost,
  options: HttpOptions,
): RunningTransport {
  const http = createHttpApp(host, options.transport, options.host, {
    resumable: options.resumable,
    maxSessions: options.maxSessions,
    devToken: options.devToken,
    refuseBrowsers: options.refuseBrowsers,
  });
  if (!isLocalHost(options.host) && !options.devToken) {
    console.error(
      `Warning: /dev is served on ${options.host} without MCP_DEV_TOKEN: anyone who reaches the port can list and call every tool, hub tools included`,
    );
  }
  const server = serveResilient({
    port: options.port,
    hostname: options.host,
    onListen: (addr) => {
      if (options.onListen) options.onListen(addr);
      else {console.error(
          `MCP server "${host.info.name}" (${options.transport}) on http://${addr.hostname}:${addr.port}`,
        );}
    },
    log: (message) => console.error(message),
  }, http.app.fetch);
  const sweep = setInterval(() => {
    http.sessions.expire(options.sessionIdleMs).catch((error) =>
      console.error("Session expiry failed:", error)
    );
  }, Math.max(1_000, Math.min(options.sessionIdleMs, 60_000)));
  Deno.unrefTimer(sweep);
  let closing: Promise<void> | undefined;
  return {
    finished: server.finished,
    sessionCount: () => http.sessions.size + http.sseSessions.size,
    drain: () => http.drain(),
    close: () =>
      closing ??= (async () => {
        clearInterval(sweep);
        await http.close();
        await server.shutdown();
      })(),
  };
}

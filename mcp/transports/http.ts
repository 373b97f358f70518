/**
 * The HTTP runners: Streamable HTTP (`/mcp`, both protocol eras) and legacy
 * SSE (`/sse` + `/messages`) as one Hono app with CORS, DNS-rebinding and
 * browser guards, body limits, draining and `/dev`; the session tables are
 * `http_sessions.ts` and `sse_sessions.ts`, `/mcp` is `mcp_endpoint.ts`.
 * `run()` loads this module only for those transports (stdio is
 * `stdio.ts`).
 *
 * @module
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import { streamSSE } from "hono/streaming";
import type { RunningTransport, SessionHost } from "./stdio.ts";
import { jsonRpcErrorResponse, readJsonRpcBody } from "./_jsonrpc.ts";
import {
  browserGuard,
  devGuard,
  dnsRebindingGuard,
  isLocalHost,
  originGuard,
  peerAddress,
  showsHarnessToken,
} from "./http_guards.ts";
import { refusalResponse, type SessionLimits } from "./session_admission.ts";
import { DevClient, devRoutes, type DevSource } from "./dev.ts";
import { serveResilient } from "../../_serve.ts";
import {
  oversizedClientInfo,
  StreamableHttpSessions,
} from "./http_sessions.ts";
import { McpEndpoint } from "./mcp_endpoint.ts";
import { SseSessions } from "./sse_sessions.ts";

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
  /** The most sessions open at once (see {@linkcode StreamableHttpSessions}). */
  maxSessions?: number;
  /** The most sessions open at once from one peer address. */
  maxSessionsPerPeer?: number;
  /** Sessions the harness may open past `maxSessions`. */
  harnessReserve?: number;
  /** `MCP_HARNESS_TOKEN`: a session opened with it is let in past the caps. */
  harnessToken?: string;
  /** `MCP_DEV_TOKEN`: when set, `/dev` requires `Authorization: Bearer <token>`. */
  devToken?: string;
  /** Keep each session's recent events so broken streams can resume (see {@linkcode StreamableHttpSessions}). */
  resumable?: boolean;
  /** Refuse every request from a browser page (`run()`'s `refuseBrowsers`). */
  refuseBrowsers?: boolean;
  /** Browser origins served besides the server's own pages (`run()`'s `allowedOrigins`). */
  allowedOrigins?: readonly string[];
  /** Called with the bound address once listening. */
  onListen?: (addr: Deno.NetAddr) => void;
}

/** Largest body accepted on `/mcp` and `/messages` (the SDK transport's default). */
export const MAX_BODY_BYTES: number = 4 * 1024 * 1024;

/**
 * Options of {@linkcode createHttpApp}; the session caps (total, per peer,
 * the harness's reserve, `evictableIdleMs`) are `session_admission.ts`'s.
 */
export interface HttpAppOptions extends SessionLimits {
  /** Whether Streamable HTTP sessions keep events for resuming. */
  resumable?: boolean;
  /** When set, `/dev` requires `Authorization: Bearer <token>`. */
  devToken?: string;
  /** `MCP_HARNESS_TOKEN`: a session opened with it is let in past the caps. */
  harnessToken?: string;
  /** Refuse every request that carries an `Origin` header (a browser page). */
  refuseBrowsers?: boolean;
  /**
   * Browser origins served (with CORS headers naming them) besides the
   * server's own pages; any other page gets 403 (default none).
   */
  allowedOrigins?: readonly string[];
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
  const limits: SessionLimits = {
    maxSessions: options.maxSessions,
    maxSessionsPerPeer: options.maxSessionsPerPeer,
    harnessReserve: options.harnessReserve,
    evictableIdleMs: options.evictableIdleMs,
  };
  const sessions = new StreamableHttpSessions(
    host,
    options.resumable,
    limits,
    options.harnessToken,
  );
  const endpoint = new McpEndpoint(host, sessions);
  const sseSessions = new SseSessions(host, limits);
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
  const allowedOrigins = new Set(options.allowedOrigins ?? []);
  app.use("*", dnsRebindingGuard(boundHost));
  if (options.refuseBrowsers) app.use("*", browserGuard());
  app.use("*", originGuard(allowedOrigins));
  app.use("/dev", devGuard(options.devToken));
  app.use("/dev/*", devGuard(options.devToken));
  app.use("*", async (c, next) => {
    if (draining && c.req.method === "POST") {
      return jsonRpcErrorResponse(503, -32000, "The server is shutting down");
    }
    await next();
  });
  app.use(
    "*",
    cors({
      // Only listed origins get CORS headers (originGuard refused other
      // pages); the server's own pages need none.
      origin: (origin) => allowedOrigins.has(origin) ? origin : null,
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
      jsonRpcErrorResponse(
        413,
        -32000,
        `Payload Too Large: the body exceeds ${MAX_BODY_BYTES} bytes`,
      ),
  });
  if (transport === "http") {
    app.all(
      "/mcp",
      limit,
      (c) => endpoint.handle(c.req.raw, peerAddress(c.env)),
    );
  } else {
    app.get("/sse", async (c) => {
      // The GET has no body: the harness shows its token in Authorization.
      const place = await sseSessions.admit(
        peerAddress(c.env),
        showsHarnessToken(c.req.raw, undefined, options.harnessToken),
      );
      if ("status" in place) return refusalResponse(place);
      return streamSSE(c, (stream) => sseSessions.open(stream, place));
    });
    app.post("/messages", limit, async (c) => {
      const sessionId = c.req.query("sessionId") ?? "";
      // The same JSON-RPC errors as Streamable HTTP, for the same input.
      const body = await readJsonRpcBody(c.req.raw);
      if (body instanceof Response) return body;
      const oversized = oversizedClientInfo(body);
      if (oversized) return Response.json(oversized, { status: 400 });
      if (!sseSessions.deliver(sessionId, body)) {
        return jsonRpcErrorResponse(
          404,
          -32001,
          `Session "${sessionId}" not found`,
        );
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
    maxSessionsPerPeer: options.maxSessionsPerPeer,
    harnessReserve: options.harnessReserve,
    harnessToken: options.harnessToken,
    devToken: options.devToken,
    refuseBrowsers: options.refuseBrowsers,
    allowedOrigins: options.allowedOrigins,
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
    Promise.all([
      http.sessions.expire(options.sessionIdleMs),
      http.sseSessions.expire(options.sessionIdleMs),
    ]).catch((error) => console.error("Session expiry failed:", error));
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

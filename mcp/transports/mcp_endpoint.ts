/**
 * The `/mcp` endpoint for both protocol eras: legacy requests go to the
 * session table, modern ones to the SDK's stateless handler.
 *
 * @module
 */
import { createMcpHandler, isLegacyRequest } from "../_sdk.ts";
import type { SessionHost } from "./stdio.ts";
import { readJsonRpcBody } from "./_jsonrpc.ts";
import type { StreamableHttpSessions } from "./http_sessions.ts";

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
   * @param peer The client's address (`undefined` in process), for the session caps.
   * @returns The response.
   */
  async handle(request: Request, peer?: string): Promise<Response> {
    if (request.method !== "POST" || request.headers.has("mcp-session-id")) {
      return this.sessions.handle(request, undefined, peer);
    }
    const body = await readJsonRpcBody(request);
    if (body instanceof Response) return body;
    if (await isLegacyRequest(request, body)) {
      return this.sessions.handle(request, body, peer);
    }
    return this.#modern.fetch(request, { parsedBody: body });
  }

  /** Closes legacy sessions and running modern exchanges. */
  async close(): Promise<void> {
    this.#unsubscribe();
    await Promise.all([this.sessions.closeAll(), this.#modern.close()]);
  }
}

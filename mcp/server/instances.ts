/**
 * The protocol instances serving one `MCPServer`'s registry: each is built
 * over that registry, gets the initialize hooks in front of its requests,
 * hears of list changes while it is connected, and counts towards the
 * SIGTERM drain until it closes.
 *
 * @module
 */
import {
  type Implementation,
  McpServer,
  type McpServerOptions,
  type ProtocolEra,
  type Server,
  type ServerContext,
} from "../_sdk.ts";
import {
  guardRequestHandlers,
  inFlightRequests,
  shareRegistry,
} from "../_sdk_internals.ts";
import { initializeContext, type InitializeHooks } from "./initialize.ts";

/** The lists a server announces changes of. */
export type ListName = "tools" | "resources" | "prompts";

/** The open protocol instances of one server, with the era each serves. */
export class ProtocolInstances {
  readonly #instances = new Map<Server, ProtocolEra>();
  readonly #hooks: InitializeHooks;
  readonly #listeners = new Set<(list: ListName) => void>();

  /**
   * Creates an empty set.
   *
   * @param hooks The server's initialize hooks, run before an instance's first request.
   */
  constructor(hooks: InitializeHooks) {
    this.#hooks = hooks;
  }

  /**
   * A new instance whose tools, resources and prompts are `owner`'s (later
   * ones included), adopted.
   *
   * @param owner The server whose registry it serves.
   * @param info Name and version for the handshake.
   * @param options The SDK's options; the capabilities are `owner`'s.
   * @param era The era it serves.
   * @returns An SDK `McpServer`, ready to `connect()`.
   */
  create(
    owner: McpServer,
    info: Implementation,
    options: McpServerOptions,
    era: ProtocolEra,
  ): McpServer {
    const instance = new McpServer(info, {
      ...options,
      capabilities: owner.server.getCapabilities(),
    });
    shareRegistry(owner, instance);
    this.adopt(instance.server, era);
    return instance;
  }

  /**
   * Runs the initialize hooks in front of every request but
   * `server/discover`, and tracks the instance until it closes (`main`, the
   * server's own instance, for good).
   *
   * @param server The instance's protocol server.
   * @param era The era it serves.
   * @param main Whether it is the server's own instance, never dropped.
   */
  adopt(server: Server, era: ProtocolEra, main = false): void {
    guardRequestHandlers(
      server,
      (method) => method !== "server/discover",
      (request, ctx) =>
        this.#hooks.done ? undefined : this.#hooks.run(
          initializeContext(
            request as Parameters<typeof initializeContext>[0],
            ctx as ServerContext,
          ),
        ),
    );
    this.#instances.set(server, era);
    if (!main) {
      const previous = server.onclose;
      server.onclose = () => {
        previous?.();
        this.#instances.delete(server);
      };
    }
  }

  /**
   * Sends a list-changed notification to every connected instance that may
   * hear one. Legacy sessions still inside `initialize` (no client version
   * yet) are skipped: notifications may only follow the handshake, and they
   * list afterwards anyway. A modern stdio connection's instance routes the
   * notification onto its subscriptions; per-request HTTP instances are
   * reached through the server's list-changed listeners instead.
   *
   * @param send Sends the notification on one instance.
   */
  broadcast(send: (server: Server) => Promise<void>): void {
    for (const [server, era] of this.#instances) {
      if (
        !server.transport || (era === "legacy" && !server.getClientVersion())
      ) continue;
      send(server).catch((error) =>
        console.error("Cannot send list-changed notification:", error)
      );
    }
  }

  /**
   * Tells every instance that may hear it (see
   * {@linkcode ProtocolInstances.broadcast}) and every listener that a list
   * changed.
   *
   * @param list The list that changed.
   * @param send Sends the notification on one instance.
   */
  changed(list: ListName, send: (server: Server) => Promise<void>): void {
    this.broadcast(send);
    for (const listener of this.#listeners) listener(list);
  }

  /**
   * Calls `listener` whenever a list changes (the HTTP runner publishes
   * these to modern clients; a server mounted elsewhere re-syncs its copies).
   *
   * @param listener Receives which list changed.
   * @returns A function that removes the listener.
   */
  onListChanged(listener: (list: ListName) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Whether any instance is still answering a request.
   *
   * @returns `true` while a request is in flight on one of them.
   */
  busy(): boolean {
    return [...this.#instances.keys()].some((server) =>
      inFlightRequests(server) > 0
    );
  }
}

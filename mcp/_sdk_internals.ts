/**
 * The few places where mcpkit reaches past the public API of the pinned
 * `@modelcontextprotocol/sdk` (1.32.2). They live in this one file so an SDK
 * upgrade has one thing to re-check; `server_test.ts` exercises every one.
 *
 * @module
 */
import type { McpServer } from "./_sdk.ts";
import type { Server } from "./_sdk.ts";
import type {
  InitializeRequest,
  InitializeResult,
  ServerCapabilities,
} from "./_sdk.ts";

type Handler = (...args: never[]) => unknown;

/** The protocol fields the SDK marks `private` that we need. */
interface ProtocolInternals {
  _requestHandlers: Map<string, Handler>;
  _notificationHandlers: Map<string, Handler>;
  _requestHandlerAbortControllers: Map<unknown, AbortController>;
  _oninitialize(request: InitializeRequest): Promise<InitializeResult>;
  getCapabilities(): ServerCapabilities;
}

/** The registry fields of `McpServer` that the SDK marks `private`. */
export interface McpRegistry {
  _registeredTools: Record<string, unknown>;
  _registeredResources: Record<string, unknown>;
  _registeredResourceTemplates: Record<string, unknown>;
  _registeredPrompts: Record<string, unknown>;
}

function internals(server: Server): ProtocolInternals {
  return server as unknown as ProtocolInternals;
}

/**
 * Gives `target` every request and notification handler of `source` that it
 * does not define itself. The handlers close over the `McpServer` registry, so
 * the copy serves the same tools, resources and prompts, while `extra`
 * (progress, notifications) stays bound to the protocol that got the request.
 */
export function copyHandlers(source: Server, target: Server): void {
  const from = internals(source);
  const to = internals(target);
  for (const [method, handler] of from._requestHandlers) {
    if (!to._requestHandlers.has(method)) {
      to._requestHandlers.set(method, handler);
    }
  }
  for (const [method, handler] of from._notificationHandlers) {
    if (!to._notificationHandlers.has(method)) {
      to._notificationHandlers.set(method, handler);
    }
  }
}

/** Runs the SDK's own initialize handling (version negotiation, client info). */
export function sdkInitialize(
  server: Server,
  request: InitializeRequest,
): Promise<InitializeResult> {
  return internals(server)._oninitialize(request);
}

/** The live registry objects of an `McpServer`, for composing servers. */
export function registryOf(server: McpServer): McpRegistry {
  return server as unknown as McpRegistry;
}

/** The capabilities a protocol instance declares (the SDK marks the getter `private`). */
export function capabilitiesOf(server: Server): ServerCapabilities {
  return internals(server).getCapabilities();
}

/**
 * How many requests the protocol instance is handling: received, not yet
 * answered (the SDK drops the entry once the response is sent).
 */
export function inFlightRequests(server: Server): number {
  return internals(server)._requestHandlerAbortControllers.size;
}

/**
 * The few places where mcpkit reaches past the public API of the pinned MCP
 * SDK v2 (`@modelcontextprotocol/server` 2.4.0). They live in this one file
 * so an SDK upgrade has one thing to re-check; `server/server_test.ts` exercises
 * every one.
 *
 * @module
 */
import type {
  McpServer,
  RegisteredPrompt,
  RegisteredResource,
  RegisteredResourceTemplate,
  RegisteredTool,
  Server,
} from "./_sdk.ts";

type Handler = (request: unknown, ctx: unknown) => Promise<unknown>;

/** The protocol fields the SDK marks `private` or `@internal` that we need. */
interface ProtocolInternals {
  _requestHandlers: Map<string, Handler>;
  _notificationHandlers: Map<string, Handler>;
  _requestHandlerAbortControllers: Map<unknown, AbortController>;
}

/** The registry fields of `McpServer` that the SDK keeps `private`. */
interface McpRegistry {
  _registeredTools: Record<string, unknown>;
  _registeredResources: Record<string, unknown>;
  _registeredResourceTemplates: Record<string, unknown>;
  _registeredPrompts: Record<string, unknown>;
  _toolInputSchemaJson: Record<string, unknown>;
  _completionHandlerInitialized: boolean;
  setCompletionRequestHandler(): void;
}

/** The live registry objects of an `McpServer`, for composing servers. */
export function registryOf(server: McpServer): {
  _registeredTools: Record<string, RegisteredTool>;
  _registeredResources: Record<string, RegisteredResource>;
  _registeredResourceTemplates: Record<string, RegisteredResourceTemplate>;
  _registeredPrompts: Record<string, RegisteredPrompt>;
} {
  return server as unknown as ReturnType<typeof registryOf>;
}

function internals(server: Server): ProtocolInternals {
  return server as unknown as ProtocolInternals;
}

function registry(server: McpServer): McpRegistry {
  return server as unknown as McpRegistry;
}

/**
 * Makes `instance` serve `owner`'s tools, resources and prompts: the SDK's
 * handlers read the registry from their `McpServer` at call time, so pointing
 * the instance's registry fields at the owner's objects shares them (later
 * registrations included) while the instance keeps its own protocol, era and
 * transport. This is what the SDK's per-request factories do by registering
 * everything again, without the cost of doing so on every request. Handlers
 * an application set on `owner.server` itself (`setRequestHandler`, e.g. for
 * `resources/subscribe`) are copied where the instance has none.
 */
export function shareRegistry(owner: McpServer, instance: McpServer): void {
  const from = registry(owner);
  const to = registry(instance);
  to._registeredTools = from._registeredTools;
  to._registeredResources = from._registeredResources;
  to._registeredResourceTemplates = from._registeredResourceTemplates;
  to._registeredPrompts = from._registeredPrompts;
  to._toolInputSchemaJson = from._toolInputSchemaJson;
  if (from._completionHandlerInitialized) to.setCompletionRequestHandler();
  const source = internals(owner.server);
  const target = internals(instance.server);
  for (const [method, handler] of source._requestHandlers) {
    if (!target._requestHandlers.has(method)) {
      target._requestHandlers.set(method, handler);
    }
  }
  for (const [method, handler] of source._notificationHandlers) {
    if (!target._notificationHandlers.has(method)) {
      target._notificationHandlers.set(method, handler);
    }
  }
}

/**
 * Puts `before` in front of every request handler of `server` for which
 * `applies(method)` holds; handlers are looked up per request, so this must
 * run after the last handler is set and before the server connects. When
 * `before` has nothing to wait for it returns `undefined`, and the handler
 * runs without an extra turn of the event loop.
 */
export function guardRequestHandlers(
  server: Server,
  applies: (method: string) => boolean,
  before: (request: unknown, ctx: unknown) => Promise<void> | undefined,
): void {
  const handlers = internals(server)._requestHandlers;
  for (const [method, handler] of handlers) {
    if (!applies(method)) continue;
    handlers.set(method, (request, ctx) => {
      const waiting = before(request, ctx);
      return waiting
        ? waiting.then(() => handler(request, ctx))
        : handler(request, ctx);
    });
  }
}

/**
 * How many requests the protocol instance is handling: received, not yet
 * answered (the SDK drops the entry once the response is sent).
 */
export function inFlightRequests(server: Server): number {
  return internals(server)._requestHandlerAbortControllers.size;
}

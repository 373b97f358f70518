/**
 * The stdio runner, and what every runner needs from the server and gives
 * back. The HTTP runners (`http.ts`) are loaded only when used, so a
 * stdio environment starts without the HTTP stack.
 *
 * @module
 */
import type { McpServer, ProtocolEra } from "../_sdk.ts";
import { serveStdio } from "../_sdk.ts";
import { redirectConsoleToStderr } from "./console.ts";
import type { DevSource } from "./dev.ts";
import { DenoStdioTransport } from "./stdio_transport.ts";

/** What the runners need from the server. */
export interface SessionHost extends Omit<DevSource, "transport"> {
  /** A new protocol instance over the server's registry, for one connection or one modern request. */
  createInstance(era?: ProtocolEra): McpServer;
  /** Calls `listener` when the tool, resource or prompt list changes. */
  onListChanged(
    listener: (list: "tools" | "resources" | "prompts") => void,
  ): () => void;
}

/** A started transport. */
export interface RunningTransport {
  /** Resolves when the transport has stopped. */
  readonly finished: Promise<void>;
  /** Stops the transport and closes every session. */
  close(): Promise<void>;
  /** Client sessions open now (1 for a connected stdio client). */
  sessionCount(): number;
  /** Stops taking new requests (each is refused with a JSON-RPC error) while running ones finish. */
  drain(): void;
}

/**
 * Serves the host over stdio until stdin ends, in the era the client opens
 * with (the SDK's `serveStdio`: `server/discover` or a modern request pins
 * the modern era, `initialize` the legacy one). `console.log/info/debug` go
 * to stderr for the whole run, so stdout carries protocol messages only.
 *
 * @param host The server.
 * @param transport The stdio transport (a custom one in tests).
 * @returns The running transport.
 */
export function startStdio(
  host: SessionHost,
  transport: DenoStdioTransport = new DenoStdioTransport(),
): Promise<RunningTransport> {
  const restore = redirectConsoleToStderr();
  let open = true;
  const finished = transport.closed.then(() => {
    open = false;
    restore();
  });
  const served = serveStdio(({ era }) => host.createInstance(era), {
    transport,
    onerror: (error) => console.error(`MCP stdio: ${error.message}`),
  });
  return Promise.resolve({
    finished,
    close: () => served.close(),
    sessionCount: () => open ? 1 : 0,
    drain: () => transport.drain(),
  });
}

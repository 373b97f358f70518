// SDK client pieces for the MCP tests, typed (see mcp/_sdk.ts for why the
// `@ts-types` directives are needed), plus small helpers shared by the suites.

// @ts-types="@modelcontextprotocol/sdk/client/index"
export { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/inMemory"
export { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
export { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
export { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/client/sse"
export { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
// @ts-types="@modelcontextprotocol/sdk/types"
export {
  LATEST_PROTOCOL_VERSION,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
// @ts-types="@modelcontextprotocol/sdk/types"
export type {
  CallToolResult,
  JSONRPCMessage,
} from "@modelcontextprotocol/sdk/types.js";

// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/inMemory"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { MCPServer } from "../mcp/mod.ts";

/** Connects an SDK client to the server's own protocol instance in memory. */
export async function connectInMemory(
  mcp: MCPServer,
  name = "test-client",
): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await mcp.connect(serverSide);
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(clientSide);
  return client;
}

/** Connects an SDK client to a fresh session protocol instance in memory. */
export async function connectSession(
  mcp: MCPServer,
  name = "session-client",
): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await mcp.createInstance().connect(serverSide);
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(clientSide);
  return client;
}

/** A raw JSON-RPC peer in memory: send messages, read what the server sent. */
export interface RawPeer {
  received: JSONRPCMessage[];
  send(message: JSONRPCMessage): Promise<void>;
  /** Resolves with the response to request `id`. */
  response(id: number): Promise<JSONRPCMessage>;
  close(): Promise<void>;
}

/** Connects a raw JSON-RPC peer to a fresh session of `mcp`. */
export async function rawPeer(mcp: MCPServer): Promise<RawPeer> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const received: JSONRPCMessage[] = [];
  const waiters = new Map<number, (message: JSONRPCMessage) => void>();
  clientSide.onmessage = (message) => {
    received.push(message);
    const id = (message as { id?: number }).id;
    if (id !== undefined && ("result" in message || "error" in message)) {
      waiters.get(id)?.(message);
    }
  };
  await clientSide.start();
  await mcp.createInstance().connect(serverSide);
  return {
    received,
    send: (message) => clientSide.send(message),
    response: (id) => {
      const found = received.find((m) =>
        (m as { id?: number }).id === id && ("result" in m || "error" in m)
      );
      if (found) return Promise.resolve(found);
      return new Promise((resolve) => waiters.set(id, resolve));
    },
    close: () => clientSide.close(),
  };
}

/** A raw initialize request with `_meta`. */
export function initializeMessage(
  id: number,
  meta?: Record<string, unknown>,
  protocolVersion = "2025-06-18",
): JSONRPCMessage {
  return {
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: {
      protocolVersion,
      capabilities: {},
      clientInfo: { name: "raw", version: "1.0.0" },
      ...(meta && { _meta: meta }),
    },
  };
}

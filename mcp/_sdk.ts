// The official MCP SDK v2 (`@modelcontextprotocol/server`, pinned in the
// imports map), re-exported with its types. Every module in `mcp/` imports the
// SDK through this file, so swapping the pin touches one place.

export {
  createMcpHandler,
  InMemoryTransport,
  isInitializeRequest,
  isLegacyRequest,
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
  ResourceTemplate,
  serializeMessage,
  Server,
  UriTemplate,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
export type {
  CallToolResult,
  ContentBlock,
  EventId,
  EventStore,
  Implementation,
  JSONRPCMessage,
  McpRequestContext,
  McpServerOptions,
  ProgressToken,
  ProtocolEra,
  ReadResourceCallback,
  ReadResourceResult,
  ReadResourceTemplateCallback,
  RegisteredPrompt,
  RegisteredResource,
  RegisteredResourceTemplate,
  RegisteredTool,
  ResourceMetadata,
  ServerContext,
  ServerNotification,
  ToolAnnotations,
  Transport,
  Variables,
} from "@modelcontextprotocol/server";
export { serveStdio } from "@modelcontextprotocol/server/stdio";
export { JSONRPCMessageSchema } from "@modelcontextprotocol/core";

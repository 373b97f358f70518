// The official MCP SDK, re-exported with its types.
//
// The SDK's `exports` map sends `./*` to `./dist/esm/*` for code but
// `./dist/esm/*.d.ts` for types, so under Deno `.../server/mcp.js` finds the
// code yet looks for `mcp.js.d.ts` and silently types everything `any`. Each
// `@ts-types` below points the checker at the extension-less specifier, whose
// types resolve. Every module in `mcp/` imports the SDK through this file.

// @ts-types="@modelcontextprotocol/sdk/server/mcp"
export {
  McpServer,
  ResourceTemplate,
} from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/mcp"
export type {
  McpServerOptions,
  ReadResourceCallback,
  ReadResourceTemplateCallback,
  RegisteredPrompt,
  RegisteredResource,
  RegisteredResourceTemplate,
  RegisteredTool,
  ResourceMetadata,
  ToolCallback,
} from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/index"
export { Server } from "@modelcontextprotocol/sdk/server/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/index"
export { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/inMemory"
export { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
export { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
export type {
  EventId,
  EventStore,
  StreamId,
} from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/server/zod-compat"
export {
  getObjectShape,
  getParseErrorMessage,
} from "@modelcontextprotocol/sdk/server/zod-compat.js";
// @ts-types="@modelcontextprotocol/sdk/server/zod-compat"
export type { ZodRawShapeCompat } from "@modelcontextprotocol/sdk/server/zod-compat.js";
// @ts-types="@modelcontextprotocol/sdk/server/zod-json-schema-compat"
export { toJsonSchemaCompat } from "@modelcontextprotocol/sdk/server/zod-json-schema-compat.js";
// @ts-types="@modelcontextprotocol/sdk/shared/protocol"
export type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
// @ts-types="@modelcontextprotocol/sdk/shared/stdio"
export {
  ReadBuffer,
  serializeMessage,
} from "@modelcontextprotocol/sdk/shared/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/shared/transport"
export type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
// @ts-types="@modelcontextprotocol/sdk/shared/uriTemplate"
export { UriTemplate } from "@modelcontextprotocol/sdk/shared/uriTemplate.js";
// @ts-types="@modelcontextprotocol/sdk/shared/uriTemplate"
export type { Variables } from "@modelcontextprotocol/sdk/shared/uriTemplate.js";
// @ts-types="@modelcontextprotocol/sdk/types"
export {
  ErrorCode,
  InitializeRequestSchema,
  isInitializeRequest,
  JSONRPCMessageSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
// @ts-types="@modelcontextprotocol/sdk/types"
export type {
  CallToolResult,
  ContentBlock,
  Implementation,
  InitializeRequest,
  InitializeResult,
  JSONRPCMessage,
  ProgressToken,
  ReadResourceResult,
  ServerCapabilities,
  ServerNotification,
  ServerRequest,
  ToolAnnotations,
} from "@modelcontextprotocol/sdk/types.js";

/**
 * mcpkit: an inference gateway in front of five model providers, and an MCP
 * server base class for evaluation environments.
 *
 * Import the half you need: `@org/mcpkit/gateway` or `@org/mcpkit/mcp`.
 *
 * @module
 */
export * from "./gateway/mod.ts";
export * from "./mcp/mod.ts";

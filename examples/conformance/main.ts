/**
 * Runs the conformance server: `deno run -A examples/conformance/main.ts
 * [http|sse|stdio]` (default `http`, Streamable HTTP at `/mcp` on `MCP_PORT`,
 * default 8765).
 *
 * @module
 */
import { createConformanceServer } from "./server.ts";

const mcp = createConformanceServer();
// Resumable streams: `test_reconnection` closes its stream for the client to resume.
await mcp.run({ transport: Deno.args[0] ?? "http", resumable: true });

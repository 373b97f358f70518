/**
 * The benchmark's baseline: a bare SDK v2 `McpServer` with the same `add`
 * tool, served the way the SDK documents for both protocol eras: stdio with
 * `serveStdio(factory)`, Streamable HTTP with `createMcpHandler(factory)`
 * on `Deno.serve` (modern requests, and legacy ones statelessly).
 *
 * `deno run -A bench/mcp/servers/sdk.ts stdio|http [port]`
 *
 * @module
 */
import { z } from "zod";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";

function createServer(): McpServer {
  const server = new McpServer({ name: "bench-sdk", version: "1.0.0" });
  server.registerTool("add", {
    description: "Add two numbers.",
    inputSchema: { a: z.number(), b: z.number() },
  }, ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }));
  return server;
}

if (import.meta.main) {
  if ((Deno.args[0] ?? "stdio") === "stdio") {
    serveStdio(createServer);
  } else {
    const handler = createMcpHandler(createServer);
    Deno.serve({
      hostname: "127.0.0.1",
      port: Number(Deno.args[1] ?? 0),
      onListen: ({ port }) => console.error(`listening on port ${port}`),
    }, (request) => handler.fetch(request));
  }
}

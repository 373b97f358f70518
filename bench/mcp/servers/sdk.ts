/**
 * The benchmark's baseline: a bare SDK `McpServer` with the same `add` tool,
 * over stdio or Streamable HTTP (one session, `Deno.serve`).
 *
 * `deno run -A bench/mcp/servers/sdk.ts stdio|http [port]`
 *
 * @module
 */
import { z } from "zod";
import {
  McpServer,
  StdioServerTransport,
  WebStandardStreamableHTTPServerTransport,
} from "../_sdk.ts";

const server = new McpServer({ name: "bench-sdk", version: "1.0.0" });
server.registerTool("add", {
  description: "Add two numbers.",
  inputSchema: { a: z.number(), b: z.number() },
}, ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }));

if (import.meta.main) {
  if ((Deno.args[0] ?? "stdio") === "stdio") {
    await server.connect(new StdioServerTransport());
  } else {
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
    });
    await server.connect(transport);
    Deno.serve({
      hostname: "127.0.0.1",
      port: Number(Deno.args[1] ?? 0),
      onListen: ({ port }) => console.error(`listening on port ${port}`),
    }, (request) => transport.handleRequest(request));
  }
}

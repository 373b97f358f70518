/**
 * Runs the number-guessing environment:
 * `deno run -A examples/text_game/main.ts [stdio|http|sse] [port]`
 * (default stdio; port default `MCP_PORT` or 8765, host `MCP_HOST` or 127.0.0.1).
 *
 * @module
 */
import { createTextGameServer } from "./server.ts";

const { mcp } = createTextGameServer();
await mcp.run({
  transport: Deno.args[0] ?? "stdio",
  port: Deno.args[1] === undefined ? undefined : Number(Deno.args[1]),
});

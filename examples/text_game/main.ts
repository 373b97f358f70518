/**
 * Runs the number-guessing environment:
 * `deno run -A examples/text_game/main.ts [stdio|http|sse|hud] [port]`
 * (default stdio; port default `MCP_PORT` or 8765, host `MCP_HOST` or
 * 127.0.0.1). `hud` serves HUD v6's control channel on that TCP port: the
 * scenarios as tasks, the tools as its `mcp` capability.
 *
 * @module
 */
import { createTextGameServer } from "./server.ts";

const { mcp } = createTextGameServer();
await mcp.run({
  transport: Deno.args[0] ?? "stdio",
  port: Deno.args[1] === undefined ? undefined : Number(Deno.args[1]),
});

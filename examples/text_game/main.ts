/**
 * Runs the number-guessing environment:
 * `deno run -A examples/text_game/main.ts [stdio|http|sse|hud] [port]`
 * (default stdio; port default `MCP_PORT` or 8765, host `MCP_HOST` or
 * 127.0.0.1). `hud` serves HUD v6's control channel on that TCP port: the
 * scenarios as tasks, the tools as its `mcp` capability. `health` asks a
 * running HTTP server on loopback at `MCP_PORT` whether it answers (exit 0
 * when it does, 1 when not): the container image's health check, which has
 * no shell or curl to ask with.
 *
 * @module
 */
import { createTextGameServer } from "./server.ts";

if (Deno.args[0] === "health") {
  const port = Deno.env.get("MCP_PORT") ?? "8765";
  try {
    // A GET without a session is refused with a 4xx: the server is up.
    const response = await fetch(`http://127.0.0.1:${port}/mcp`, {
      signal: AbortSignal.timeout(4000),
    });
    await response.body?.cancel();
    Deno.exit(response.status < 500 ? 0 : 1);
  } catch (error) {
    console.error(`text-game: no answer on port ${port}: ${error}`);
    Deno.exit(1);
  }
}

const { mcp } = createTextGameServer();
await mcp.run({
  transport: Deno.args[0] ?? "stdio",
  port: Deno.args[1] === undefined ? undefined : Number(Deno.args[1]),
});

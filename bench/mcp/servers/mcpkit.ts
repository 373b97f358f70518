/**
 * The benchmark's MCP server on `MCPServer`: one `add` tool, and the same
 * function behind a `calc` hub for dispatch timing.
 *
 * `deno run -A bench/mcp/servers/mcpkit.ts stdio|http [port]`
 *
 * @module
 */
import { z } from "zod";
import { BaseHub, MCPServer } from "../../../mcp/mod.ts";

const mcp = new MCPServer({ name: "bench-mcpkit", version: "1.0.0" });
const calc = new BaseHub("calc");

const add = ({ a, b }: { a: number; b: number }) => String(a + b);
mcp.tool(
  {
    name: "add",
    description: "Add two numbers.",
    input: { a: z.number(), b: z.number() },
  },
  add,
);
calc.tool("add", {
  description: "Add two numbers.",
  input: { a: z.number(), b: z.number() },
}, add);
mcp.mount(calc);

if (import.meta.main) {
  const transport = Deno.args[0] ?? "stdio";
  await mcp.run({
    transport,
    port: Number(Deno.args[1] ?? 0),
    onListen: (addr) => console.error(`listening on port ${addr.port}`),
  });
}

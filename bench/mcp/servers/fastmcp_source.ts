/**
 * The FastMCP server of the MCP benchmark (npm `fastmcp` on Node) with the
 * same `add` tool. Kept as text, not a `.mjs` file in the repository:
 * `deno check bench/` would try to resolve `fastmcp`, which only exists
 * under `bench/.cache/node/node_modules`. The runner writes it to a scratch
 * directory and runs `node fastmcp_server.mjs <node dir> stdio|http [port]`;
 * the packages are resolved from the node directory given first.
 *
 * @module
 */

/** Source of the Node FastMCP server. */
export const FASTMCP_SERVER_SOURCE: string = `
import { createRequire } from "node:module";
import process from "node:process";
import { pathToFileURL } from "node:url";

const require = createRequire(process.argv[2] + "/package.json");
const load = (name) => import(pathToFileURL(require.resolve(name)).href);
const { FastMCP } = await load("fastmcp");
const { z } = await load("zod");

const server = new FastMCP({ name: "bench-fastmcp", version: "1.0.0" });
server.addTool({
  name: "add",
  description: "Add two numbers.",
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => Promise.resolve(String(a + b)),
});

if ((process.argv[3] ?? "stdio") === "stdio") {
  await server.start({ transportType: "stdio" });
} else {
  const port = Number(process.argv[4]);
  await server.start({
    transportType: "httpStream",
    httpStream: { port, host: "127.0.0.1", endpoint: "/mcp" },
  });
  console.error("listening on port " + port);
}
`;

/**
 * The MCP benchmark: tool-call round trips over stdio and Streamable HTTP,
 * hub dispatch against a direct tool, and cold start (spawn to the first
 * `tools/list` answer), for `MCPServer`, a bare SDK `McpServer` and npm
 * `fastmcp` on Node, each serving the same `add` tool. The client is the
 * official SDK client in this process; the servers take turns in rounds so
 * drifting machine load hits them alike.
 *
 * @module
 */
import { type Child, spawnChild } from "../_process.ts";
import { type Percentiles, summarize } from "../_stats.ts";
import {
  Client,
  StdioClientTransport,
  StreamableHTTPClientTransport,
} from "./_sdk.ts";
import { FASTMCP_SERVER_SOURCE } from "./servers/fastmcp_source.ts";

/** The servers compared, in the order they take turns. */
export const MCP_SERVERS = ["mcpkit", "sdk", "fastmcp"] as const;
/** One of {@linkcode MCP_SERVERS}. */
export type McpServerName = typeof MCP_SERVERS[number];

/** How long the MCP benchmark runs. */
export interface McpBenchOptions {
  /** Timed calls per server and transport (after warm-up). */
  calls: number;
  /** Cold starts per server. */
  coldStarts: number;
  /** Directory of `node_modules` holding fastmcp. */
  nodeDir: string;
  /** Scratch directory for the FastMCP server script. */
  workDir: string;
}

/** Everything the MCP benchmark measured, ms. */
export interface McpBenchResults {
  /** Round trip of `add` by transport, then server. */
  roundTrip: Record<"stdio" | "http", Record<McpServerName, Percentiles>>;
  /** `MCPServer` over stdio: the `add` tool directly and through the `calc` hub. */
  hub: { direct: Percentiles; hub: Percentiles };
  /** Spawn to first `tools/list` answer over stdio, by server. */
  coldStart: Record<McpServerName, Percentiles>;
  /** The commands that started each server (stdio form). */
  commands: Record<McpServerName, string>;
}

const ROOT = new URL("../../", import.meta.url).pathname;

interface Launch {
  command: string;
  args: (transport: "stdio" | "http", port?: number) => string[];
  cwd: string;
}

function launches(
  nodeDir: string,
  fastmcpScript: string,
): Record<McpServerName, Launch> {
  const deno = (file: string): Launch => ({
    command: Deno.execPath(),
    args: (transport, port) => [
      "run",
      "-A",
      `bench/mcp/servers/${file}`,
      transport,
      ...(port === undefined ? [] : [String(port)]),
    ],
    cwd: ROOT,
  });
  return {
    mcpkit: deno("mcpkit.ts"),
    sdk: deno("sdk.ts"),
    fastmcp: {
      command: "node",
      args: (transport, port) => [
        fastmcpScript,
        nodeDir,
        transport,
        ...(port === undefined ? [] : [String(port)]),
      ],
      cwd: nodeDir,
    },
  };
}

async function connectStdio(launch: Launch): Promise<Client> {
  const client = new Client({ name: "bench", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({
      command: launch.command,
      args: launch.args("stdio"),
      cwd: launch.cwd,
      stderr: "ignore",
    }),
  );
  return client;
}

async function connectHttp(
  launch: Launch,
): Promise<{ client: Client; child: Child }> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const { child } = await spawnChild(launch.command, {
    args: launch.args("http", port),
    cwd: launch.cwd,
    ready: /listening on port (\d+)/,
  });
  const client = new Client({ name: "bench", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)),
  );
  return { client, child };
}

type Call = () => Promise<unknown>;

function addCall(client: Client, tool = "add"): Call {
  const args = tool === "add"
    ? { a: 1, b: 2 }
    : { name: "add", arguments: { a: 1, b: 2 } };
  return async () => {
    const result = await client.callTool({ name: tool, arguments: args }) as {
      content?: { type: string; text?: string }[];
      isError?: boolean;
    };
    if (result.isError || result.content?.[0]?.text !== "3") {
      throw new Error(
        `Tool "${tool}" answered "${JSON.stringify(result)}" instead of "3"`,
      );
    }
  };
}

/**
 * Times sequential calls, the contenders taking turns in rounds of 50. The
 * order rotates every round: a contender that always ran right after the
 * Node server measured slower (the Node process still busy on the shared
 * cores), so a fixed order is a bias.
 */
async function timeInRounds<K extends string>(
  calls: Record<K, Call>,
  count: number,
): Promise<Record<K, Percentiles>> {
  const names = Object.keys(calls) as K[];
  const samples = Object.fromEntries(names.map((n) => [n, [] as number[]]));
  for (const name of names) {
    for (let i = 0; i < 100; i++) await calls[name]();
  }
  for (let done = 0, round = 0; done < count; done += 50, round++) {
    const shift = round % names.length;
    for (const name of [...names.slice(shift), ...names.slice(0, shift)]) {
      for (let i = 0; i < 50; i++) {
        const start = performance.now();
        await calls[name]();
        samples[name].push(performance.now() - start);
      }
    }
  }
  return Object.fromEntries(
    names.map((n) => [n, summarize(samples[n])]),
  ) as Record<K, Percentiles>;
}

/**
 * Runs the MCP benchmark.
 *
 * @param options Counts and the Node directory.
 * @param log Progress lines.
 * @returns The measurements.
 */
export async function benchMcp(
  options: McpBenchOptions,
  log: (line: string) => void,
): Promise<McpBenchResults> {
  const fastmcpScript = `${options.workDir}/fastmcp_server.mjs`;
  await Deno.writeTextFile(fastmcpScript, FASTMCP_SERVER_SOURCE);
  const servers = launches(options.nodeDir, fastmcpScript);

  log("mcp bench: stdio round trips and hub dispatch");
  const stdio = {} as Record<McpServerName, Client>;
  let stdioTimes;
  let hub;
  try {
    for (const name of MCP_SERVERS) {
      stdio[name] = await connectStdio(servers[name]);
    }
    stdioTimes = await timeInRounds(
      Object.fromEntries(
        MCP_SERVERS.map((name) => [name, addCall(stdio[name])]),
      ) as Record<McpServerName, Call>,
      options.calls,
    );
    hub = await timeInRounds({
      direct: addCall(stdio.mcpkit),
      hub: addCall(stdio.mcpkit, "calc"),
    }, options.calls);
  } finally {
    for (const client of Object.values(stdio)) await client.close();
  }

  log("mcp bench: Streamable HTTP round trips");
  const http = {} as Record<McpServerName, { client: Client; child: Child }>;
  let httpTimes;
  try {
    for (const name of MCP_SERVERS) {
      http[name] = await connectHttp(servers[name]);
    }
    httpTimes = await timeInRounds(
      Object.fromEntries(
        MCP_SERVERS.map((name) => [name, addCall(http[name].client)]),
      ) as Record<McpServerName, Call>,
      options.calls,
    );
  } finally {
    for (const { client, child } of Object.values(http)) {
      await client.close();
      await child.stop();
    }
  }

  log("mcp bench: cold starts");
  const cold = Object.fromEntries(
    MCP_SERVERS.map((n) => [n, [] as number[]]),
  ) as Record<McpServerName, number[]>;
  for (let i = 0; i < options.coldStarts; i++) {
    for (const name of MCP_SERVERS) {
      const start = performance.now();
      const client = await connectStdio(servers[name]);
      await client.listTools();
      cold[name].push(performance.now() - start);
      await client.close();
    }
  }

  const commands = Object.fromEntries(
    MCP_SERVERS.map((name) => [
      name,
      name === "fastmcp"
        ? "node fastmcp_server.mjs bench/.cache/node stdio"
        : `deno ${servers[name].args("stdio").join(" ")}`,
    ]),
  ) as Record<McpServerName, string>;
  return {
    roundTrip: { stdio: stdioTimes, http: httpTimes },
    hub,
    coldStart: Object.fromEntries(
      MCP_SERVERS.map((name) => [name, summarize(cold[name])]),
    ) as Record<McpServerName, Percentiles>,
    commands,
  };
}

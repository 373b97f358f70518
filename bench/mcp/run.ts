/**
 * The MCP benchmark: tool-call round trips over stdio and Streamable HTTP in
 * both protocol eras (a legacy client that opens with `initialize`, and a
 * modern one pinned to 2026-07-28), hub dispatch against a direct tool, and
 * cold start (spawn to the first `tools/list` answer), for `MCPServer`, a
 * bare SDK v2 `McpServer` and npm `fastmcp` on Node (legacy only), each
 * serving the same `add` tool. The client is the official SDK v2 client in
 * this process; the servers take turns in rounds so drifting machine load
 * hits them alike. Beside latency, each server's CPU time per call is read
 * from `/proc/<pid>/stat`, which the shared cores do not swing.
 *
 * @module
 */
import {
  Client,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { type Child, readCpuMicros, spawnChild } from "../_process.ts";
import { type Percentiles, summarize } from "../_stats.ts";
import { FASTMCP_SERVER_SOURCE } from "./servers/fastmcp_source.ts";

/** The servers compared, in the order they take turns. */
export const MCP_SERVERS = ["mcpkit", "sdk", "fastmcp"] as const;
/** One of {@linkcode MCP_SERVERS}. */
export type McpServerName = typeof MCP_SERVERS[number];
/** The protocol eras a client may speak. */
export const ERAS = ["legacy", "modern"] as const;
/** One of {@linkcode ERAS}. */
export type Era = typeof ERAS[number];

/** How long the MCP benchmark runs. */
export interface McpBenchOptions {
  /** Timed calls per server, transport and era (after warm-up). */
  calls: number;
  /** Cold starts per server and era. */
  coldStarts: number;
  /** Directory of `node_modules` holding fastmcp. */
  nodeDir: string;
  /** Scratch directory for the FastMCP server script. */
  workDir: string;
}

/** Latency percentiles of a server's calls, with its CPU time per call. */
export interface CallStats extends Percentiles {
  /** Server CPU time per call, µs (user + system, from `/proc`). */
  cpuMicros: number;
}

/** Everything the MCP benchmark measured, ms unless named otherwise. */
export interface McpBenchResults {
  /** Round trip of `add` by transport, era, then server (fastmcp: legacy only). */
  roundTrip: Record<
    "stdio" | "http",
    Record<Era, Partial<Record<McpServerName, CallStats>>>
  >;
  /** `MCPServer` over stdio, legacy: the `add` tool directly and through the `calc` hub. */
  hub: { direct: Percentiles; hub: Percentiles };
  /** Spawn to first `tools/list` answer over stdio, by era and server. */
  coldStart: Record<Era, Partial<Record<McpServerName, Percentiles>>>;
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

function newClient(era: Era): Client {
  return era === "legacy"
    ? new Client({ name: "bench", version: "1.0.0" })
    : new Client({ name: "bench", version: "1.0.0" }, {
      versionNegotiation: { mode: { pin: "2026-07-28" } },
    });
}

/** A connected client and the pid of the server process it talks to. */
interface Connection {
  client: Client;
  pid: number;
  close(): Promise<void>;
}

async function connectStdio(launch: Launch, era: Era): Promise<Connection> {
  const client = newClient(era);
  const transport = new StdioClientTransport({
    command: launch.command,
    args: launch.args("stdio"),
    cwd: launch.cwd,
    stderr: "ignore",
  });
  await client.connect(transport);
  return { client, pid: transport.pid ?? 0, close: () => client.close() };
}

async function connectHttp(launch: Launch, era: Era): Promise<Connection> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const { child }: { child: Child } = await spawnChild(launch.command, {
    args: launch.args("http", port),
    cwd: launch.cwd,
    ready: /listening on port (\d+)/,
  });
  const client = newClient(era);
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)),
  );
  return {
    client,
    pid: child.pid,
    close: async () => {
      await client.close();
      await child.stop();
    },
  };
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
 * Times sequential calls, the contenders taking turns in rounds of 50, and
 * reads each contender's server CPU before and after each of its rounds. The
 * order rotates every round: a contender that always ran right after the
 * Node server measured slower (the Node process still busy on the shared
 * cores), so a fixed order is a bias.
 */
async function timeInRounds<K extends string>(
  calls: Record<K, { call: Call; pid?: number }>,
  count: number,
): Promise<Record<K, CallStats>> {
  const names = Object.keys(calls) as K[];
  const samples = Object.fromEntries(names.map((n) => [n, [] as number[]]));
  const cpu = Object.fromEntries(names.map((n) => [n, 0])) as Record<
    K,
    number
  >;
  for (const name of names) {
    for (let i = 0; i < 100; i++) await calls[name].call();
  }
  for (let done = 0, round = 0; done < count; done += 50, round++) {
    const shift = round % names.length;
    for (const name of [...names.slice(shift), ...names.slice(0, shift)]) {
      const { call, pid } = calls[name];
      const before = pid ? await readCpuMicros(pid) : 0;
      for (let i = 0; i < 50; i++) {
        const start = performance.now();
        await call();
        samples[name].push(performance.now() - start);
      }
      if (pid) cpu[name] += (await readCpuMicros(pid)) - before;
    }
  }
  return Object.fromEntries(
    names.map((n) => [n, {
      ...summarize(samples[n]),
      cpuMicros: cpu[n] / samples[n].length,
    }]),
  ) as Record<K, CallStats>;
}

/** The servers that speak an era: fastmcp (SDK v1) is legacy only. */
function serversFor(era: Era): McpServerName[] {
  return era === "legacy" ? [...MCP_SERVERS] : ["mcpkit", "sdk"];
}

async function roundTrips(
  servers: Record<McpServerName, Launch>,
  transport: "stdio" | "http",
  era: Era,
  calls: number,
): Promise<Partial<Record<McpServerName, CallStats>>> {
  const open: Partial<Record<McpServerName, Connection>> = {};
  try {
    for (const name of serversFor(era)) {
      open[name] = await (transport === "stdio" ? connectStdio : connectHttp)(
        servers[name],
        era,
      );
    }
    return await timeInRounds(
      Object.fromEntries(
        Object.entries(open).map(([name, c]) => [name, {
          call: addCall(c!.client),
          pid: c!.pid,
        }]),
      ),
      calls,
    );
  } finally {
    for (const connection of Object.values(open)) await connection!.close();
  }
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

  const roundTrip = { stdio: {}, http: {} } as McpBenchResults["roundTrip"];
  for (const transport of ["stdio", "http"] as const) {
    for (const era of ERAS) {
      log(`mcp bench: ${transport} round trips, ${era} era`);
      roundTrip[transport][era] = await roundTrips(
        servers,
        transport,
        era,
        options.calls,
      );
    }
  }

  log("mcp bench: hub dispatch");
  const mcpkit = await connectStdio(servers.mcpkit, "legacy");
  let hub;
  try {
    hub = await timeInRounds({
      direct: { call: addCall(mcpkit.client) },
      hub: { call: addCall(mcpkit.client, "calc") },
    }, options.calls);
  } finally {
    await mcpkit.close();
  }

  log("mcp bench: cold starts");
  const coldStart = { legacy: {}, modern: {} } as McpBenchResults["coldStart"];
  for (const era of ERAS) {
    const names = serversFor(era);
    const cold = Object.fromEntries(names.map((n) => [n, [] as number[]]));
    for (let i = 0; i < options.coldStarts; i++) {
      for (const name of names) {
        const start = performance.now();
        const connection = await connectStdio(servers[name], era);
        await connection.client.listTools();
        cold[name].push(performance.now() - start);
        await connection.close();
      }
    }
    coldStart[era] = Object.fromEntries(
      names.map((name) => [name, summarize(cold[name])]),
    );
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
    roundTrip,
    hub: { direct: hub.direct, hub: hub.hub },
    coldStart,
    commands,
  };
}

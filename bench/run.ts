/**
 * `deno task bench`: installs what the benchmarks need, runs the gateway and
 * MCP benchmarks in one go, and writes `BENCHMARKS.md`, the latency chart
 * (`docs/bench-latency.png`) and the raw results (`bench/results/`).
 *
 * `deno task bench [--quick] [--report]` (`--quick`: short steps, for trying
 * the bench itself, its figures are not worth reporting; `--report`: only
 * re-render `BENCHMARKS.md` and the chart from `bench/results/latest.json`,
 * e.g. after editing `bench/closing_note.md`).
 *
 * @module
 */
import { benchStores } from "./gateway/stores.ts";
import { benchCost, costOptions } from "./gateway/cost.ts";
import { parseArgs } from "node:util";
import { ensureDependencies, NODE_DIR, versions } from "./_deps.ts";
import { runText } from "./_process.ts";
import { latencyChart, type Series, writeChart } from "./chart.ts";
import { benchGateway, type Target } from "./gateway/run.ts";
import { benchMcp } from "./mcp/run.ts";
import { benchStreams } from "./gateway/streams.ts";
import { benchLargeInputs } from "./gateway/large_inputs.ts";
import { renderReport, type RunResults } from "./report.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const CHART = "docs/bench-latency.png";

/** The commit measured, and whether the tree differed from it; `undefined` outside a git checkout. */
async function codeFact(): Promise<string | undefined> {
  try {
    const commit = await runText("git", ["rev-parse", "--short", "HEAD"], {
      cwd: ROOT,
    });
    const changed = await runText("git", [
      "status",
      "--porcelain",
      "--untracked-files=no",
      "gateway/",
    ], { cwd: ROOT });
    return `commit ${commit}${
      changed ? ", with uncommitted changes in gateway/" : ""
    }`;
  } catch {
    return undefined;
  }
}

async function machineFacts(): Promise<string[]> {
  const cpuinfo = await Deno.readTextFile("/proc/cpuinfo");
  const model = cpuinfo.match(/^model name\s*:\s*(.+)$/m)?.[1] ?? "unknown";
  const cores = cpuinfo.match(/^processor\s*:/gm)?.length ?? 0;
  const meminfo = await Deno.readTextFile("/proc/meminfo");
  const memKb = Number(meminfo.match(/^MemTotal:\s+(\d+)/m)?.[1] ?? 0);
  return [
    `CPU: ${model}, ${cores} logical cores (from /proc/cpuinfo)`,
    `Memory: ${(memKb / 1024 / 1024).toFixed(1)} GiB`,
    `Kernel: ${await runText("uname", ["-sr"])}`,
    "All traffic on loopback (127.0.0.1); load generator, gateways and simulator share the same cores.",
  ];
}

function chartSeries(run: RunResults): Series[] {
  const zero = run.gateway.byLatency.find((l) => l.upstreamMs === 0)!;
  const colors: Record<Target, string> = {
    direct: "#2b8a3e",
    floor: "#868e96",
    gateway: "#1c7ed6",
    gateway_tmpfs: "#7048e8",
    portkey: "#e8590c",
  };
  const names: Record<Target, string> = {
    direct: "direct",
    floor: "floor (bare Deno relay)",
    gateway: "mcpkit gateway",
    gateway_tmpfs: "mcpkit, KV on tmpfs",
    portkey: "Portkey",
  };
  return (Object.keys(colors) as Target[]).flatMap((target) =>
    (["p50", "p99"] as const).map((field) => ({
      label: `${names[target]} ${field}`,
      color: colors[target],
      dashed: field === "p99",
      points: zero.paced.map((
        p,
      ) => [p.rate, p.results[target][field]] as [number, number]),
    }))
  );
}

async function writeOutputs(run: RunResults): Promise<void> {
  await writeChart(
    latencyChart(
      "Latency against offered load (upstream 0 ms), p50 solid, p99 dashed",
      chartSeries(run),
    ),
    `${ROOT}${CHART}`,
  );
  const closingNote = await Deno.readTextFile(
    `${ROOT}bench/closing_note.md`,
  ).catch(() => "(bench/closing_note.md is missing)");
  await Deno.writeTextFile(
    `${ROOT}BENCHMARKS.md`,
    renderReport(run, closingNote, CHART),
  );
  // The report is checked by `deno fmt --check` with the rest of the repository.
  await runText(Deno.execPath(), ["fmt", "--quiet", `${ROOT}BENCHMARKS.md`]);
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      quick: { type: "boolean", default: false },
      report: { type: "boolean", default: false },
    },
  });
  if (values.report) {
    const run = JSON.parse(
      await Deno.readTextFile(`${ROOT}bench/results/latest.json`),
    ) as RunResults;
    await writeOutputs(run);
    Deno.exit(0);
  }
  const quick = values.quick;
  const log = (line: string) => console.error(line);
  const started = Date.now();
  const loadBefore = (await Deno.readTextFile("/proc/loadavg")).trim();
  const code = await codeFact();
  await ensureDependencies(log);

  await Deno.mkdir(`${ROOT}bench/results`, { recursive: true });
  const workDir = await Deno.makeTempDir({ prefix: "mcpkit-bench-" });
  const tmpfsDir = await Deno.makeTempDir({
    dir: "/dev/shm",
    prefix: "mcpkit-bench-",
  });
  const gatewayOptions = {
    stepS: quick ? 2 : 6,
    saturationS: quick ? 2 : 8,
    rates0: quick ? [250, 500] : [100, 250, 500, 750, 1000],
    rates50: quick ? [500] : [100, 500],
    ttftRounds: quick ? 30 : 300,
    nodeDir: NODE_DIR,
    workDir,
    tmpfsDir,
    profilePath: `${ROOT}bench/results/gateway.cpuprofile`,
  };
  const mcpOptions = {
    calls: quick ? 200 : 2000,
    coldStarts: quick ? 3 : 10,
    nodeDir: NODE_DIR,
    workDir,
  };
  const cost = costOptions(quick, { nodeDir: NODE_DIR, workDir });
  try {
    log("cost bench: issue 29's figures, cold and warm, against the relay");
    const costResults = await benchCost(cost, log);
    const gateway = await benchGateway(gatewayOptions, log);
    log("streams bench: concurrent streamed calls");
    const streams = await benchStreams(
      { counts: quick ? [100] : [100, 1000, 2000] },
      log,
    );
    const mcp = await benchMcp(mcpOptions, log);
    log("stores bench: the gateway on a KV file and on PostgreSQL");
    const stores = await benchStores(
      { calls: quick ? 400 : 4000, workDir },
      log,
    );
    log("large inputs bench: one large stream event, one large body");
    const largeInputs = await benchLargeInputs(undefined, log);
    const run: RunResults = {
      facts: {
        startedAt: new Date(started).toISOString(),
        minutes: (Date.now() - started) / 60_000,
        loadBefore,
        loadAfter: (await Deno.readTextFile("/proc/loadavg")).trim(),
        machine: await machineFacts(),
        versions: await versions(),
        command: `deno task bench${quick ? " --quick" : ""}`,
        ...code ? { code } : {},
        settings: [
          `Gateway cost (\`bench/gateway/cost.ts\`, first in the run): each workload on fresh processes of the relay (\`bench/gateway/floor.ts\`), the gateway on a KV file, the gateway on PostgreSQL 15 (\`GATEWAY_STORE=postgres://…\`, a throwaway server as \`tests/_postgres.ts\` starts it, fsync off) and Portkey, cold then warm: \`wrk -t1 -c1 -d${cost.latencyS}s\` for latency at concurrency 1; ${cost.cpuCalls} non-streamed calls at concurrency 32 for CPU per call; paced wrk stepped up to p99 ≥ 10 ms (${cost.searchStepS} s a step) for the best rate; ${cost.streams} streams open at once for CPU per chunk, RSS growth and gaps; ${cost.ttftRounds.cold} then ${cost.ttftRounds.warm} sequential streamed calls for time to first token.`,
          "Upstream: the provider simulator (`deno run -A gateway/simulator/main.ts --port 0 --latency-ms 0|50`), OpenAI chat completions, non-streamed for load, a 19-character echo reply.",
          "Our gateway: as `deno task start` runs it (`deno run -A --v8-flags=--max-semi-space-size=8,--heap-growing-percent=50 gateway/main.ts`), with `GATEWAY_KV_PATH` a fresh KV file on disk (auth with a hashed caller key, credits reserved and settled, a trace per call, all in that file), `OPENAI_API_KEYS` a pool of four keys with `OPENAI_RPM`/`OPENAI_TPM` limits high enough never to bind. The same gateway a second time with its KV file on tmpfs (`/dev/shm`).",
          "Portkey: `node node_modules/@portkey-ai/gateway/build/start-server.js --port=N --headless` with `NODE_ENV=production`; requests carry `x-portkey-provider: openai` and `x-portkey-custom-host: <simulator>/openai/v1`.",
          `Fixed rates: \`wrk -t1 -c64 -d${gatewayOptions.stepS}s --timeout 10s -s <script> URL\`, where the Lua script's \`delay()\` hands out send slots on a fixed schedule (1000/rate ms apart) so the offered rate holds whatever the latency, as wrk2 does; latencies from wrk's histogram (µs). wrk2 and oha are not packaged in Debian bookworm and autocannon's \`--overallRate\` sends each connection's quota in a burst at the start of every second, so Debian's wrk 4.1 with this pacing script is the constant-rate generator. Targets take turns at every rate after a 2 s unpaced warm-up each.`,
          `Saturation: \`wrk -t1 -c64|256 -d${gatewayOptions.saturationS}s\` unpaced; throughput counts only completed requests, and errors (non-2xx, socket errors, timeouts) are reported.`,
          `Streaming TTFT: ${gatewayOptions.ttftRounds} sequential streamed calls per target, taking turns, timed by a Deno \`fetch\` client to the first SSE event with content.`,
          "Memory: `/proc/<pid>/status` of the gateway process (`deno run` does not fork): VmHWM after the load, VmRSS sampled every 200 ms.",
          "CPU profile: a separate gateway (0 ms upstream) runs under V8's sampling profiler (`--cpu-prof`, no inspector attached, so the profile holds nothing of the instrument) through a 6 s unpaced wrk run; `bench/gateway/profile.ts` sums self time per function, and our own functions' time on the stack.",
          `Concurrent streams: ${
            quick ? "100" : "100, 1,000 and 2,000"
          } streamed chat calls open at once against the floor relay, the floor with each chunk passed through JavaScript, and the gateway (passthrough: \`gpt-5-mini\`; translated: \`claude-haiku-4-5\`), each its own turn, a second apart (\`bench/gateway/streams.ts\`); the simulator sends 40 chunks 50 ms apart.`,
          "Large inputs (`bench/gateway/large_inputs.ts`): the gateway as `deno task start` runs it on a KV file, in front of a loopback upstream in the bench process; stream events of 1, 2, 4, 7.5 and 16 MiB, chat bodies of 1, 4, 8, 16 and 31 MiB of small messages from a caller with $0.000001 and from a funded one, one at a time, with the gateway's CPU from `/proc/<pid>/stat` and a `/health` probe every 20 ms from a worker thread; first, ten $0.000001 bodies of 31 MiB at once with the gateway's VmRSS before, VmHWM, and VmRSS 5 s after.",
          `MCP: ${mcpOptions.calls} timed calls per server, transport and protocol era, ${mcpOptions.coldStarts} cold starts per server and era; the client is the official SDK v2 client (\`StdioClientTransport\`, \`StreamableHTTPClientTransport\`) in the bench process, legacy (the \`initialize\` handshake) or pinned to 2026-07-28 (modern).`,
        ],
      },
      gateway,
      streams,
      mcp,
      stores,
      cost: costResults,
      largeInputs,
    };
    await Deno.writeTextFile(
      `${ROOT}bench/results/latest.json`,
      JSON.stringify(run, null, 2),
    );
    await writeOutputs(run);
    log(`wrote BENCHMARKS.md and ${CHART}`);
  } finally {
    await Deno.remove(workDir, { recursive: true });
    await Deno.remove(tmpfsDir, { recursive: true });
  }
}

/**
 * Turns one benchmark run into `BENCHMARKS.md`: machine, versions,
 * commands, a table per figure, the targets with a verdict each, and the
 * hand-written closing note (`bench/closing_note.md`).
 *
 * @module
 */
import { renderStores, type StoreBenchResults } from "./gateway/stores.ts";
import type { CostResults } from "./gateway/cost.ts";
import { renderCost, renderCostSummary } from "./gateway/cost_report.ts";
import type { GatewayBenchResults, Target } from "./gateway/run.ts";
import type { McpBenchResults } from "./mcp/run.ts";
import type { StreamsRow } from "./gateway/streams.ts";
import type { LargeInputResults } from "./gateway/large_inputs.ts";
import { ms } from "./_stats.ts";

/** Facts about the machine and the run. */
export interface RunFacts {
  /** ISO time the run started. */
  startedAt: string;
  /** Minutes the run took. */
  minutes: number;
  /** `/proc/loadavg` before and after. */
  loadBefore: string;
  /** `/proc/loadavg` after. */
  loadAfter: string;
  /** CPU model, core count, memory, kernel. */
  machine: string[];
  /** Name → version. */
  versions: Record<string, string>;
  /** The command that produced the run. */
  command: string;
  /** The code measured: `commit abc1234`, and whether `gateway/` differed from it (absent in older runs and outside git). */
  code?: string;
  /** Durations and counts used. */
  settings: string[];
}

/** Everything one run produced. */
export interface RunResults {
  /** Machine and run facts. */
  facts: RunFacts;
  /** Gateway benchmark. */
  gateway: GatewayBenchResults;
  /** MCP benchmark. */
  mcp: McpBenchResults;
  /** Concurrent streams (absent in runs before it was part of the bench). */
  streams?: StreamsRow[];
  /** The gateway on a KV file and on PostgreSQL (absent in runs before it was part of the bench). */
  stores?: StoreBenchResults;
  /** Issue 29's figures, cold and warm, against the relay (absent in runs before it was part of the bench). */
  cost?: CostResults;
  /** Issue 35's large stream event and large body (absent in runs before it was part of the bench). */
  largeInputs?: LargeInputResults;
}

/**
 * The large-input section of `BENCHMARKS.md`: CPU per MiB (flat across
 * sizes when the work is linear), the worst `/health` meanwhile, and ten
 * refused bodies' memory.
 *
 * @param results What `benchLargeInputs` measured.
 * @returns The section's Markdown lines.
 */
export function renderLargeInputs(results: LargeInputResults): string[] {
  const { rows, burst } = results;
  return [
    "### Large inputs",
    "",
    "One upstream stream event of each size (a stream ends at an event past 8 MiB), and chat bodies of small messages from a caller with $0.000001 and from a funded one (`bench/gateway/large_inputs.ts`; the gateway as `deno task start` runs it, on a KV file; CPU from its `/proc/<pid>/stat`, in 10 ms ticks; a `/health` probe every 20 ms from a worker thread of the bench). Linear work keeps CPU per MiB flat across sizes; work that stops early makes it fall.",
    "",
    table(
      [
        "input",
        "MiB",
        "status",
        "gateway CPU, ms",
        "CPU ms per MiB",
        "worst /health, ms",
      ],
      rows.map((row) => [
        row.kind === "event" ? "stream event" : `request ${row.kind}`,
        String(row.mib),
        String(row.status),
        row.cpuMs.toFixed(0),
        row.cpuMsPerMib.toFixed(1),
        row.worstHealthMs.toFixed(0),
      ]),
    ),
    "",
    `${burst.bodies} bodies of ${burst.mib} MiB at once from the $0.000001 caller, sent to the gateway at rest: statuses ${
      [...new Set(burst.statuses)].join(", ")
    }, ${burst.cpuMs.toFixed(0)} ms of gateway CPU in all, ${
      burst.wallMs.toFixed(0)
    } ms until the last answer (the bench sending 310 MiB included); VmRSS ${
      burst.rssBeforeMiB.toFixed(0)
    } MiB before, peak ${burst.peakMiB.toFixed(0)} MiB, ${
      burst.rssAfterMiB.toFixed(0)
    } MiB 5 s after. After every row (the funded bodies parsed and forwarded): ${
      results.rssAfterRowsMiB.toFixed(0)
    } MiB.`,
    "",
  ];
}

const LABELS: Record<Target, string> = {
  direct: "direct (simulator)",
  floor: "floor (bare Deno relay)",
  gateway: "mcpkit gateway",
  gateway_tmpfs: "mcpkit gateway, KV on tmpfs",
  portkey: "Portkey 1.15.2 (Node)",
};

function table(header: string[], rows: string[][]): string {
  return [
    `| ${header.join(" | ")} |`,
    `|${header.map(() => "---").join("|")}|`,
    ...rows.map((row) => `| ${row.join(" | ")} |`),
  ].join("\n");
}

function verdict(ok: boolean): string {
  return ok ? "**met**" : "**missed**";
}

/** One target line: what, the goal, measured, verdict. */
interface Check {
  what: string;
  goal: string;
  measured: string;
  ok: boolean;
  /** Whether the figure is the judged gateway instance's (disk or tmpfs KV). */
  ofGateway?: boolean;
}

/**
 * Checks every target of the issue against a run.
 *
 * @param run The run.
 * @param gatewayTarget Which gateway instance to judge.
 * @returns One check per target.
 */
export function checks(
  run: RunResults,
  gatewayTarget: "gateway" | "gateway_tmpfs" = "gateway",
): Check[] {
  const zero = run.gateway.byLatency.find((l) => l.upstreamMs === 0)!;
  const at500 = zero.paced.find((p) => p.rate === 500)?.results;
  const added = (target: Target, field: "p50" | "p99") =>
    at500 ? at500[target][field] - at500.direct[field] : Number.NaN;
  const at1000 = zero.paced.find((p) => p.rate === 1000)?.results;
  const gw50 = added(gatewayTarget, "p50");
  const gw99At1000 = at1000
    ? at1000[gatewayTarget].p99 - at1000.direct.p99
    : Number.NaN;
  const pk50 = added("portkey", "p50");
  const floor50 = added("floor", "p50");
  const satGw = zero.saturation[gatewayTarget].rps;
  const satPk = zero.saturation.portkey.rps;
  const satDirect = zero.saturation.direct.rps;
  const cpuRatio = zero.saturationCpuMicros[gatewayTarget] /
    zero.saturationCpuMicros.floor;
  const ttft = run.gateway.ttft;
  const ttftAdded = ttft.gateway && ttft.direct
    ? ttft.gateway.p50 - ttft.direct.p50
    : Number.NaN;
  const rss = run.gateway.memory.gateway.peakMiB * 1.048576; // MiB → MB
  const m = run.mcp;
  const ratio = (a: number, b: number) => a / b;
  const hubRatio = ratio(m.hub.hub.p50, m.hub.direct.p50);
  const mcpRows = (["stdio", "http"] as const).flatMap((transport) =>
    (["legacy", "modern"] as const).flatMap((era) => {
      const ours = m.roundTrip[transport][era].mcpkit!;
      const sdk = m.roundTrip[transport][era].sdk!;
      const where = `${transport === "http" ? "HTTP" : "stdio"}, ${era}`;
      const latency = ratio(ours.p50, sdk.p50);
      const cpu = ratio(ours.cpuMicros, sdk.cpuMicros);
      return [{
        what: `MCP round trip p50, ${where}, MCPServer / bare SDK`,
        goal: "≤ 1.05×",
        measured: `${latency.toFixed(2)}×`,
        ok: latency <= 1.05,
      }, {
        what: `MCP server CPU per call, ${where}, MCPServer / bare SDK`,
        goal: "≤ 1.05×",
        measured: `${cpu.toFixed(2)}× (${ours.cpuMicros.toFixed(0)} vs ${
          sdk.cpuMicros.toFixed(0)
        } µs)`,
        ok: cpu <= 1.05,
      }];
    })
  );
  const coldRows = (["legacy", "modern"] as const).map((era) => {
    const cold = ratio(
      m.coldStart[era].mcpkit!.p50,
      m.coldStart[era].sdk!.p50,
    );
    return {
      what: `Cold start p50, stdio, ${era}, MCPServer / bare SDK`,
      goal: "≤ 1.05×",
      measured: `${cold.toFixed(2)}×`,
      ok: cold <= 1.05,
    };
  });
  return [
    {
      what: "CPU per non-streamed call, gateway / floor (saturation, 0 ms)",
      goal: "≤ 1.5×",
      measured: `${cpuRatio.toFixed(2)}× (${
        zero.saturationCpuMicros[gatewayTarget].toFixed(0)
      } vs ${zero.saturationCpuMicros.floor.toFixed(0)} µs)`,
      ofGateway: true,
      ok: cpuRatio <= 1.5,
    },
    {
      what: "Gateway added latency p50 at 500 req/s",
      goal: "≤ 0.3 ms",
      measured: `${ms(gw50)} ms (the floor adds ${ms(floor50)} ms)`,
      ofGateway: true,
      ok: gw50 <= 0.3,
    },
    {
      what: "Gateway p50 overhead against Portkey's (500 req/s)",
      goal: "≤ 1/4",
      measured: `${ms(gw50)} / ${ms(pk50)} ms = ${(gw50 / pk50).toFixed(2)}`,
      ofGateway: true,
      ok: gw50 <= pk50 / 4,
    },
    {
      what: "Gateway added latency p99 at 1,000 req/s",
      goal: "≤ 2 ms",
      measured: `${ms(gw99At1000)} ms`,
      ofGateway: true,
      ok: gw99At1000 <= 2,
    },
    {
      what: "Saturation throughput against Portkey",
      goal: "≥ 4×",
      measured: `${satGw.toFixed(0)} / ${satPk.toFixed(0)} req/s = ${
        (satGw / satPk).toFixed(2)
      }×`,
      ofGateway: true,
      ok: satGw >= 4 * satPk,
    },
    {
      what: "Saturation throughput against direct",
      goal: "≥ 25 %",
      measured: `${satGw.toFixed(0)} / ${satDirect.toFixed(0)} req/s = ${
        (100 * satGw / satDirect).toFixed(0)
      } %`,
      ofGateway: true,
      ok: satGw >= 0.25 * satDirect,
    },
    {
      what: "Streaming time-to-first-token overhead p50",
      goal: "≤ 0.5 ms",
      measured: `${ms(ttftAdded)} ms${
        ttft.floor && ttft.direct
          ? ` (the floor adds ${ms(ttft.floor.p50 - ttft.direct.p50)} ms)`
          : ""
      }`,
      ok: ttftAdded <= 0.5,
    },
    {
      what: "Gateway peak RSS under load (VmHWM)",
      goal: "≤ 100 MB",
      measured: `${rss.toFixed(0)} MB`,
      ok: rss <= 100,
    },
    ...mcpRows,
    {
      what: "Hub dispatch p50 / direct tool p50",
      goal: "≤ 1.1×",
      measured: `${hubRatio.toFixed(2)}×`,
      ok: hubRatio <= 1.1,
    },
    ...coldRows,
    ...streamChecks(run.streams ?? []),
  ];
}

function gatewaySection(run: RunResults): string {
  const out: string[] = [];
  for (const level of run.gateway.byLatency) {
    out.push(
      `### Fixed rates, upstream latency ${level.upstreamMs} ms\n`,
      "Latency in ms (wrk, paced). *Added* is the target's figure minus the direct figure at the same rate, same percentile; the floor is the bare Deno relay (`bench/gateway/floor.ts`).\n",
      table(
        [
          "offered req/s",
          "direct p50 / p99",
          "gateway p50 / p99",
          "floor added p50 / p99",
          "**gateway added p50 / p99**",
          "gateway added / floor added (p50)",
          "gateway (tmpfs KV) added p50 / p99",
          "Portkey p50 / p99",
          "Portkey added p50 / p99",
          "achieved req/s (direct / gw / gw tmpfs / Portkey)",
          "errors",
        ],
        level.paced.map(({ rate, results: r }) => [
          String(rate),
          `${ms(r.direct.p50)} / ${ms(r.direct.p99)}`,
          `${ms(r.gateway.p50)} / ${ms(r.gateway.p99)}`,
          `${ms(r.floor.p50 - r.direct.p50)} / ${
            ms(r.floor.p99 - r.direct.p99)
          }`,
          `**${ms(r.gateway.p50 - r.direct.p50)} / ${
            ms(r.gateway.p99 - r.direct.p99)
          }**`,
          `${
            ((r.gateway.p50 - r.direct.p50) / (r.floor.p50 - r.direct.p50))
              .toFixed(2)
          }×`,
          `${ms(r.gateway_tmpfs.p50 - r.direct.p50)} / ${
            ms(r.gateway_tmpfs.p99 - r.direct.p99)
          }`,
          `${ms(r.portkey.p50)} / ${ms(r.portkey.p99)}`,
          `${ms(r.portkey.p50 - r.direct.p50)} / ${
            ms(r.portkey.p99 - r.direct.p99)
          }`,
          [r.direct, r.gateway, r.gateway_tmpfs, r.portkey].map((x) =>
            x.rps.toFixed(0)
          ).join(" / "),
          String(
            r.direct.errors + r.gateway.errors + r.gateway_tmpfs.errors +
              r.portkey.errors,
          ),
        ]),
      ),
      "",
    );
  }
  out.push(
    "### Saturation throughput\n",
    "wrk unpaced, one thread; connections: 64 (0 ms upstream), 256 (50 ms upstream).\n",
    table(
      ["upstream", ...Object.values(LABELS).map((l) => `${l} req/s`), "errors"],
      run.gateway.byLatency.map((level) => [
        `${level.upstreamMs} ms`,
        ...(Object.keys(LABELS) as Target[]).map((t) =>
          `${level.saturation[t].rps.toFixed(0)} (p50 ${
            ms(level.saturation[t].p50)
          } ms)`
        ),
        String(
          (Object.keys(LABELS) as Target[]).reduce(
            (sum, t) => sum + level.saturation[t].errors,
            0,
          ),
        ),
      ]),
    ),
    "",
    "### CPU per call against the floor\n",
    "CPU time of each target's process during its unpaced run (`/proc/<pid>/stat`, user and system), divided by the calls it answered. The floor is `bench/gateway/floor.ts`: `Deno.serve` + `fetch` + `new Response(upstream.body)`, no auth, money or traces.\n",
    table(
      [
        "upstream",
        ...Object.values(LABELS).map((l) => `${l} µs`),
        "gateway / floor",
      ],
      run.gateway.byLatency.map((level) => [
        `${level.upstreamMs} ms`,
        ...(Object.keys(LABELS) as Target[]).map((t) =>
          (level.saturationCpuMicros?.[t] ?? NaN).toFixed(0)
        ),
        `${
          (level.saturationCpuMicros?.gateway /
            level.saturationCpuMicros?.floor).toFixed(2)
        }×`,
      ]),
    ),
    "",
    "### Streaming time to first token (0 ms upstream)\n",
    "Sequential streamed chat calls; time from sending the request to the first SSE event carrying content.\n",
    table(
      ["target", "n", "p50 ms", "p99 ms", "added p50 ms", "added / floor's"],
      Object.entries(run.gateway.ttft).map(([name, p]) => {
        const direct = run.gateway.ttft.direct.p50;
        const floor = run.gateway.ttft.floor;
        return [
          name,
          String(p.n),
          ms(p.p50),
          ms(p.p99),
          name === "direct" ? "" : ms(p.p50 - direct),
          name === "direct" || !floor
            ? ""
            : `${((p.p50 - direct) / (floor.p50 - direct)).toFixed(2)}×`,
        ];
      }),
    ),
    "",
    ...run.gateway.ttftNotes.map((note) => `- ${note}`),
    "",
    "### Memory under load\n",
    table(
      [
        "process",
        "RSS after start, idle (MiB)",
        "peak RSS (VmHWM) MiB",
        "highest sampled VmRSS MiB",
      ],
      (["gateway", "portkey"] as const).map((name) => [
        name === "gateway" ? "mcpkit gateway (KV on disk)" : LABELS.portkey,
        run.gateway.memory[name].idleMiB.toFixed(1),
        run.gateway.memory[name].peakMiB.toFixed(1),
        run.gateway.memory[name].maxRssMiB.toFixed(1),
      ]),
    ),
    "",
    "### CPU profile of the gateway at saturation\n",
    `V8's sampling profiler (\`--cpu-prof\`, no inspector attached) on a separate gateway while wrk ran unpaced for 6 s (${
      run.gateway.profiledRps.toFixed(0)
    } req/s under the profiler); the profile covers the process's whole life, start-up and idle included. Self time per function; the raw profile is \`bench/results/gateway.cpuprofile\` (open it in Chrome DevTools):\n`,
    table(
      ["function", "where", "self %", "mostly called from"],
      run.gateway.profile.map((h) => [
        `\`${h.name}\``,
        h.where ? `\`${h.where}\`` : "(native / V8)",
        h.selfPercent.toFixed(1),
        `\`${h.calledFrom}\``,
      ]),
    ),
    "",
  );
  if (run.gateway.ownProfile?.length) {
    out.push(
      "Our own code in the same profile (functions under `gateway/`), as shares of the busy samples (idle left out): self time, and time on the stack, which is what a step and everything it calls synchronously cost.\n",
      table(
        ["function", "where", "self %", "on the stack %"],
        run.gateway.ownProfile.map((h) => [
          `\`${h.name}\``,
          `\`${h.where}\``,
          h.selfPercent.toFixed(1),
          h.totalPercent.toFixed(1),
        ]),
      ),
      "",
    );
  }
  return out.join("\n");
}

/** The stream targets of issue-16 shape: ratios to the floor at the most streams all targets held. */
function streamChecks(rows: StreamsRow[]) {
  if (rows.length === 0) return [];
  const at = (target: string, n: number) =>
    rows.find((r) => r.target === target && r.streams === n);
  const counts = [...new Set(rows.map((r) => r.streams))].sort((a, b) => a - b);
  const n = Math.max(...counts.filter((c) => c <= 1000), counts[0]);
  const floor = at("floor (relay)", n)!;
  const pass = at("gateway, passthrough", n)!;
  const trans = at("gateway, translated", n)!;
  const held = Math.max(
    0,
    ...counts.filter((c) =>
      rows.filter((r) => r.streams === c && r.target.startsWith("gateway"))
        .every((r) => r.errors === 0)
    ),
  );
  const ratio = (a: number, b: number) => a / b;
  return [{
    what: `CPU per streamed chunk, passthrough, gateway / floor (${n} streams)`,
    goal: "≤ 2×",
    measured: `${ratio(pass.cpuPerChunkUs, floor.cpuPerChunkUs).toFixed(2)}× (${
      pass.cpuPerChunkUs.toFixed(0)
    } vs ${floor.cpuPerChunkUs.toFixed(0)} µs)`,
    ok: ratio(pass.cpuPerChunkUs, floor.cpuPerChunkUs) <= 2,
  }, {
    what: `CPU per streamed chunk, translated, gateway / floor (${n} streams)`,
    goal: "≤ 3×",
    measured: `${ratio(trans.cpuPerChunkUs, floor.cpuPerChunkUs).toFixed(2)}×`,
    ok: ratio(trans.cpuPerChunkUs, floor.cpuPerChunkUs) <= 3,
  }, {
    what: `RSS per open stream, gateway passthrough (${n} streams)`,
    goal: "≤ 64 KiB",
    measured: `${pass.rssPerStreamKiB.toFixed(0)} KiB (floor ${
      floor.rssPerStreamKiB.toFixed(0)
    })`,
    ok: pass.rssPerStreamKiB <= 64,
  }, {
    what: "Concurrent streams held by the gateway with 0 errors",
    goal: "≥ 2,000",
    measured: String(held),
    ok: held >= 2000,
  }];
}

function streamsSection(rows: StreamsRow[]): string {
  if (rows.length === 0) return "";
  const floorAt = (n: number) =>
    rows.find((r) => r.target === "floor (relay)" && r.streams === n);
  return [
    "### Concurrent streams\n",
    "N streamed chat calls open at once, 40 chunks each, one every 50 ms from the simulator (`bench/gateway/streams.ts`): the floor relay; the floor with each chunk passed through JavaScript (`FLOOR_JS=1`: read from the upstream and handed on through a byte stream, unparsed, the cheapest JavaScript relay found); then the gateway on the passthrough route (an OpenAI model on `/chat/completions`) and on a translated one (an Anthropic model on `/chat/completions`). CPU per chunk of the target process from `/proc/<pid>/stat`; RSS per open stream is the peak RSS growth over the run divided by N, after an unmeasured round of every target at the same N (without it, the heap the first gateway run grew was charged to it alone); the added gap is each inter-chunk delay minus the simulator's 50 ms.\n",
    table(
      [
        "streams",
        "target",
        "completed",
        "errors",
        "CPU µs/chunk",
        "CPU / floor",
        "RSS KiB/stream",
        "RSS / floor",
        "added gap p50 / p99 ms",
      ],
      rows.map((r) => {
        const floor = floorAt(r.streams);
        return [
          String(r.streams),
          r.target,
          String(r.completed),
          String(r.errors),
          // No stream completed: no figure (NaN is stored as null in JSON).
          fixed(r.cpuPerChunkUs, 1),
          floor && r.completed > 0
            ? (r.cpuPerChunkUs / floor.cpuPerChunkUs).toFixed(2)
            : "",
          r.rssPerStreamKiB.toFixed(0),
          floor && floor.rssPerStreamKiB > 0
            ? (r.rssPerStreamKiB / floor.rssPerStreamKiB).toFixed(2)
            : "",
          `${fixed(r.addedGapP50, 2)} / ${fixed(r.addedGapP99, 2)}`,
        ];
      }),
    ),
    "",
  ].join("\n");
}

function mcpSection(run: RunResults): string {
  const m = run.mcp;
  const row = (name: string, p: { n: number; p50: number; p99: number }) => [
    name,
    String(p.n),
    ms(p.p50),
    ms(p.p99),
  ];
  const serverName = {
    mcpkit: "MCPServer",
    sdk: "bare SDK McpServer",
    fastmcp: "fastmcp (Node)",
  } as const;
  return [
    "### Tool call round trip\n",
    "Sequential `tools/call` of `add` from the SDK v2 client (legacy: the `initialize` handshake; modern: pinned to 2026-07-28, stateless), after 100 warm-up calls; servers take turns in rounds of 50. Server CPU per call is read from `/proc/<pid>/stat` around each round. The bare SDK serves stdio with `serveStdio(factory)` and HTTP with `createMcpHandler(factory)` (legacy requests statelessly); `MCPServer` keeps legacy HTTP sessions.\n",
    table(
      [
        "transport",
        "era",
        "server",
        "n",
        "p50 ms",
        "p99 ms",
        "CPU µs/call",
        "p50 / SDK",
        "CPU / SDK",
      ],
      (["stdio", "http"] as const).flatMap((transport) =>
        (["legacy", "modern"] as const).flatMap((era) => {
          const byServer = m.roundTrip[transport][era];
          const sdk = byServer.sdk!;
          return (["mcpkit", "sdk", "fastmcp"] as const)
            .filter((server) => byServer[server])
            .map((server) => {
              const p = byServer[server]!;
              return [
                transport === "http" ? "Streamable HTTP" : "stdio",
                era,
                serverName[server],
                String(p.n),
                ms(p.p50),
                ms(p.p99),
                p.cpuMicros.toFixed(0),
                (p.p50 / sdk.p50).toFixed(2),
                (p.cpuMicros / sdk.cpuMicros).toFixed(2),
              ];
            });
        })
      ),
    ),
    "",
    "### Hub dispatch (MCPServer, stdio, legacy)\n",
    table(["call", "n", "p50 ms", "p99 ms"], [
      row("`add` directly", m.hub.direct),
      row("`calc` hub → `add`", m.hub.hub),
    ]),
    "",
    "### Cold start (spawn to first `tools/list` answer, stdio)\n",
    "A modern client pinned to 2026-07-28 probes with `server/discover` on a short-lived sibling process first (the SDK's stdio client does so), for every server alike.\n",
    table(
      ["era", "server", "n", "p50 ms", "p99 ms"],
      (["legacy", "modern"] as const).flatMap((era) =>
        (["mcpkit", "sdk", "fastmcp"] as const)
          .filter((server) => m.coldStart[era][server])
          .map((server) => [
            era,
            ...row(serverName[server], m.coldStart[era][server]!),
          ])
      ),
    ),
    "",
    "Server commands (stdio form):\n",
    ...Object.entries(m.commands).map(([name, command]) =>
      `- ${name}: \`${command}\``
    ),
    "",
  ].join("\n");
}

/**
 * Renders `BENCHMARKS.md`.
 *
 * @param run The run.
 * @param closingNote The hand-written closing note (markdown).
 * @param chartPath The chart's path relative to the repository root.
 * @returns Markdown.
 */
export function renderReport(
  run: RunResults,
  closingNote: string,
  chartPath: string,
): string {
  const f = run.facts;
  const disk = checks(run, "gateway");
  const tmpfs = checks(run, "gateway_tmpfs");
  return [
    "# Benchmarks",
    "",
    `Generated by \`${f.command}\` (\`bench/run.ts\`) on ${f.startedAt}; the run took ${
      f.minutes.toFixed(1)
    } minutes${
      f.code ? `, on ${f.code}` : ""
    }. Every figure below comes from that one run. Raw results: \`bench/results/latest.json\` (not committed).`,
    "",
    ...(run.cost ? renderCostSummary(run.cost) : []),
    "## Machine",
    "",
    ...f.machine.map((line) => `- ${line}`),
    `- Load average before the run: \`${f.loadBefore}\`; after: \`${f.loadAfter}\`. The two cores are shared with other engineers' work (test suites come and go), and wrk, the simulator and the target all run on them, so absolute figures carry noise; every comparison is side by side, with the targets taking turns at each step.`,
    "",
    "## Versions",
    "",
    ...Object.entries(f.versions).map(([name, version]) =>
      `- ${name}: ${version}`
    ),
    "",
    "## Method",
    "",
    ...f.settings.map((line) => `- ${line}`),
    "",
    ...(run.cost ? renderCost(run.cost) : []),
    "## Other targets",
    "",
    "Goals of earlier issues, judged on the gateway bench below (warm: every target is warmed up first).",
    "",
    table(
      ["target", "goal", "measured", "verdict", "gateway with KV on tmpfs"],
      disk.map((c, i) => [
        c.what,
        c.goal,
        c.measured,
        verdict(c.ok),
        tmpfs[i].ofGateway
          ? `${tmpfs[i].measured} (${tmpfs[i].ok ? "met" : "missed"})`
          : "",
      ]),
    ),
    "",
    "## Gateway",
    "",
    "Every figure in this section and the next is warm: each target is warmed up before it is measured (the concurrent streams after an unmeasured round at the same count, the stores after 300 calls each). Cold figures are in [Gateway cost](#gateway-cost).",
    "",
    `![Latency against offered load](${chartPath})`,
    "",
    gatewaySection(run),
    streamsSection(run.streams ?? []),
    ...(run.stores ? renderStores(run.stores) : []),
    ...(run.largeInputs ? renderLargeInputs(run.largeInputs) : []),
    "## MCP",
    "",
    mcpSection(run),
    "## Closing note",
    "",
    closingNote.trim(),
    "",
  ].join("\n");
}

/** A figure with `digits` decimals, or "—" when there is none (NaN, or null from JSON). */
function fixed(value: number | null, digits: number): string {
  return value === null || !Number.isFinite(value)
    ? "—"
    : value.toFixed(digits);
}

/**
 * The cost bench's figures (`cost.ts`) in `BENCHMARKS.md`: issue 29's
 * targets with a verdict on each store, then every figure beside the bare
 * Deno relay's, as a ratio to it, cold and warm.
 *
 * @module
 */
import type { CostResults } from "./cost.ts";
import type { StreamCost } from "./cost_streams.ts";
import { type CostTarget, type Round, ROUNDS } from "./cost_targets.ts";

const NAMES: Record<CostTarget, string> = {
  relay: "relay (bare Deno)",
  gateway: "gateway, KV file",
  gateway_pg: "gateway, PostgreSQL",
  portkey: "Portkey 1.15.2 (Node)",
};

const MIB_TO_MB = 1.048576;

function table(header: string[], rows: string[][]): string[] {
  return [
    `| ${header.join(" | ")} |`,
    `|${header.map(() => "---").join("|")}|`,
    ...rows.map((row) => `| ${row.join(" | ")} |`),
  ];
}

/** A figure with `digits` decimals, or "—" when there is none (NaN, or null from JSON). */
function fixed(value: number | null | undefined, digits: number): string {
  return value === null || value === undefined || !Number.isFinite(value)
    ? "—"
    : value.toFixed(digits);
}

/** `value / relay` as `2.34×`, or "—" when the relay's figure is not positive. */
function ratio(
  value: number | null | undefined,
  relay: number | null | undefined,
): string {
  if (
    value === null || value === undefined || relay === null ||
    relay === undefined || !Number.isFinite(value) || !(relay > 0)
  ) return "—";
  return `${(value / relay).toFixed(2)}×`;
}

function streamRow(
  cost: CostResults,
  route: StreamCost["route"],
  target: CostTarget,
  round: Round,
): StreamCost | undefined {
  return cost.streams.find((row) =>
    row.route === route && row.target === target && row.round === round
  );
}

/** One of issue 29's targets, judged on each store. */
export interface CostCheck {
  /** The figure. */
  what: string;
  /** The goal. */
  goal: string;
  /** Measured on each gateway (`gateway`: the KV file; `gateway_pg`: PostgreSQL), absent when not measured. */
  byStore: Partial<
    Record<"gateway" | "gateway_pg", { measured: string; ok: boolean }>
  >;
}

/**
 * Judges issue 29's targets on a run: CPU per call ≤ 1.5× the relay's, CPU
 * per chunk ≤ 2×, RSS growth over the first streams (cold) ≤ 2×, peak RSS
 * under the standard load under 100 MB, on each store, cold and warm.
 *
 * @param cost The cost bench's results.
 * @returns One check per target and round.
 */
export function costChecks(cost: CostResults): CostCheck[] {
  const stores = (["gateway", "gateway_pg"] as const).filter((store) =>
    cost.targets.includes(store)
  );
  const judge = (
    measure: (
      store: "gateway" | "gateway_pg",
    ) => { measured: string; ok: boolean } | undefined,
  ) =>
    Object.fromEntries(
      stores.flatMap((store) => {
        const verdict = measure(store);
        return verdict ? [[store, verdict]] : [];
      }),
    );
  const checks: CostCheck[] = [];
  for (const round of ROUNDS) {
    checks.push({
      what: `CPU per non-streamed call, gateway / relay, ${round}`,
      goal: "≤ 1.5×",
      byStore: judge((store) => {
        const mine = cost.cpuPerCall[round][store];
        const relay = cost.cpuPerCall[round].relay;
        if (mine === undefined || relay === undefined) return undefined;
        const server = cost.databaseCpuPerCall?.[round][store];
        return {
          measured: `${ratio(mine, relay)} (${fixed(mine, 0)} vs ${
            fixed(relay, 0)
          } µs${
            server === undefined
              ? ""
              : `; the database server +${fixed(server, 0)} µs`
          })`,
          ok: mine / relay <= 1.5,
        };
      }),
    });
  }
  for (const route of ["passthrough", "translated"] as const) {
    for (const round of ROUNDS) {
      checks.push({
        what:
          `CPU per streamed chunk, ${route}, gateway / relay, ${round} (${cost.options.streams} streams)`,
        goal: "≤ 2×",
        byStore: judge((store) => {
          const mine = streamRow(cost, route, store, round);
          const relay = streamRow(cost, route, "relay", round);
          if (!mine || !relay) return undefined;
          return {
            measured: `${ratio(mine.cpuPerChunkUs, relay.cpuPerChunkUs)} (${
              fixed(mine.cpuPerChunkUs, 0)
            } vs ${fixed(relay.cpuPerChunkUs, 0)} µs${
              mine.databaseCpuPerChunkUs === undefined
                ? ""
                : `; the database server +${
                  fixed(mine.databaseCpuPerChunkUs, 0)
                } µs`
            })`,
            ok: mine.cpuPerChunkUs !== null &&
              relay.cpuPerChunkUs !== null &&
              mine.cpuPerChunkUs <= 2 * relay.cpuPerChunkUs,
          };
        }),
      });
    }
  }
  for (const route of ["passthrough", "translated"] as const) {
    checks.push({
      what:
        `RSS growth over the first ${cost.options.streams} concurrent streams (cold), ${route}, gateway / relay`,
      goal: "≤ 2×",
      byStore: judge((store) => {
        const mine = streamRow(cost, route, store, "cold");
        const relay = streamRow(cost, route, "relay", "cold");
        if (!mine || !relay) return undefined;
        return {
          measured: `${ratio(mine.growthMiB, relay.growthMiB)} (+${
            fixed(mine.growthMiB, 0)
          } vs +${fixed(relay.growthMiB, 0)} MiB; gateway peak ${
            fixed(mine.peakMiB, 0)
          } MiB)`,
          ok: mine.completed === mine.streams &&
            mine.growthMiB <= 2 * relay.growthMiB,
        };
      }),
    });
  }
  checks.push({
    what:
      "Peak RSS under the standard load (VmHWM after the CPU runs: cold and warm calls at concurrency 32, 2 s unpaced at 64 connections)",
    goal: "< 100 MB",
    byStore: judge((store) => {
      const memory = cost.memory[store];
      if (!memory) return undefined;
      const mb = memory.standardPeakMiB * MIB_TO_MB;
      return {
        measured: `${fixed(mb, 0)} MB (relay ${
          fixed((cost.memory.relay?.standardPeakMiB ?? NaN) * MIB_TO_MB, 0)
        } MB)`,
        ok: mb < 100,
      };
    }),
  });
  return checks;
}

/**
 * Issue 29's targets, met or missed on each store: the table at the top of
 * `BENCHMARKS.md`.
 *
 * @param cost The cost bench's results.
 * @returns Markdown lines.
 */
export function renderCostSummary(cost: CostResults): string[] {
  const cell = (verdict?: { measured: string; ok: boolean }) =>
    verdict
      ? [verdict.measured, verdict.ok ? "**met**" : "**missed**"]
      : ["not measured", ""];
  return [
    "## Issue 29's targets in this run",
    "",
    "Every figure is the gateway's against the bare Deno relay (`bench/gateway/floor.ts`) measured in the same run, on fresh processes of each, taking turns. **Cold** is the first traffic a process meets after start, with no warm-up; **warm** follows a warm-up. Details and every other figure: section [Gateway cost](#gateway-cost).",
    "",
    ...table(
      [
        "target",
        "goal",
        "KV file: measured",
        "KV file",
        "PostgreSQL: measured",
        "PostgreSQL",
      ],
      costChecks(cost).map((check) => [
        check.what,
        check.goal,
        ...cell(check.byStore.gateway),
        ...cell(check.byStore.gateway_pg),
      ]),
    ),
    "",
    ...(cost.postgresSkipped
      ? [
        `The gateway on PostgreSQL was not measured: ${cost.postgresSkipped}.`,
        "",
      ]
      : []),
  ];
}

/** The columns of a latency table: a percentile, and what it adds over the simulator. */
const LATENCY_COLUMNS = [
  "round",
  "target",
  "calls",
  "p50 ms",
  "p99 ms",
  "added p50 ms",
  "added p99 ms",
  "added p50 / relay's",
  "p99 / relay's",
];

function latencyTable(cost: CostResults): string[] {
  const rows: string[][] = [];
  for (const round of ROUNDS) {
    const figures = cost.latency[round];
    const direct = figures.direct;
    const relay = figures.relay;
    rows.push([
      round,
      "direct (simulator)",
      String(direct.requests),
      fixed(direct.p50, 3),
      fixed(direct.p99, 3),
      "",
      "",
      "",
      "",
    ]);
    for (const target of cost.targets) {
      const mine = figures[target];
      if (!mine) continue;
      const added50 = mine.p50 - direct.p50;
      const added99 = mine.p99 - direct.p99;
      rows.push([
        round,
        NAMES[target],
        String(mine.requests),
        fixed(mine.p50, 3),
        fixed(mine.p99, 3),
        fixed(added50, 3),
        fixed(added99, 3),
        relay ? ratio(added50, relay.p50 - direct.p50) : "—",
        ratio(mine.p99, relay?.p99),
      ]);
    }
  }
  return table(LATENCY_COLUMNS, rows);
}

function throughputTable(cost: CostResults): string[] {
  const relay = cost.throughput.relay?.bestRate;
  return table(
    [
      "target",
      "best rate held (req/s)",
      "p99 there (ms)",
      "/ relay",
      "first rate not held: p99 ms, achieved req/s, errors",
    ],
    cost.targets.flatMap((target) => {
      const figures = cost.throughput[target];
      if (!figures) return [];
      const failed = figures.steps.find((step) => !step.held);
      return [[
        NAMES[target],
        `${figures.capped ? "≥ " : ""}${figures.bestRate}`,
        fixed(figures.p99AtBest, 2),
        ratio(figures.bestRate, relay),
        failed
          ? `${failed.rate}: ${fixed(failed.p99, 2)}, ${
            fixed(failed.rps, 0)
          }, ${failed.errors}`
          : "none (the search's top rate held)",
      ]];
    }),
  );
}

function cpuTable(cost: CostResults): string[] {
  const others = cost.targets.filter((target) => target !== "relay");
  const rows: string[][] = [];
  const add = (
    figure: string,
    round: Round,
    value: (target: CostTarget) => number | null | undefined,
    database: (target: CostTarget) => number | null | undefined,
  ) => {
    const relay = value("relay");
    rows.push([
      figure,
      round,
      fixed(relay, 1),
      ...others.map((target) => {
        const mine = value(target);
        const server = database(target);
        return mine === undefined
          ? ""
          : `${fixed(mine, 1)} (${ratio(mine, relay)})${
            server === undefined ? "" : `; PostgreSQL +${fixed(server, 1)}`
          }`;
      }),
    ]);
  };
  for (const round of ROUNDS) {
    add(
      "per non-streamed call",
      round,
      (target) => cost.cpuPerCall[round][target],
      (target) => cost.databaseCpuPerCall?.[round][target],
    );
  }
  for (const route of ["passthrough", "translated"] as const) {
    for (const round of ROUNDS) {
      add(
        `per streamed chunk, ${route}`,
        round,
        (target) => streamRow(cost, route, target, round)?.cpuPerChunkUs,
        (target) =>
          streamRow(cost, route, target, round)?.databaseCpuPerChunkUs,
      );
    }
  }
  return table(
    [
      "CPU µs",
      "round",
      NAMES.relay,
      ...others.map((target) => `${NAMES[target]} (/ relay)`),
    ],
    rows,
  );
}

function memoryTable(cost: CostResults): string[] {
  const relay = cost.memory.relay;
  return table(
    [
      "target",
      "RSS at rest MiB",
      "/ relay",
      "peak RSS, standard load MiB",
      "/ relay",
      "peak RSS after the throughput search MiB",
    ],
    cost.targets.flatMap((target) => {
      const memory = cost.memory[target];
      if (!memory) return [];
      return [[
        NAMES[target],
        fixed(memory.restMiB, 1),
        ratio(memory.restMiB, relay?.restMiB),
        fixed(memory.standardPeakMiB, 1),
        ratio(memory.standardPeakMiB, relay?.standardPeakMiB),
        fixed(memory.searchPeakMiB, 1),
      ]];
    }),
  );
}

function streamsTable(cost: CostResults): string[] {
  const rows: string[][] = [];
  for (const route of ["passthrough", "translated"] as const) {
    for (const round of ROUNDS) {
      const relay = streamRow(cost, route, "relay", round);
      for (const target of cost.targets) {
        const row = streamRow(cost, route, target, round);
        if (!row) continue;
        rows.push([
          route,
          round,
          NAMES[target],
          `${row.completed} / ${row.streams}`,
          fixed(row.cpuPerChunkUs, 1),
          ratio(row.cpuPerChunkUs, relay?.cpuPerChunkUs),
          fixed(row.rssBeforeMiB, 1),
          `+${fixed(row.growthMiB, 1)}`,
          ratio(row.growthMiB, relay?.growthMiB),
          fixed(row.peakMiB, 1),
          `${fixed(row.addedGapP50, 2)} / ${fixed(row.addedGapP99, 2)}`,
          `${ratio(row.addedGapP50, relay?.addedGapP50)} / ${
            ratio(row.addedGapP99, relay?.addedGapP99)
          }`,
        ]);
      }
    }
  }
  return table([
    "route",
    "round",
    "target",
    "completed",
    "CPU µs/chunk",
    "/ relay",
    "RSS before MiB",
    "RSS growth MiB",
    "/ relay",
    "peak RSS over the round MiB",
    "added gap p50 / p99 ms",
    "/ relay's",
  ], rows);
}

function ttftTable(cost: CostResults): string[] {
  const rows: string[][] = [];
  for (const round of ROUNDS) {
    const figures = cost.ttft[round];
    const direct = figures.direct;
    const relay = figures.relay;
    for (const name of ["direct", ...cost.targets] as const) {
      const p = figures[name];
      if (!p) continue;
      const added50 = direct ? p.p50 - direct.p50 : NaN;
      const added99 = direct ? p.p99 - direct.p99 : NaN;
      const isDirect = name === "direct";
      rows.push([
        round,
        isDirect ? "direct (simulator)" : NAMES[name],
        String(p.n),
        fixed(p.p50, 2),
        fixed(p.p99, 2),
        isDirect ? "" : fixed(added50, 2),
        isDirect ? "" : fixed(added99, 2),
        isDirect || !relay || !direct
          ? ""
          : ratio(added50, relay.p50 - direct.p50),
        isDirect ? "" : ratio(p.p99, relay?.p99),
      ]);
    }
  }
  return table(LATENCY_COLUMNS, rows);
}

/**
 * The "Gateway cost" section of `BENCHMARKS.md`: every figure of issue 29
 * beside the relay's, cold and warm.
 *
 * @param cost The cost bench's results.
 * @returns Markdown lines.
 */
export function renderCost(cost: CostResults): string[] {
  const o = cost.options;
  return [
    "## Gateway cost",
    "",
    `\`bench/gateway/cost.ts\`. Each workload below starts its own fresh processes of every target (the relay, the gateway on a fresh KV file, the gateway on a fresh PostgreSQL 15 database, Portkey), in front of one simulator that is warm throughout. The targets take turns. **Cold** is the workload run first on the fresh processes; **warm** is the same workload again on the same processes after a warm-up (2 s of unpaced wrk at 64 connections for non-streamed calls, ten calls each for time to first token, the cold round itself for concurrent streams). Ratios are to the relay's figure in the same round; "—" where the relay's is not positive. A p50 is compared as latency added over the simulator called directly; a p99, whose added part is within the shared machine's noise, as the whole latency.`,
    "",
    "### Added latency at concurrency 1",
    "",
    `\`wrk -t1 -c1 -d${o.latencyS}s\` unpaced: one connection, sequential non-streamed calls. *Added* is the target's percentile minus the simulator's, called directly in the same round.`,
    "",
    ...latencyTable(cost),
    "",
    "### Best throughput with p99 under 10 ms (warm)",
    "",
    `Paced wrk (64 connections, ${o.searchStepS} s a step) on the warm processes of the CPU workload, the offered rate stepped through ${
      o.searchRates.join(", ")
    } req/s, the targets taking turns at each rate. A rate is held when p99 stays under 10 ms, no call fails and 95 % of it is achieved. A step that fails is run once more; a second failure ends that target's search. "≥" marks a target that held the top rate.`,
    "",
    ...throughputTable(cost),
    "",
    "### CPU per request",
    "",
    `CPU time of the target's process (\`/proc/<pid>/stat\`, user and system, every thread) over the workload, divided by the calls answered or the chunks relayed, read 300 ms after the last answer so the settles written behind it count. The gateway on PostgreSQL also spends the database server's CPU (its postmaster and backends, from \`/proc\`), shown after "PostgreSQL +" and left out of the ratio, as the KV file's SQLite thread is inside the gateway's process and in it. Non-streamed: ${o.cpuCalls} calls at concurrency 32 from a Deno client, cold; warm is two such runs each after the warm-up, in turns and in opposite orders. Streamed: ${o.streams} streams open at once, 40 chunks each (the translated route is an Anthropic model on \`/chat/completions\`; the relay and Portkey pass an OpenAI stream through in both).`,
    "",
    ...cpuTable(cost),
    "",
    "### Memory",
    "",
    "RSS at rest: `/proc/<pid>/status` once the process listens, a second after start, before any traffic. The standard load is the non-streamed CPU workload (cold run, 2 s unpaced at 64 connections, two warm runs at concurrency 32); its peak is VmHWM after it, and again after the throughput search.",
    "",
    ...memoryTable(cost),
    "",
    "### Streams: CPU per chunk, RSS growth, gaps",
    "",
    `${o.streams} streamed chat calls open at once, 40 chunks 50 ms apart from the simulator. RSS growth is the process's peak RSS over the round (VmHWM, reset as the round begins by writing \`5\` to \`/proc/<pid>/clear_refs\`) minus its RSS just before the round; cold, that is what the first burst a fresh process meets costs it. The added gap is each delay between two events minus the simulator's 50 ms.`,
    "",
    ...streamsTable(cost),
    "",
    "### Streaming time to first token",
    "",
    `Sequential streamed chat calls, timed from sending the request to the first SSE event with content: ${o.ttftRounds.cold} each on fresh processes (cold), then ${o.ttftRounds.warm} each after ten warm-up calls (warm), the simulator called directly in the same turns.`,
    "",
    ...ttftTable(cost),
    "",
    ...(cost.postgresSkipped
      ? [
        `- The gateway on PostgreSQL was not measured: ${cost.postgresSkipped}.`,
      ]
      : []),
    ...cost.notes.map((note) => `- ${note}`),
    "",
  ];
}

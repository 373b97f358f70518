/**
 * The gateway's cost, as the field's independent harnesses report it (issue
 * 29), side by side in one run with the bare Deno relay (`floor.ts`), the
 * gateway on a KV file, the gateway on PostgreSQL and Portkey taking turns:
 *
 * 1. latency added at concurrency 1 (`wrk -c1`, sequential calls), p50 and
 *    p99, each target's minus the simulator's called directly;
 * 2. the best offered rate each holds with p99 under 10 ms (paced wrk, the
 *    rate stepped up until p99 reaches 10 ms);
 * 3. CPU per non-streamed call (a fixed number of calls at concurrency 32)
 *    and per streamed chunk (passthrough and translated), from
 *    `/proc/<pid>/stat`;
 * 4. RSS at rest and at peak under the standard load, and the RSS growth
 *    over the first 1,000 concurrent streams;
 * 5. streaming time to first token and the gap between chunks.
 *
 * Each workload starts its own fresh processes, so every figure is measured
 * twice on the same processes: **cold**, the first traffic after start with
 * no warm-up, and **warm**, after a warm-up. Only the simulator is warm in
 * both (it is the upstream, not a target).
 *
 * `deno run -A bench/gateway/cost.ts [--quick]` prints the figures as JSON
 * (`deno task bench` runs it and renders them in `BENCHMARKS.md`).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { POSTGRES_MISSING, startPostgres } from "../../tests/_postgres.ts";
import { NODE_DIR } from "../_deps.ts";
import { findProcess, readFamilyCpuMicros } from "../_process.ts";
import {
  type CallsFigures,
  callsPhase,
  type LatencyFigures,
  latencyPhase,
} from "./cost_calls.ts";
import {
  type StreamCost,
  streamsPhase,
  type TtftFigures,
  ttftPhase,
} from "./cost_streams.ts";
import {
  type Context,
  COST_TARGETS,
  type CostOptions,
  type CostTarget,
  directRequest,
  WARMUP,
} from "./cost_targets.ts";
import { startStreamSimulator } from "./streams.ts";
import { startSimulatorProcess } from "./targets.ts";
import { runWrk } from "./wrk.ts";

/** Everything the cost bench measured. */
export interface CostResults {
  /** The targets measured (`gateway_pg` absent without PostgreSQL). */
  targets: CostTarget[];
  /** Why the gateway on PostgreSQL was not measured, when it was not. */
  postgresSkipped?: string;
  /** Targets that could not do a workload, and why. */
  notes: string[];
  /** What was run, for the method section. */
  options: Omit<CostOptions, "nodeDir" | "workDir">;
  /** Concurrency 1: the simulator directly and each target, per round. */
  latency: LatencyFigures;
  /** Streaming time to first token, per round. */
  ttft: TtftFigures;
  /** CPU per non-streamed call, µs, per round. */
  cpuPerCall: CallsFigures["cpuPerCall"];
  /** The database server's CPU per call, µs, per round (absent from runs before it was measured). */
  databaseCpuPerCall?: CallsFigures["databaseCpuPerCall"];
  /** Best rate with p99 under 10 ms (warm). */
  throughput: CallsFigures["throughput"];
  /** Memory through the non-streamed workload. */
  memory: CallsFigures["memory"];
  /** Concurrent streams, per route, target and round. */
  streams: StreamCost[];
}

/**
 * Runs the cost bench: each workload on fresh processes of every target,
 * cold then warm.
 *
 * @param options Durations, counts and directories.
 * @param log Progress lines.
 * @returns The measurements.
 */
export async function benchCost(
  options: CostOptions,
  log: (line: string) => void = () => {},
): Promise<CostResults> {
  const postgres = POSTGRES_MISSING ? undefined : await startPostgres();
  const targets = COST_TARGETS.filter((name) =>
    name !== "gateway_pg" || postgres
  );
  const context: Context = { options, log, notes: [] };
  if (postgres) {
    // The server (postmaster) forks a backend per connection: its CPU and
    // its children's is the database's.
    const postmaster = await findProcess((args) =>
      args[0].endsWith("/postgres") &&
      args.includes(String(postgres.port)) && args.includes("-p")
    );
    if (postmaster === undefined) {
      await postgres.stop();
      throw new Error(
        `Cannot find the PostgreSQL server on port "${postgres.port}" in /proc`,
      );
    }
    context.postgres = {
      createDatabase: (name) => postgres.createDatabase(name),
      cpuMicros: () => readFamilyCpuMicros(postmaster),
    };
  }
  const sim = await startSimulatorProcess(0);
  try {
    // The simulator is the upstream, not a target: warm it up once.
    await runWrk(directRequest(sim, false), WARMUP, options.workDir);
    log("cost bench: concurrency 1");
    const latency = await latencyPhase(targets, sim, context);
    log("cost bench: time to first token");
    const ttft = await ttftPhase(targets, sim, context);
    log("cost bench: CPU per call, memory, best rate with p99 < 10 ms");
    const calls = await callsPhase(targets, sim, context);
    const streamSim = await startStreamSimulator();
    const streams: StreamCost[] = [];
    try {
      for (const route of ["passthrough", "translated"] as const) {
        log(`cost bench: ${options.streams} concurrent streams, ${route}`);
        streams.push(
          ...await streamsPhase(
            route,
            // Portkey has no translated route of ours to take.
            targets.filter((name) =>
              route === "passthrough" || name !== "portkey"
            ),
            streamSim,
            context,
          ),
        );
      }
    } finally {
      await streamSim.child.stop();
    }
    const { nodeDir: _nodeDir, workDir: _workDir, ...settings } = options;
    return {
      targets: [...targets],
      ...(POSTGRES_MISSING ? { postgresSkipped: POSTGRES_MISSING } : {}),
      notes: context.notes,
      options: settings,
      latency,
      ttft,
      ...calls,
      streams,
    };
  } finally {
    await sim.child.stop();
    await postgres?.stop();
  }
}

/**
 * The cost bench's settings for a full or a quick run.
 *
 * @param quick Short runs, for trying the bench itself.
 * @param dirs Where Portkey is installed, and a scratch directory.
 * @returns The options.
 */
export function costOptions(
  quick: boolean,
  dirs: { nodeDir: string; workDir: string },
): CostOptions {
  return {
    latencyS: quick ? 1 : 3,
    ttftRounds: quick ? { cold: 20, warm: 30 } : { cold: 100, warm: 200 },
    cpuCalls: quick ? 600 : 3000,
    searchRates: quick ? [500, 1000, 2000, 4000] : [
      50,
      100,
      150,
      250,
      500,
      750,
      1000,
      1500,
      2000,
      2500,
      3000,
      4000,
      5000,
      6000,
      8000,
      10000,
      12500,
    ],
    searchStepS: quick ? 1 : 3,
    streams: quick ? 100 : 1000,
    ...dirs,
  };
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { quick: { type: "boolean", default: false } },
  });
  const workDir = await Deno.makeTempDir({ prefix: "mcpkit-cost-" });
  try {
    const results = await benchCost(
      costOptions(values.quick, { nodeDir: NODE_DIR, workDir }),
      (line) => console.error(line),
    );
    console.log(JSON.stringify(results, null, 2));
  } finally {
    await Deno.remove(workDir, { recursive: true });
  }
}

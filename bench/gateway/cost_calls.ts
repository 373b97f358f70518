/**
 * The non-streamed workloads of the cost bench (`cost.ts`), each on fresh
 * processes of every target, cold then warm: latency added at concurrency 1
 * (`wrk -c1`); CPU per call at concurrency 32 with RSS at rest and after that
 * load; then, on the same warm processes, the best offered rate each target
 * holds with p99 under 10 ms.
 *
 * @module
 */
import { readCpuMicros, readMemory } from "../_process.ts";
import {
  chatRequest,
  type Context,
  type CostTarget,
  directRequest,
  type Round,
  ROUNDS,
  type Running,
  WARMUP,
  withTargets,
} from "./cost_targets.ts";
import type { SimulatorProcess } from "./targets.ts";
import { runWrk, type WrkRequest, type WrkResult } from "./wrk.ts";

/** The throughput search's verdict for one target. */
export interface Throughput {
  /** The highest offered rate held (p99 under 10 ms, no errors, 95 % of it achieved), req/s; 0 if none. */
  bestRate: number;
  /** p99 at that rate, ms. */
  p99AtBest: number;
  /** Whether the search ended at its top rate without a failure (the figure is a lower bound). */
  capped: boolean;
  /** Every step run: rate, p99, achieved rate, errors, held. */
  steps: {
    rate: number;
    p99: number;
    rps: number;
    errors: number;
    held: boolean;
  }[];
}

/** Memory of one target through the non-streamed workload, MiB. */
export interface CostMemory {
  /** RSS after start, before any traffic. */
  restMiB: number;
  /** Peak RSS (VmHWM) after the standard load: the cold and warm CPU runs and the warm-up. */
  standardPeakMiB: number;
  /** Peak RSS after the throughput search as well. */
  searchPeakMiB: number;
}

/** Concurrency 1 per round: the simulator directly and each target. */
export type LatencyFigures = Record<
  Round,
  { direct: WrkResult } & Partial<Record<CostTarget, WrkResult>>
>;

/** What the CPU workload measured. */
export interface CallsFigures {
  /** CPU per non-streamed call, µs, per round. */
  cpuPerCall: Record<Round, Partial<Record<CostTarget, number>>>;
  /** The database server's CPU per call, µs, per round (the gateway on PostgreSQL). */
  databaseCpuPerCall: Record<Round, Partial<Record<CostTarget, number>>>;
  /** Best rate with p99 under 10 ms (warm). */
  throughput: Partial<Record<CostTarget, Throughput>>;
  /** Memory through the non-streamed workload. */
  memory: Partial<Record<CostTarget, CostMemory>>;
}

const BATCH_CONCURRENCY = 32;
/** How long after a CPU run its CPU is read: the settles written behind the answers end within it. */
const SETTLE_MS = 300;
const P99_LIMIT_MS = 10;

/**
 * Sends `calls` requests, `concurrency` at a time, from this process.
 *
 * @returns How many answered 2xx.
 */
async function sendCalls(
  request: WrkRequest,
  calls: number,
  concurrency: number,
): Promise<{ ok: number; failed: number }> {
  let next = 0;
  let ok = 0;
  const worker = async () => {
    while (next < calls) {
      next++;
      try {
        const response = await fetch(request.url, {
          method: "POST",
          headers: request.headers,
          body: request.body,
        });
        await response.arrayBuffer();
        if (response.ok) ok++;
      } catch {
        // Counted as failed below.
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { ok, failed: calls - ok };
}

/**
 * Concurrency 1: `wrk -c1` on each fresh target, cold, then warm, with the
 * simulator called directly before the targets in each round.
 *
 * @param names The targets.
 * @param sim The simulator (warm).
 * @param context Settings and log.
 * @returns p50, p99 and calls per round and target.
 */
export function latencyPhase(
  names: readonly CostTarget[],
  sim: SimulatorProcess,
  context: Context,
): Promise<LatencyFigures> {
  const { workDir, latencyS } = context.options;
  const sequential = (request: WrkRequest) =>
    runWrk(request, { connections: 1, durationS: latencyS }, workDir);
  return withTargets(names, sim, context, {}, async (running) => {
    const result = {} as LatencyFigures;
    for (const round of ROUNDS) {
      if (round === "warm") {
        for (const target of running) {
          await runWrk(chatRequest(target, false), WARMUP, workDir);
        }
      }
      const figures: LatencyFigures[Round] = {
        direct: await sequential(directRequest(sim, false)),
      };
      for (const target of running) {
        figures[target.name] = await sequential(chatRequest(target, false));
        context.log(
          `  concurrency 1, ${round}, ${target.name}: p50 ${
            figures[target.name]!.p50.toFixed(3)
          } ms, p99 ${figures[target.name]!.p99.toFixed(3)} ms (${
            figures[target.name]!.requests
          } calls, ${figures[target.name]!.errors} errors)`,
        );
      }
      result[round] = figures;
    }
    return result;
  });
}

/** Whether a paced step held: p99 under the limit, no errors, the rate achieved. */
function held(result: WrkResult, rate: number): boolean {
  return result.p99 < P99_LIMIT_MS && result.errors === 0 &&
    result.rps >= 0.95 * rate;
}

/**
 * Steps the offered rate up, the targets taking turns at each rate, until
 * each target's p99 reaches 10 ms. A step that fails is run once more (one
 * stray stall on shared cores should not end a search); a second failure
 * ends that target's search.
 */
async function searchThroughput(
  running: Running[],
  context: Context,
): Promise<CallsFigures["throughput"]> {
  const { searchRates, searchStepS, workDir } = context.options;
  const result: CallsFigures["throughput"] = {};
  for (const target of running) {
    result[target.name] = {
      bestRate: 0,
      p99AtBest: NaN,
      capped: false,
      steps: [],
    };
  }
  let active = [...running];
  for (const rate of searchRates) {
    if (active.length === 0) break;
    const still: Running[] = [];
    for (const target of active) {
      const run = () =>
        runWrk(chatRequest(target, false), {
          connections: 64,
          durationS: searchStepS,
          rate,
        }, workDir);
      let step = await run();
      if (!held(step, rate)) step = await run();
      const ok = held(step, rate);
      const figures = result[target.name]!;
      figures.steps.push({
        rate,
        p99: step.p99,
        rps: step.rps,
        errors: step.errors,
        held: ok,
      });
      context.log(
        `  throughput search, ${target.name} at ${rate} req/s: p99 ${
          step.p99.toFixed(2)
        } ms, ${step.rps.toFixed(0)} req/s, ${step.errors} errors${
          ok ? "" : " (the search ends)"
        }`,
      );
      if (ok) {
        figures.bestRate = rate;
        figures.p99AtBest = step.p99;
        still.push(target);
      }
    }
    active = still;
  }
  for (const target of active) result[target.name]!.capped = true;
  return result;
}

/**
 * CPU per non-streamed call, cold then warm, RSS at rest and after the
 * standard load, then the throughput search on the same (warm) processes.
 *
 * @param names The targets.
 * @param sim The simulator (warm).
 * @param context Settings and log.
 * @returns CPU per call, the best rates, memory.
 */
export function callsPhase(
  names: readonly CostTarget[],
  sim: SimulatorProcess,
  context: Context,
): Promise<CallsFigures> {
  const { cpuCalls, workDir } = context.options;
  return withTargets(names, sim, context, {}, async (running) => {
    const memory: CallsFigures["memory"] = {};
    for (const target of running) {
      memory[target.name] = {
        restMiB: (await readMemory(target.pid)).rssMiB,
        standardPeakMiB: NaN,
        searchPeakMiB: NaN,
      };
    }
    const cpuPerCall = { cold: {}, warm: {} } as CallsFigures["cpuPerCall"];
    const databaseCpuPerCall = { cold: {}, warm: {} } as CallsFigures[
      "databaseCpuPerCall"
    ];
    const measure = async (target: Running) => {
      const before = await readCpuMicros(target.pid);
      const databaseBefore = await target.databaseCpuMicros?.() ?? 0;
      const { ok, failed } = await sendCalls(
        chatRequest(target, false),
        cpuCalls,
        BATCH_CONCURRENCY,
      );
      if (failed > 0) {
        context.notes.push(
          `${target.name}: ${failed} of ${cpuCalls} non-streamed calls failed in a CPU run`,
        );
      }
      // The gateway settles behind the answers: its last writes count too.
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      return {
        micros: await readCpuMicros(target.pid) - before,
        databaseMicros: (await target.databaseCpuMicros?.() ?? 0) -
          databaseBefore,
        calls: ok,
      };
    };
    const record = (
      round: Round,
      target: Running,
      sum: { micros: number; databaseMicros: number; calls: number },
    ) => {
      cpuPerCall[round][target.name] = sum.micros / sum.calls;
      if (target.databaseCpuMicros) {
        databaseCpuPerCall[round][target.name] = sum.databaseMicros /
          sum.calls;
      }
    };
    for (const target of running) record("cold", target, await measure(target));
    for (const target of running) {
      await runWrk(chatRequest(target, false), WARMUP, workDir);
    }
    // Two warm runs each, in turns and in opposite orders, summed.
    const warm = new Map<
      Running,
      { micros: number; databaseMicros: number; calls: number }
    >();
    for (const order of [running, [...running].reverse()]) {
      for (const target of order) {
        const run = await measure(target);
        const sum = warm.get(target) ??
          { micros: 0, databaseMicros: 0, calls: 0 };
        warm.set(target, {
          micros: sum.micros + run.micros,
          databaseMicros: sum.databaseMicros + run.databaseMicros,
          calls: sum.calls + run.calls,
        });
      }
    }
    for (const [target, sum] of warm) record("warm", target, sum);
    for (const target of running) {
      memory[target.name]!.standardPeakMiB =
        (await readMemory(target.pid)).peakMiB;
      context.log(
        `  CPU per call, ${target.name}: cold ${
          cpuPerCall.cold[target.name]!.toFixed(0)
        } µs, warm ${
          cpuPerCall.warm[target.name]!.toFixed(0)
        } µs; RSS at rest ${
          memory[target.name]!.restMiB.toFixed(1)
        } MiB, peak ${memory[target.name]!.standardPeakMiB.toFixed(1)} MiB`,
      );
    }
    const throughput = await searchThroughput(running, context);
    for (const target of running) {
      memory[target.name]!.searchPeakMiB =
        (await readMemory(target.pid)).peakMiB;
    }
    return { cpuPerCall, databaseCpuPerCall, throughput, memory };
  });
}

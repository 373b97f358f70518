/**
 * The streamed workloads of the cost bench (`cost.ts`), each on fresh
 * processes of every target, cold then warm: time to first token of
 * sequential streamed calls, and N streams open at once (CPU per chunk, RSS
 * growth, the gap between chunks) on the passthrough and translated routes.
 *
 * @module
 */
import { percentile, type Percentiles } from "../_stats.ts";
import {
  chatRequest,
  type Context,
  type CostTarget,
  directRequest,
  type Round,
  ROUNDS,
  withTargets,
} from "./cost_targets.ts";
import {
  anthropicEnv,
  CHUNKS,
  streamRound,
  type StreamTarget,
} from "./streams.ts";
import type { SimulatorProcess } from "./targets.ts";
import { measureTtft } from "./ttft.ts";

/** One target's round of concurrent streams. */
export interface StreamCost {
  /** `passthrough` (an OpenAI model) or `translated` (an Anthropic model on `/chat/completions`; the relay and Portkey pass an OpenAI stream through). */
  route: "passthrough" | "translated";
  /** The target. */
  target: CostTarget;
  /** Cold or warm. */
  round: Round;
  /** Streams opened at once. */
  streams: number;
  /** Streams that delivered every chunk. */
  completed: number;
  /** CPU per relayed chunk, µs (null when none completed). */
  cpuPerChunkUs: number | null;
  /** The database server's CPU per relayed chunk, µs (the gateway on PostgreSQL). */
  databaseCpuPerChunkUs?: number | null;
  /** RSS just before the round, MiB. */
  rssBeforeMiB: number;
  /** Peak RSS growth over the round, MiB: VmHWM (reset as the round began, or since start in a cold round) minus `rssBeforeMiB`. */
  growthMiB: number;
  /** The process's peak RSS (VmHWM) at the end of the round, MiB: over the round, or since start where it could not be reset. */
  peakMiB: number;
  /** Delay between chunks beyond the simulator's 50 ms, p50 and p99, ms (null when none completed). */
  addedGapP50: number | null;
  /** The same, p99. */
  addedGapP99: number | null;
}

/** Time to first token per round: the simulator directly and each target that streams. */
export type TtftFigures = Record<
  Round,
  { direct?: Percentiles } & Partial<Record<CostTarget, Percentiles>>
>;

/**
 * Time to first token: the first streamed calls on fresh targets (cold),
 * then after ten warm-up calls each (warm), the simulator called directly in
 * the same turns.
 *
 * @param names The targets.
 * @param sim The simulator (warm).
 * @param context Settings, log, notes.
 * @returns Percentiles per round and target.
 */
export function ttftPhase(
  names: readonly CostTarget[],
  sim: SimulatorProcess,
  context: Context,
): Promise<TtftFigures> {
  const { ttftRounds } = context.options;
  return withTargets(names, sim, context, {}, async (running) => {
    const streaming = Object.fromEntries(
      running.map((target) => [target.name, chatRequest(target, true)]),
    );
    // Portkey 1.15.2 cannot stream on Node 20 (see the notes); it is tried
    // on its own so its failure leaves the others' figures.
    const { portkey, ...others } = streaming;
    const result = {} as TtftFigures;
    let portkeyStreams = portkey !== undefined;
    for (const round of ROUNDS) {
      const warmup = round === "cold" ? 0 : 10;
      result[round] = await measureTtft(
        { direct: directRequest(sim, true), ...others },
        ttftRounds[round],
        warmup,
      );
      if (portkeyStreams) {
        try {
          Object.assign(
            result[round],
            await measureTtft({ portkey }, ttftRounds[round], warmup),
          );
        } catch (error) {
          portkeyStreams = false;
          const cause = running.find((target) => target.name === "portkey")
            ?.lines.find((line) => line.includes("TypeError"));
          context.notes.push(
            `Portkey could not stream (time to first token): ${
              (error as Error).message.slice(0, 160)
            }; its log: \`${cause?.trim() ?? "no TypeError logged"}\``,
          );
        }
      }
      context.log(
        `  time to first token, ${round}: ${
          Object.entries(result[round]).map(([name, p]) =>
            `${name} p50 ${p!.p50.toFixed(2)} ms`
          ).join(", ")
        }`,
      );
    }
    return result;
  });
}

/**
 * `options.streams` concurrent streams on each fresh target: cold (the
 * first traffic after start), then warm (the cold round was its warm-up).
 *
 * @param route The gateway's route; the relay and Portkey pass an OpenAI stream through either way.
 * @param names The targets.
 * @param sim The stream simulator (`startStreamSimulator()`).
 * @param context Settings, log, notes.
 * @returns One row per target and round.
 */
export function streamsPhase(
  route: StreamCost["route"],
  names: readonly CostTarget[],
  sim: SimulatorProcess,
  context: Context,
): Promise<StreamCost[]> {
  const n = context.options.streams;
  return withTargets(
    names,
    sim,
    context,
    anthropicEnv(sim),
    async (running) => {
      const targets: (StreamTarget & {
        cost: CostTarget;
        databaseCpuMicros?: () => Promise<number>;
      })[] = running.map((target) => {
        const { authorization, ...headers } = target.headers;
        return {
          cost: target.name,
          databaseCpuMicros: target.databaseCpuMicros,
          name: target.name,
          pid: target.pid,
          url: target.url,
          key: authorization.slice("Bearer ".length),
          headers,
          model: route === "translated" && target.name.startsWith("gateway")
            ? "claude-haiku-4-5"
            : "gpt-5-mini",
        };
      });
      const rows: StreamCost[] = [];
      const failed = new Set<CostTarget>();
      for (const round of ROUNDS) {
        for (const target of targets) {
          if (failed.has(target.cost)) continue;
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          const databaseBefore = await target.databaseCpuMicros?.();
          const measured = await streamRound(target, n);
          const databaseMicros = databaseBefore === undefined
            ? undefined
            : await target.databaseCpuMicros!() - databaseBefore;
          const row: StreamCost = {
            route,
            target: target.cost,
            round,
            streams: n,
            completed: measured.completed,
            cpuPerChunkUs: measured.completed > 0
              ? measured.cpuPerChunkUs
              : null,
            ...databaseMicros === undefined ? {} : {
              databaseCpuPerChunkUs: measured.completed > 0
                ? databaseMicros / (measured.completed * CHUNKS)
                : null,
            },
            rssBeforeMiB: measured.rssBeforeMiB,
            growthMiB: (round === "cold" && !measured.peakReset
              ? measured.hwmMiB
              : measured.rssPeakMiB) - measured.rssBeforeMiB,
            peakMiB: measured.hwmMiB,
            addedGapP50: measured.completed > 0
              ? percentile(measured.addedGaps, 50)
              : null,
            addedGapP99: measured.completed > 0
              ? percentile(measured.addedGaps, 99)
              : null,
          };
          rows.push(row);
          context.log(
            `  ${n} streams, ${route}, ${round}, ${target.cost}: ${row.completed} completed, ${
              row.cpuPerChunkUs?.toFixed(1) ?? "—"
            } µs CPU/chunk, RSS +${row.growthMiB.toFixed(1)} MiB (peak ${
              row.peakMiB.toFixed(1)
            } MiB)`,
          );
          if (row.completed === 0) {
            failed.add(target.cost);
            context.notes.push(
              `${target.cost} completed none of ${n} streams (${route}, ${round}); its warm round was skipped`,
            );
          }
        }
      }
      return rows;
    },
  );
}

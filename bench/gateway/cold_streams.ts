/**
 * The first burst a fresh process meets: N streamed chat calls opened at once
 * (40 chunks each, one every 50 ms) against a process that has served
 * nothing yet, no warm-up. Each target runs in its own fresh process, in
 * turn: the floor relay (`floor.ts`), the gateway on the passthrough route
 * (an OpenAI model) and the gateway on a translated one (an Anthropic model
 * on `/chat/completions`). For each: completed streams, CPU per chunk of the
 * target process, its RSS before the burst and the peak growth over it (the
 * stream round of `streams.ts`, which resets VmHWM as it begins), and with
 * `--trace-gc` the largest V8 heap committed during the burst, which splits
 * that growth into V8 heap and the rest (Rust side, malloc arenas).
 * `cost.ts` reports the cold and warm figures in the bench; this script is
 * for weighing a V8 flag or an allocator setting against the floor.
 *
 * ```sh
 * deno run -A bench/gateway/cold_streams.ts [--streams 1000] [--runs 1] \
 *   [--trace-gc] [--flag=--v8-flags=--max-semi-space-size=1] [--env=K=V] \
 *   [--targets floor,passthrough,translated]
 * ```
 *
 * `--flag` and `--env` apply to the gateway only (after the start task's
 * flags), so a V8 or allocator setting can be weighed against the floor.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { gcSummary, sampleMemory } from "./memory.ts";
import {
  anthropicEnv,
  startStreamSimulator,
  streamRound,
  type StreamTarget,
} from "./streams.ts";
import { startFloorProcess, startGatewayProcess } from "./targets.ts";

/** What one cold burst measured. */
export interface ColdBurst {
  /** `floor`, `passthrough` or `translated`. */
  target: string;
  /** Streams that delivered every chunk. */
  completed: number;
  /** The target process's CPU per relayed chunk over the burst, µs. */
  cpuPerChunkUs: number;
  /** RSS once the process listened, before the burst, MiB. */
  rssBeforeMiB: number;
  /** Peak RSS over the burst minus `rssBeforeMiB`, MiB. */
  growthMiB: number;
  /** The anonymous part of the RSS at the burst's end minus before it, MiB. */
  anonGrowthMiB: number;
  /** The largest V8 heap committed during the burst, MiB (with `--trace-gc`). */
  maxV8HeapMiB?: number;
  /** The V8 heap committed before the burst, MiB (with `--trace-gc`). */
  v8HeapBeforeMiB?: number;
}

/** The committed V8 heap the latest GC line printed so far reports, MiB. */
function lastHeapMiB(lines: readonly string[]): number | undefined {
  for (let i = lines.length - 1; i >= 0; i--) {
    const summary = gcSummary([lines[i]]);
    if (summary.maxHeapMiB > 0) return summary.maxHeapMiB;
  }
  return undefined;
}

/**
 * Runs one cold burst against a process that has served nothing: the
 * benchmark's stream round (`streams.ts`), with the V8 heap the process's GC
 * lines report before and during it.
 *
 * @param target The process, the call to open, named as in the output.
 * @param lines The process's output lines (its GC lines with `--trace-gc`).
 * @param streams How many streams to open at once.
 * @returns What the burst measured.
 */
export async function coldBurst(
  target: StreamTarget,
  lines: string[],
  streams: number,
): Promise<ColdBurst> {
  // Let start-up settle (module loading, the first GCs) before measuring.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const anonBefore = (await sampleMemory(target.pid)).anon;
  const gcFrom = lines.length;
  const v8HeapBeforeMiB = lastHeapMiB(lines);
  const round = await streamRound(target, streams);
  const anonAfter = (await sampleMemory(target.pid)).anon;
  const gc = gcSummary(lines.slice(gcFrom));
  return {
    target: target.name,
    completed: round.completed,
    cpuPerChunkUs: round.cpuPerChunkUs,
    rssBeforeMiB: round.rssBeforeMiB,
    growthMiB: round.rssPeakMiB - round.rssBeforeMiB,
    anonGrowthMiB: anonAfter - anonBefore,
    ...(gc.maxHeapMiB > 0 ? { maxV8HeapMiB: gc.maxHeapMiB } : {}),
    ...(v8HeapBeforeMiB !== undefined ? { v8HeapBeforeMiB } : {}),
  };
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      streams: { type: "string", default: "1000" },
      runs: { type: "string", default: "1" },
      targets: { type: "string", default: "floor,passthrough,translated" },
      "trace-gc": { type: "boolean", default: false },
      flag: { type: "string", multiple: true, default: [] },
      env: { type: "string", multiple: true, default: [] },
    },
  });
  const streams = Number(values.streams);
  const flags = [...values.flag];
  if (values["trace-gc"]) flags.push("--v8-flags=--trace-gc");
  const env = Object.fromEntries(values.env.map((pair) => {
    const at = pair.indexOf("=");
    return [pair.slice(0, at), pair.slice(at + 1)];
  }));
  const sim = await startStreamSimulator();
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-cold-streams-" });
  console.log(
    `${streams} streams at once, each target in a fresh process; gateway flags: start task + ${
      JSON.stringify(flags)
    }, env ${JSON.stringify(env)}`,
  );
  try {
    for (let run = 1; run <= Number(values.runs); run++) {
      for (const target of values.targets.split(",")) {
        let burst: ColdBurst;
        if (target === "floor") {
          const floor = await startFloorProcess(sim.openaiBase);
          try {
            burst = await coldBurst(
              {
                name: target,
                pid: floor.child.pid,
                url: floor.url,
                key: "sk-floor",
                model: "gpt-5-mini",
              },
              floor.child.lines,
              streams,
            );
          } finally {
            await floor.child.stop();
          }
        } else {
          const gateway = await startGatewayProcess(
            sim.openaiBase,
            `${dir}/gateway-${crypto.randomUUID()}.kv`,
            flags,
            { ...anthropicEnv(sim), ...env },
          );
          try {
            burst = await coldBurst(
              {
                name: target,
                pid: gateway.child.pid,
                url: gateway.url,
                key: gateway.callerKey,
                model: target === "translated"
                  ? "claude-haiku-4-5"
                  : "gpt-5-mini",
              },
              gateway.child.lines,
              streams,
            );
          } finally {
            await gateway.child.stop();
          }
        }
        const heap = burst.maxV8HeapMiB === undefined
          ? ""
          : `, V8 heap ${burst.v8HeapBeforeMiB?.toFixed(1) ?? "?"} -> ≤ ${
            burst.maxV8HeapMiB.toFixed(1)
          } MiB`;
        console.log(
          `run ${run}, ${target}: ${burst.completed}/${streams} completed, ${
            burst.cpuPerChunkUs.toFixed(1)
          } µs CPU/chunk, RSS ${burst.rssBeforeMiB.toFixed(1)} MiB + ${
            burst.growthMiB.toFixed(1)
          } MiB (anon + ${burst.anonGrowthMiB.toFixed(1)})${heap}`,
        );
      }
    }
  } finally {
    await sim.child.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

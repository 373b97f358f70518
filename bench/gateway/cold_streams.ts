/**
 * The first burst a fresh process meets: N streamed chat calls opened at once
 * (40 chunks each, one every 50 ms) against a process that has served
 * nothing yet, no warm-up. Each target runs in its own fresh process, in
 * turn: the floor relay (`floor.ts`), the gateway on the passthrough route
 * (an OpenAI model) and the gateway on a translated one (an Anthropic model
 * on `/chat/completions`). For each: completed streams, CPU per chunk of the
 * target process, its RSS before the burst, the peak RSS growth over the
 * burst (sampled every 50 ms, and VmHWM at the end), and with `--trace-gc`
 * the largest V8 heap committed during the burst, which splits that growth
 * into V8 heap and the rest (Rust side, malloc arenas). `streams.ts` measures
 * the warm figures; this one the cold.
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
import { readCpuMicros } from "../_process.ts";
import { gcSummary, sampleMemory } from "./memory.ts";
import {
  startFloorProcess,
  startGatewayProcess,
  startSimulatorProcess,
} from "./targets.ts";

const CHUNKS = 40;
const CHUNK_MS = 50;

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
  /** The anonymous part of the peak growth, MiB. */
  anonGrowthMiB: number;
  /** The largest V8 heap committed during the burst, MiB (with `--trace-gc`). */
  maxV8HeapMiB?: number;
  /** The V8 heap committed before the burst, MiB (with `--trace-gc`). */
  v8HeapBeforeMiB?: number;
}

/** Opens one stream and reads it to the end; whether every chunk came. */
async function openStream(
  url: string,
  key: string,
  model: string,
): Promise<boolean> {
  try {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        model,
        stream: true,
        max_tokens: 256,
        messages: [{ role: "user", content: "hello" }],
      }),
    });
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      return false;
    }
    const decoder = new TextDecoder();
    let events = 0;
    for await (const chunk of response.body) {
      events += decoder.decode(chunk, { stream: true }).split("\n\n").length -
        1;
    }
    return events >= CHUNKS;
  } catch {
    return false;
  }
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
 * Runs one cold burst against a process that has served nothing.
 *
 * @param target The target's name.
 * @param process Its pid, URL, caller key, the model to ask for, and its output lines.
 * @param streams How many streams to open at once.
 * @returns What the burst measured.
 */
export async function coldBurst(
  target: string,
  process: {
    pid: number;
    url: string;
    key: string;
    model: string;
    lines: string[];
  },
  streams: number,
): Promise<ColdBurst> {
  // Let start-up settle (module loading, the first GCs) before measuring.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const before = await sampleMemory(process.pid);
  const gcFrom = process.lines.length;
  const v8HeapBeforeMiB = lastHeapMiB(process.lines);
  const cpuBefore = await readCpuMicros(process.pid);
  let peakRss = before.rss;
  let peakAnon = before.anon;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const sample = await sampleMemory(process.pid);
      peakRss = Math.max(peakRss, sample.rss);
      peakAnon = Math.max(peakAnon, sample.anon);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const results = await Promise.all(
    Array.from(
      { length: streams },
      () => openStream(process.url, process.key, process.model),
    ),
  );
  sampling = false;
  await sampler;
  const cpu = await readCpuMicros(process.pid) - cpuBefore;
  const end = await sampleMemory(process.pid);
  const completed = results.filter(Boolean).length;
  const gc = gcSummary(process.lines.slice(gcFrom));
  return {
    target,
    completed,
    cpuPerChunkUs: completed > 0 ? cpu / (completed * CHUNKS) : NaN,
    rssBeforeMiB: before.rss,
    growthMiB: Math.max(peakRss, end.hwm) - before.rss,
    anonGrowthMiB: peakAnon - before.anon,
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
  const reply = Array.from({ length: CHUNKS * 3 }, (_, i) => `w${i}`).join(" ");
  const sim = await startSimulatorProcess(0, [
    "--chunk-delay-ms",
    String(CHUNK_MS),
    "--reply",
    reply,
    "--max-records",
    "100",
  ]);
  const simBase = sim.openaiBase.replace(/\/openai\/v1$/, "");
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
          const floor = await startFloorProcess(`${simBase}/openai/v1`);
          try {
            burst = await coldBurst(target, {
              pid: floor.child.pid,
              url: floor.url,
              key: "sk-floor",
              model: "gpt-5-mini",
              lines: floor.child.lines,
            }, streams);
          } finally {
            await floor.child.stop();
          }
        } else {
          const gateway = await startGatewayProcess(
            `${simBase}/openai/v1`,
            `${dir}/gateway-${crypto.randomUUID()}.kv`,
            flags,
            {
              ANTHROPIC_BASE_URL: `${simBase}/anthropic`,
              ANTHROPIC_API_KEYS:
                "sk-bench-a0,sk-bench-a1,sk-bench-a2,sk-bench-a3",
              ...env,
            },
          );
          try {
            burst = await coldBurst(target, {
              pid: gateway.child.pid,
              url: gateway.url,
              key: gateway.callerKey,
              model: target === "translated"
                ? "claude-haiku-4-5"
                : "gpt-5-mini",
              lines: gateway.child.lines,
            }, streams);
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

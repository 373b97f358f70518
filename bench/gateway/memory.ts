/**
 * Where the gateway's memory goes under load: starts the simulator (0 ms)
 * and a gateway as the benchmark does (KV file on disk, the start task's
 * flags), drives wrk unpaced (64 connections at 0 ms, 256 at 50 ms, as the
 * benchmark's saturation runs), and samples the gateway's
 * `/proc/<pid>/status` every 100 ms. With `--trace-gc` the gateway also
 * prints V8's GC lines, which give the V8 heap's committed size, so resident
 * memory splits into V8 heap and the rest (Rust side: hyper, fetch pool, KV
 * and SQLite, glibc malloc arenas; plus the binary's mapped pages).
 *
 * ```sh
 * deno run -A bench/gateway/memory.ts [--seconds 8] [--runs 3] [--trace-gc] \
 *   [--latency-ms 0|50] [--connections 64] [--rate 500] \
 *   [--flag=--v8-flags=--max-semi-space-size=4] [--env=MALLOC_ARENA_MAX=2]
 * ```
 *
 * `--flag` adds a `deno run` flag after the start task's (V8 takes the last
 * value of a repeated flag); `--env` sets an environment variable of the
 * gateway. Each run starts a fresh gateway and KV file.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { startGatewayProcess, startSimulatorProcess } from "./targets.ts";
import { runWrk, type WrkResult } from "./wrk.ts";
import { chatBody } from "./targets.ts";

/** Memory of one process, in MiB, from `/proc/<pid>/status`. */
export interface MemorySample {
  /** Resident set. */
  rss: number;
  /** Peak resident set (VmHWM). */
  hwm: number;
  /** Anonymous resident pages (heaps, stacks). */
  anon: number;
  /** File-backed resident pages (the binary, the KV file's mappings). */
  file: number;
}

/** What one run measured. */
export interface MemoryRun {
  /** Resident set once the gateway listens, before any load. */
  idle: MemorySample;
  /** The peak resident set over the run (VmHWM at the end). */
  peakMiB: number;
  /** The largest anonymous resident set sampled. */
  maxAnonMiB: number;
  /** The largest V8 heap committed after a GC, MiB (with `--trace-gc`). */
  maxV8HeapMiB?: number;
  /** The GCs V8 logged during the measured load, by kind (with `--trace-gc`). */
  gcCounts?: Record<string, number>;
  /** wrk's measurements of the measured load. */
  wrk: WrkResult;
}

function field(status: string, name: string): number {
  const match = status.match(new RegExp(`^${name}:\\s+(\\d+) kB`, "m"));
  if (!match) throw new Error(`Cannot read "${name}" from /proc status`);
  return Number(match[1]) / 1024;
}

/**
 * Reads one process's memory.
 *
 * @param pid The process id.
 * @returns Resident, peak, anonymous and file-backed memory in MiB.
 */
export async function sampleMemory(pid: number): Promise<MemorySample> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return {
    rss: field(status, "VmRSS"),
    hwm: field(status, "VmHWM"),
    anon: field(status, "RssAnon"),
    file: field(status, "RssFile"),
  };
}

// `… ms: Scavenge 12.1 (14.0) -> 10.3 (15.0) MB, …` or `… ms: Incremental
// Mark-Compact …`: the figures in brackets are the heap's committed memory
// before and after.
const GC_LINE =
  /ms: ((?:Incremental )?[A-Z][\w-]*(?: [A-Z][\w-]*)*) [\d.]+ \(([\d.]+)\) -> [\d.]+ \(([\d.]+)\) MB/;

/**
 * Summarises V8's `--trace-gc` lines.
 *
 * @param lines The gateway's output lines.
 * @returns The largest committed heap, MiB, and the GC count per kind.
 */
export function gcSummary(
  lines: readonly string[],
): { maxHeapMiB: number; counts: Record<string, number> } {
  let maxHeapMiB = 0;
  const counts: Record<string, number> = {};
  for (const line of lines) {
    const match = GC_LINE.exec(line);
    if (!match) continue;
    counts[match[1]] = (counts[match[1]] ?? 0) + 1;
    maxHeapMiB = Math.max(maxHeapMiB, Number(match[2]), Number(match[3]));
  }
  return { maxHeapMiB, counts };
}

/**
 * Starts a gateway, loads it at saturation, and samples its memory.
 *
 * @param openaiBase The simulator's OpenAI base URL.
 * @param options Seconds of measured load, extra flags and environment.
 * @returns What the run measured.
 */
export async function measureRun(
  openaiBase: string,
  options: {
    seconds: number;
    connections: number;
    rate?: number;
    flags: string[];
    env: Record<string, string>;
    workDir: string;
  },
): Promise<MemoryRun> {
  const kvPath = `${options.workDir}/memory-${crypto.randomUUID()}.kv`;
  const gateway = await startGatewayProcess(
    openaiBase,
    kvPath,
    options.flags,
    options.env,
  );
  try {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const idle = await sampleMemory(gateway.child.pid);
    const request = {
      url: `${gateway.url}/v1/chat/completions`,
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${gateway.callerKey}`,
      },
      body: chatBody(false),
    };
    let maxAnonMiB = 0;
    const sampler = setInterval(() => {
      sampleMemory(gateway.child.pid).then((sample) => {
        maxAnonMiB = Math.max(maxAnonMiB, sample.anon);
      }, () => {});
    }, 100);
    let wrk: WrkResult;
    let gcFrom = 0;
    try {
      // The benchmark warms every target up for 2 s before it measures.
      await runWrk(
        request,
        { connections: options.connections, durationS: 2 },
        options.workDir,
      );
      gcFrom = gateway.child.lines.length;
      wrk = await runWrk(
        request,
        {
          connections: options.connections,
          durationS: options.seconds,
          rate: options.rate,
        },
        options.workDir,
      );
    } finally {
      clearInterval(sampler);
    }
    const end = await sampleMemory(gateway.child.pid);
    const gc = gcSummary(gateway.child.lines.slice(gcFrom));
    return {
      idle,
      peakMiB: end.hwm,
      maxAnonMiB: Math.max(maxAnonMiB, end.anon),
      maxV8HeapMiB: gc.maxHeapMiB || undefined,
      gcCounts: Object.keys(gc.counts).length ? gc.counts : undefined,
      wrk,
    };
  } finally {
    await gateway.child.stop();
    await Deno.remove(kvPath).catch(() => {});
    for (const suffix of ["-shm", "-wal"]) {
      await Deno.remove(kvPath + suffix).catch(() => {});
    }
  }
}

function formatRun(run: MemoryRun): string {
  const heap = run.maxV8HeapMiB === undefined
    ? ""
    : `, V8 heap ≤ ${run.maxV8HeapMiB.toFixed(1)} MiB, GCs ${
      JSON.stringify(run.gcCounts)
    }`;
  return `idle ${run.idle.rss.toFixed(1)} MiB (anon ${
    run.idle.anon.toFixed(1)
  }, file ${run.idle.file.toFixed(1)}), peak ${
    run.peakMiB.toFixed(1)
  } MiB, anon ≤ ${run.maxAnonMiB.toFixed(1)} MiB${heap}; ${
    run.wrk.rps.toFixed(0)
  } req/s, p50 ${run.wrk.p50.toFixed(3)} ms, p99 ${
    run.wrk.p99.toFixed(3)
  } ms, ${run.wrk.errors} errors`;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      seconds: { type: "string", default: "8" },
      runs: { type: "string", default: "3" },
      "latency-ms": { type: "string", default: "0" },
      connections: { type: "string" },
      rate: { type: "string" },
      "trace-gc": { type: "boolean", default: false },
      flag: { type: "string", multiple: true, default: [] },
      env: { type: "string", multiple: true, default: [] },
    },
  });
  const flags = [...values.flag];
  if (values["trace-gc"]) flags.push("--v8-flags=--trace-gc");
  const env = Object.fromEntries(
    values.env.map((pair) => {
      const at = pair.indexOf("=");
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
  );
  const workDir = await Deno.makeTempDir({ prefix: "mcpkit-memory-" });
  const latencyMs = Number(values["latency-ms"]);
  const connections = Number(
    values.connections ?? (latencyMs === 0 ? 64 : 256),
  );
  const sim = await startSimulatorProcess(latencyMs);
  try {
    console.log(
      `upstream ${latencyMs} ms, ${connections} connections, ${
        values.rate ? `paced at ${values.rate} req/s` : "unpaced"
      }; gateway flags: start task + ${JSON.stringify(flags)}, env ${
        JSON.stringify(env)
      }`,
    );
    const peaks: number[] = [];
    for (let i = 0; i < Number(values.runs); i++) {
      const run = await measureRun(sim.openaiBase, {
        seconds: Number(values.seconds),
        connections,
        rate: values.rate === undefined ? undefined : Number(values.rate),
        flags,
        env,
        workDir,
      });
      peaks.push(run.peakMiB);
      console.log(`run ${i + 1}: ${formatRun(run)}`);
    }
    peaks.sort((a, b) => a - b);
    console.log(
      `peak MiB: min ${peaks[0].toFixed(1)}, median ${
        peaks[Math.floor(peaks.length / 2)].toFixed(1)
      }, max ${peaks[peaks.length - 1].toFixed(1)}`,
    );
  } finally {
    await sim.child.stop();
    await Deno.remove(workDir, { recursive: true });
  }
}

/**
 * Traffic shaped like LLM traffic: N streamed chat calls open at once, 40
 * chunks each, one every 50 ms, against the floor relay (`floor.ts`) and the
 * gateway, on the passthrough route (an OpenAI model on /chat/completions)
 * and a translated one (an Anthropic model on /chat/completions). For each:
 * completed streams, errors, CPU per chunk of the target process (from
 * `/proc/<pid>/stat`), RSS per open stream (peak growth over the run, after
 * an unmeasured warm-up round of every target at the same N), and the delay
 * added between chunks (p50/p99, against the simulator's 50 ms).
 *
 * `deno run -A bench/gateway/streams.ts [--streams 100,1000,2000] [--cpu-prof <dir>]`
 * (`--cpu-prof`: the gateway writes a V8 CPU profile there when it stops;
 * V8's sampling profiler, not the inspector, so the profile holds no
 * instrument of its own)
 *
 * @module
 */
import { parseArgs } from "node:util";
import { readCpuMicros, readMemory, resetPeakMemory } from "../_process.ts";
import { percentile } from "../_stats.ts";
import {
  type SimulatorProcess,
  startFloorProcess,
  startGatewayProcess,
  startSimulatorProcess,
} from "./targets.ts";

/** Content chunks in every stream of the stream simulator. */
export const CHUNKS = 40;
const CHUNK_MS = 50;

/** One row of the concurrent-streams benchmark. */
export interface StreamsRow {
  /** Streams open at once. */
  streams: number;
  /** `floor (relay)`, `floor, body through JS`, `gateway, passthrough` or `gateway, translated`. */
  target: string;
  /** Streams that delivered every chunk. */
  completed: number;
  /** Streams that did not. */
  errors: number;
  /** The target process's CPU per relayed chunk, µs. */
  cpuPerChunkUs: number;
  /** Peak RSS growth per open stream, KiB. */
  rssPerStreamKiB: number;
  /** Delay added to the simulator's 50 ms between chunks, p50, ms. */
  addedGapP50: number;
  /** The same, p99. */
  addedGapP99: number;
}

/** A process that relays streams, and the call to open on it. */
export interface StreamTarget {
  /** Its name in the tables. */
  name: string;
  /** The process whose CPU and memory are read. */
  pid: number;
  /** Its base URL (it takes the gateway's paths). */
  url: string;
  /** The bearer key to present. */
  key: string;
  /** The model to ask for (it picks the route). */
  model: string;
  /** More request headers (Portkey's routing headers). */
  headers?: Record<string, string>;
}

/** What one round of concurrent streams measured on one target. */
export interface StreamRound {
  /** Streams that delivered every chunk. */
  completed: number;
  /** The target process's CPU over the round, µs. */
  cpuMicros: number;
  /** The target's CPU per relayed chunk, µs (NaN when no stream completed). */
  cpuPerChunkUs: number;
  /** Its RSS just before the round, MiB. */
  rssBeforeMiB: number;
  /** The peak RSS over the round, MiB: VmHWM when `peakReset`, else the highest RSS sampled (every 100 ms, and at its end). */
  rssPeakMiB: number;
  /** Its peak RSS (VmHWM) at the end of the round, MiB: since the round began when `peakReset`, else since the process started. */
  hwmMiB: number;
  /** Whether VmHWM was reset as the round began (`resetPeakMemory`). */
  peakReset: boolean;
  /** Each delay between two events minus the simulator's 50 ms, sorted, ms. */
  addedGaps: number[];
}

/** One stream: its status and the gaps between its events, ms. */
async function stream(
  target: StreamTarget,
): Promise<{ ok: boolean; gaps: number[] }> {
  try {
    const response = await fetch(`${target.url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${target.key}`,
        "content-type": "application/json",
        ...target.headers,
      },
      body: JSON.stringify({
        model: target.model,
        stream: true,
        max_tokens: 256,
        messages: [{ role: "user", content: "hello" }],
      }),
    });
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      return { ok: false, gaps: [] };
    }
    const gaps: number[] = [];
    let last = 0;
    let events = 0;
    const decoder = new TextDecoder();
    for await (const chunk of response.body) {
      const now = performance.now();
      const arrived = decoder.decode(chunk, { stream: true }).split("\n\n")
        .length - 1;
      if (arrived > 0) {
        if (last > 0) gaps.push(now - last);
        last = now;
        events += arrived;
      }
    }
    return { ok: events >= CHUNKS, gaps };
  } catch {
    return { ok: false, gaps: [] };
  }
}

/**
 * Opens `n` streams on a target at once and reads each to its end, reading
 * the target's CPU (`/proc/<pid>/stat`) around the round and its RSS
 * (`/proc/<pid>/status`) before, during (every 100 ms) and after it.
 *
 * @param target The process and the call to open.
 * @param n Streams open at once.
 * @returns What the round measured.
 */
export async function streamRound(
  target: StreamTarget,
  n: number,
): Promise<StreamRound> {
  const peakReset = await resetPeakMemory(target.pid);
  const cpuBefore = await readCpuMicros(target.pid);
  const rssBefore = (await readMemory(target.pid)).rssMiB;
  let rssPeak = rssBefore;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      rssPeak = Math.max(rssPeak, (await readMemory(target.pid)).rssMiB);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  const results = await Promise.all(
    Array.from({ length: n }, () => stream(target)),
  );
  sampling = false;
  await sampler;
  // A gateway settles a stream after its last chunk: that work counts too.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const cpuMicros = await readCpuMicros(target.pid) - cpuBefore;
  const end = await readMemory(target.pid);
  const completed = results.filter((r) => r.ok).length;
  return {
    completed,
    cpuMicros,
    cpuPerChunkUs: completed > 0 ? cpuMicros / (completed * CHUNKS) : NaN,
    rssBeforeMiB: rssBefore,
    rssPeakMiB: Math.max(rssPeak, end.rssMiB, peakReset ? end.peakMiB : 0),
    hwmMiB: end.peakMiB,
    peakReset,
    addedGaps: results.flatMap((r) => r.gaps).map((gap) => gap - CHUNK_MS)
      .sort((a, b) => a - b),
  };
}

/**
 * Starts the simulator the stream benchmarks use: 40 content chunks of three
 * words each, 50 ms apart, then the finish and usage chunks.
 *
 * @returns The simulator process.
 */
export function startStreamSimulator(): Promise<SimulatorProcess> {
  const reply = Array.from({ length: CHUNKS * 3 }, (_, i) => `w${i}`).join(" ");
  return startSimulatorProcess(0, [
    "--chunk-delay-ms",
    String(CHUNK_MS),
    "--reply",
    reply,
    "--max-records",
    "100",
  ]);
}

/**
 * The gateway environment that sends Anthropic models to the simulator,
 * for the translated route (an Anthropic model on `/chat/completions`).
 *
 * @param sim The simulator.
 * @returns `ANTHROPIC_BASE_URL` and a pool of four Anthropic keys.
 */
export function anthropicEnv(sim: SimulatorProcess): Record<string, string> {
  return {
    ANTHROPIC_BASE_URL: sim.openaiBase.replace(/\/openai\/v1$/, "/anthropic"),
    ANTHROPIC_API_KEYS: "sk-bench-a0,sk-bench-a1,sk-bench-a2,sk-bench-a3",
  };
}

/**
 * Runs the concurrent-streams benchmark: for each count, every target in
 * turn with that many streams open at once.
 *
 * @param options The stream counts; a directory for the gateway's V8 CPU profile.
 * @param log Progress lines.
 * @returns One row per count and target.
 */
export async function benchStreams(
  options: { counts: number[]; cpuProfDir?: string },
  log: (line: string) => void = () => {},
): Promise<StreamsRow[]> {
  const sim = await startStreamSimulator();
  const simBase = sim.openaiBase.replace(/\/openai\/v1$/, "");
  const dir = await Deno.makeTempDir();
  const gateway = await startGatewayProcess(
    `${simBase}/openai/v1`,
    `${dir}/gateway.kv`,
    options.cpuProfDir
      ? ["--cpu-prof", `--cpu-prof-dir=${options.cpuProfDir}`]
      : [],
    anthropicEnv(sim),
  );
  const floor = await startFloorProcess(`${simBase}/openai/v1`);
  // The same relay with each chunk passed through JavaScript, unparsed.
  const jsFloor = await startFloorProcess(`${simBase}/openai/v1`, {
    bodiesThroughJs: true,
  });
  try {
    const targets: StreamTarget[] = [
      {
        name: "floor (relay)",
        pid: floor.child.pid,
        url: floor.url,
        key: "sk-floor",
        model: "gpt-5-mini",
      },
      {
        name: "floor, body through JS",
        pid: jsFloor.child.pid,
        url: jsFloor.url,
        key: "sk-floor",
        model: "gpt-5-mini",
      },
      {
        name: "gateway, passthrough",
        pid: gateway.child.pid,
        url: gateway.url,
        key: gateway.callerKey,
        model: "gpt-5-mini",
      },
      {
        name: "gateway, translated",
        pid: gateway.child.pid,
        url: gateway.url,
        key: gateway.callerKey,
        model: "claude-haiku-4-5",
      },
    ];
    const rows: StreamsRow[] = [];
    for (const n of options.counts) {
      // One unmeasured round first: the heap a process grows for N streams
      // stays grown, so without it whichever target of a process ran first
      // at this N would carry the growth (passthrough ran before translated
      // and measured 402 against 18 KiB per stream).
      for (const target of targets) {
        await Promise.all(Array.from({ length: n }, () => stream(target)));
      }
      for (const target of targets) {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        const round = await streamRound(target, n);
        const row: StreamsRow = {
          streams: n,
          target: target.name,
          completed: round.completed,
          errors: n - round.completed,
          cpuPerChunkUs: round.cpuPerChunkUs,
          rssPerStreamKiB: ((round.rssPeakMiB - round.rssBeforeMiB) * 1024) /
            n,
          addedGapP50: percentile(round.addedGaps, 50),
          addedGapP99: percentile(round.addedGaps, 99),
        };
        log(
          `  ${n} streams, ${row.target}: ${row.completed} completed, ${
            row.cpuPerChunkUs.toFixed(1)
          } µs CPU/chunk, ${row.rssPerStreamKiB.toFixed(0)} KiB/stream`,
        );
        rows.push(row);
      }
    }
    return rows;
  } finally {
    await Promise.all([
      floor.child.stop(),
      jsFloor.child.stop(),
      gateway.child.stop(),
      sim.child.stop(),
    ]);
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      streams: { type: "string", default: "100,1000,2000" },
      "cpu-prof": { type: "string" },
    },
  });
  const rows = await benchStreams({
    counts: values.streams!.split(",").map(Number),
    cpuProfDir: values["cpu-prof"],
  }, (line) => console.error(line));
  console.log(
    "| streams | target | completed | errors | CPU per chunk (µs) | RSS per open stream (KiB) | added gap p50 / p99 (ms) |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- |");
  for (const row of rows) {
    console.log(
      `| ${row.streams} | ${row.target} | ${row.completed} | ${row.errors} | ${
        row.cpuPerChunkUs.toFixed(1)
      } | ${row.rssPerStreamKiB.toFixed(0)} | ${row.addedGapP50.toFixed(2)} / ${
        row.addedGapP99.toFixed(2)
      } |`,
    );
  }
}

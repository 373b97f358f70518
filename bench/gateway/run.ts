/**
 * The gateway benchmark: the simulator as upstream (0 ms and 50 ms), load
 * from wrk, and three targets side by side in one run: the simulator
 * directly (the limit), our gateway with every feature on (auth, credits and
 * traces in a KV file, a pool of four keys under limits), and Portkey's
 * gateway on Node. A second instance of our gateway keeps its KV file on
 * tmpfs (`/dev/shm`), which separates the disk's fsync from everything else
 * the gateway does. Targets take turns at each step so drifting machine load
 * hits them alike.
 *
 * @module
 */
import { readCpuMicros, readMemory } from "../_process.ts";
import type { Percentiles } from "../_stats.ts";
import {
  type CpuProfile,
  type HotSpot,
  hotSpots,
  type OwnHotSpot,
  ownHotSpots,
} from "./profile.ts";
import {
  freePort,
  startFloorProcess,
  startGatewayProcess,
  startPortkeyProcess,
  startSimulatorProcess,
  targetRequests,
} from "./targets.ts";
import { measureTtft } from "./ttft.ts";
import { runWrk, type WrkRequest, type WrkResult } from "./wrk.ts";

/** The targets, in the order they take turns: the simulator, the floor (a bare Deno relay), our gateway twice, Portkey. */
export const TARGETS = [
  "direct",
  "floor",
  "gateway",
  "gateway_tmpfs",
  "portkey",
] as const;
/** One of {@linkcode TARGETS}. */
export type Target = typeof TARGETS[number];

/** How long and how hard the benchmark runs. */
export interface GatewayBenchOptions {
  /** Seconds per paced step. */
  stepS: number;
  /** Seconds per saturation run. */
  saturationS: number;
  /** Offered rates with the 0 ms upstream, req/s. */
  rates0: number[];
  /** Offered rates with the 50 ms upstream, req/s. */
  rates50: number[];
  /** Streamed calls per target for time to first token. */
  ttftRounds: number;
  /** Directory of `node_modules` holding Portkey. */
  nodeDir: string;
  /** Scratch directory (KV file, wrk scripts), on disk. */
  workDir: string;
  /** Scratch directory on tmpfs for the second gateway's KV file. */
  tmpfsDir: string;
  /** Where the raw CPU profile is written (open it in Chrome DevTools). */
  profilePath: string;
}

/** Results at one upstream latency. */
export interface LatencyResults {
  /** Upstream latency, ms. */
  upstreamMs: number;
  /** Paced runs: offered rate → target → result. */
  paced: { rate: number; results: Record<Target, WrkResult> }[];
  /** Unpaced runs by target. */
  saturation: Record<Target, WrkResult>;
  /** Connections of the unpaced runs. */
  saturationConnections: number;
  /** CPU time of the target process per call during its unpaced run, µs (from `/proc/<pid>/stat`). */
  saturationCpuMicros: Record<Target, number>;
}

/** Everything the gateway benchmark measured. */
export interface GatewayBenchResults {
  /** Results per upstream latency. */
  byLatency: LatencyResults[];
  /** Streaming time to first token by target (Portkey absent when it failed). */
  ttft: Record<string, Percentiles>;
  /** Why a target is missing from `ttft`, if one is. */
  ttftNotes: string[];
  /** Peak and sampled memory under load, MiB. */
  memory: Record<
    "gateway" | "portkey",
    { idleMiB: number; peakMiB: number; maxRssMiB: number }
  >;
  /** Self-time hot spots of our gateway at saturation (0 ms upstream). */
  profile: HotSpot[];
  /** Our own functions in that profile, by time on the stack (absent from older results). */
  ownProfile?: OwnHotSpot[];
  /** Throughput while profiled (V8's sampling profiler slows it a little). */
  profiledRps: number;
}

const PACED_CONNECTIONS = 64;

/**
 * Runs the gateway benchmark.
 *
 * @param options Durations, rates and directories.
 * @param log Progress lines.
 * @returns The measurements.
 */
export async function benchGateway(
  options: GatewayBenchOptions,
  log: (line: string) => void,
): Promise<GatewayBenchResults> {
  const byLatency: LatencyResults[] = [];
  const memory = {
    gateway: { idleMiB: 0, peakMiB: 0, maxRssMiB: 0 },
    portkey: { idleMiB: 0, peakMiB: 0, maxRssMiB: 0 },
  };
  let ttft: Record<string, Percentiles> = {};
  const ttftNotes: string[] = [];
  let profile: HotSpot[] = [];
  let ownProfile: OwnHotSpot[] = [];
  let profiledRps = 0;

  for (const upstreamMs of [0, 50]) {
    const sim = await startSimulatorProcess(upstreamMs);
    const gateway = await startGatewayProcess(
      sim.openaiBase,
      `${options.workDir}/gateway-${upstreamMs}.kv`,
    );
    const gatewayTmpfs = await startGatewayProcess(
      sim.openaiBase,
      `${options.tmpfsDir}/gateway-${upstreamMs}.kv`,
    );
    const portkey = await startPortkeyProcess(options.nodeDir, freePort());
    const floor = await startFloorProcess(sim.openaiBase);
    const pids = { gateway: gateway.child.pid, portkey: portkey.child.pid };
    const targetPids: Record<Target, number> = {
      direct: sim.child.pid,
      floor: floor.child.pid,
      gateway: gateway.child.pid,
      gateway_tmpfs: gatewayTmpfs.child.pid,
      portkey: portkey.child.pid,
    };
    if (upstreamMs === 0) {
      for (const name of ["gateway", "portkey"] as const) {
        memory[name].idleMiB = (await readMemory(pids[name])).rssMiB;
      }
    }
    const sampler = setInterval(async () => {
      for (const name of ["gateway", "portkey"] as const) {
        const { rssMiB } = await readMemory(pids[name]).catch(() => ({
          rssMiB: 0,
        }));
        memory[name].maxRssMiB = Math.max(memory[name].maxRssMiB, rssMiB);
      }
    }, 200);
    try {
      const base = targetRequests(sim, gateway, portkey, false);
      const requests: Record<Target, WrkRequest> = {
        ...base,
        floor: { ...base.direct, url: `${floor.url}/v1/chat/completions` },
        gateway_tmpfs: {
          url: `${gatewayTmpfs.url}/v1/chat/completions`,
          headers: {
            ...base.gateway.headers,
            authorization: `Bearer ${gatewayTmpfs.callerKey}`,
          },
          body: base.gateway.body,
        },
      };
      const run = (target: Target, rate?: number, seconds = options.stepS) =>
        runWrk(requests[target], {
          connections: rate === undefined
            ? (upstreamMs === 0 ? 64 : 256)
            : PACED_CONNECTIONS,
          durationS: seconds,
          rate,
        }, options.workDir);
      log(`gateway bench: upstream ${upstreamMs} ms, warming up`);
      for (const target of TARGETS) await run(target, undefined, 2);

      const rates = upstreamMs === 0 ? options.rates0 : options.rates50;
      const paced: LatencyResults["paced"] = [];
      for (const rate of rates) {
        const results = {} as Record<Target, WrkResult>;
        for (const target of TARGETS) {
          results[target] = await run(target, rate);
          log(
            `  ${rate} req/s ${target}: p50 ${
              results[target].p50.toFixed(3)
            } ms, p99 ${results[target].p99.toFixed(3)} ms, ${
              results[target].rps.toFixed(0)
            } req/s, ${results[target].errors} errors`,
          );
        }
        paced.push({ rate, results });
      }
      const saturation = {} as Record<Target, WrkResult>;
      const saturationCpuMicros = {} as Record<Target, number>;
      for (const target of TARGETS) {
        const cpuBefore = await readCpuMicros(targetPids[target]);
        saturation[target] = await run(target, undefined, options.saturationS);
        const calls = saturation[target].rps * options.saturationS;
        saturationCpuMicros[target] =
          (await readCpuMicros(targetPids[target]) - cpuBefore) / calls;
        log(
          `  saturation ${target}: ${
            saturation[target].rps.toFixed(0)
          } req/s, ${saturation[target].errors} errors`,
        );
      }
      byLatency.push({
        upstreamMs,
        paced,
        saturation,
        saturationConnections: upstreamMs === 0 ? 64 : 256,
        saturationCpuMicros,
      });

      if (upstreamMs === 0) {
        log("gateway bench: streaming time to first token");
        const streamed = targetRequests(sim, gateway, portkey, true);
        ttft = await measureTtft(
          {
            direct: streamed.direct,
            floor: {
              ...streamed.direct,
              url: `${floor.url}/v1/chat/completions`,
            },
            gateway: streamed.gateway,
          },
          options.ttftRounds,
        );
        try {
          Object.assign(
            ttft,
            await measureTtft(
              { portkey: streamed.portkey },
              options.ttftRounds,
            ),
          );
        } catch (error) {
          const cause = portkey.child.lines.find((line) =>
            line.includes("TypeError")
          );
          ttftNotes.push(
            `Portkey could not stream: ${
              (error as Error).message.slice(0, 160)
            }; its log: \`${cause?.trim() ?? "no TypeError logged"}\``,
          );
        }

        log("gateway bench: CPU profile of a separate gateway at saturation");
        // A separate instance with V8's sampling profiler (`--cpu-prof`,
        // written when it exits): no inspector, so nothing of the instrument
        // is in the profile, and the measured gateway never runs with it.
        const profileDir = await Deno.makeTempDir({ dir: options.workDir });
        const profiled = await startGatewayProcess(
          sim.openaiBase,
          `${options.workDir}/gateway-profiled.kv`,
          ["--cpu-prof", `--cpu-prof-dir=${profileDir}`],
        );
        try {
          const request = {
            ...requests.gateway,
            url: `${profiled.url}/v1/chat/completions`,
            headers: {
              ...requests.gateway.headers,
              authorization: `Bearer ${profiled.callerKey}`,
            },
          };
          profiledRps = (await runWrk(
            request,
            { connections: 64, durationS: 6 },
            options.workDir,
          )).rps;
        } finally {
          await profiled.child.stop();
        }
        const [file] = [...Deno.readDirSync(profileDir)].filter((entry) =>
          entry.name.endsWith(".cpuprofile")
        );
        if (!file) throw new Error("The profiled gateway wrote no profile");
        const raw = await Deno.readTextFile(`${profileDir}/${file.name}`);
        profile = hotSpots(JSON.parse(raw) as CpuProfile, 15);
        ownProfile = ownHotSpots(JSON.parse(raw) as CpuProfile, 15);
        await Deno.writeTextFile(options.profilePath, raw);
      }
      for (const name of ["gateway", "portkey"] as const) {
        const { peakMiB } = await readMemory(pids[name]);
        memory[name].peakMiB = Math.max(memory[name].peakMiB, peakMiB);
      }
    } finally {
      clearInterval(sampler);
      await gateway.child.stop();
      await gatewayTmpfs.child.stop();
      await portkey.child.stop();
      await floor.child.stop();
      await sim.child.stop();
    }
  }
  return {
    byLatency,
    ttft,
    ttftNotes,
    memory,
    profile,
    ownProfile,
    profiledRps,
  };
}

/**
 * The targets of the cost bench (`cost.ts`) and how a workload gets fresh
 * processes of them: the bare Deno relay (`floor.ts`), the gateway on a KV
 * file, the gateway on PostgreSQL (a fresh database each) and Portkey, each
 * started for one workload and stopped after it, so its first traffic is
 * the workload's cold round.
 *
 * @module
 */
import {
  chatBody,
  freePort,
  type SimulatorProcess,
  startFloorProcess,
  startGatewayProcess,
  startPortkeyProcess,
} from "./targets.ts";
import type { WrkRequest } from "./wrk.ts";

/** The targets, in the order they take turns; every figure is a ratio to the relay's. */
export const COST_TARGETS = [
  "relay",
  "gateway",
  "gateway_pg",
  "portkey",
] as const;
/** One of {@linkcode COST_TARGETS}. */
export type CostTarget = typeof COST_TARGETS[number];
/** `cold`: the first traffic a fresh process meets; `warm`: after a warm-up. */
export type Round = "cold" | "warm";
/** The two rounds, in the order they run. */
export const ROUNDS: readonly Round[] = ["cold", "warm"];

/** How long and how hard the cost bench runs. */
export interface CostOptions {
  /** Seconds of each concurrency-1 run. */
  latencyS: number;
  /** Timed streamed calls per target for time to first token, cold and warm. */
  ttftRounds: Record<Round, number>;
  /** Non-streamed calls per CPU measurement (at concurrency 32). */
  cpuCalls: number;
  /** Offered rates the throughput search steps through, req/s. */
  searchRates: number[];
  /** Seconds per step of the throughput search. */
  searchStepS: number;
  /** Streams open at once in the streaming rounds. */
  streams: number;
  /** Directory of `node_modules` holding Portkey. */
  nodeDir: string;
  /** Scratch directory (KV files, wrk scripts). */
  workDir: string;
}

const JSON_HEADERS = { "content-type": "application/json" };

/** The unpaced wrk run every warm round follows. */
export const WARMUP = { connections: 64, durationS: 2 };

/** A started target: its process and the headers its calls carry. */
export interface Running {
  /** Which target. */
  name: CostTarget;
  /** Its process id (CPU and memory are read from `/proc/<pid>`). */
  pid: number;
  /** Its base URL (it takes the gateway's paths). */
  url: string;
  /** The headers its calls carry (the key; Portkey's routing). */
  headers: Record<string, string>;
  /** Every line it printed so far. */
  lines: string[];
  /** CPU its database server has used so far, µs (the gateway on PostgreSQL). */
  databaseCpuMicros?: () => Promise<number>;
  /** Stops the process. */
  stop(): Promise<void>;
}

/** What every workload needs. */
export interface Context {
  /** The bench's settings. */
  options: CostOptions;
  /** A PostgreSQL server to create the PostgreSQL gateway's databases in, and its CPU so far (µs). */
  postgres?: {
    createDatabase(name: string): Promise<string>;
    cpuMicros(): Promise<number>;
  };
  /** Progress lines. */
  log: (line: string) => void;
  /** Targets that could not do a workload, and why (for the report). */
  notes: string[];
}

let databases = 0;

async function startTarget(
  name: CostTarget,
  sim: SimulatorProcess,
  context: Context,
  env: Record<string, string>,
): Promise<Running> {
  const { workDir, nodeDir } = context.options;
  if (name === "relay") {
    const floor = await startFloorProcess(sim.openaiBase);
    return {
      name,
      pid: floor.child.pid,
      url: floor.url,
      headers: { authorization: "Bearer sk-bench-relay" },
      lines: floor.child.lines,
      stop: () => floor.child.stop(),
    };
  }
  if (name === "portkey") {
    const portkey = await startPortkeyProcess(nodeDir, freePort());
    return {
      name,
      pid: portkey.child.pid,
      url: portkey.url,
      headers: {
        authorization: "Bearer sk-bench-portkey",
        "x-portkey-provider": "openai",
        "x-portkey-custom-host": sim.openaiBase,
      },
      lines: portkey.child.lines,
      stop: () => portkey.child.stop(),
    };
  }
  const storeEnv: Record<string, string> = name === "gateway_pg"
    ? {
      GATEWAY_STORE: await context.postgres!.createDatabase(
        `bench_cost_${++databases}`,
      ),
    }
    : {};
  const gateway = await startGatewayProcess(
    sim.openaiBase,
    `${workDir}/cost-${crypto.randomUUID()}.kv`,
    [],
    { ...env, ...storeEnv },
  );
  return {
    name,
    pid: gateway.child.pid,
    url: gateway.url,
    headers: { authorization: `Bearer ${gateway.callerKey}` },
    lines: gateway.child.lines,
    ...name === "gateway_pg"
      ? { databaseCpuMicros: context.postgres!.cpuMicros }
      : {},
    stop: () => gateway.child.stop(),
  };
}

/**
 * Starts a fresh process of each target, runs `phase` on them and stops
 * them, whatever happens. Portkey, when it does not start, is left out with
 * a note.
 *
 * @param names The targets to start, in turn order.
 * @param sim The simulator they relay to.
 * @param context Settings, PostgreSQL, log.
 * @param env More environment variables for the gateways.
 * @param phase The workload.
 * @returns What the workload returns.
 */
export async function withTargets<T>(
  names: readonly CostTarget[],
  sim: SimulatorProcess,
  context: Context,
  env: Record<string, string>,
  phase: (running: Running[]) => Promise<T>,
): Promise<T> {
  const running: Running[] = [];
  try {
    for (const name of names) {
      try {
        running.push(await startTarget(name, sim, context, env));
      } catch (error) {
        // Portkey is someone else's code on Node: a start that fails costs
        // its column, not the run. Ours and the relay must start.
        if (name !== "portkey") throw error;
        context.notes.push(
          `Portkey did not start for a workload: ${
            (error as Error).message.slice(0, 200)
          }`,
        );
      }
    }
    // Let start-up work (catalog, first sweeps, JIT of the start path) end
    // before anything is read.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    return await phase(running);
  } finally {
    await Promise.all(running.map((target) => target.stop()));
  }
}

/**
 * The non-streamed or streamed chat call a target answers.
 *
 * @param target A started target.
 * @param stream Whether to ask for a stream.
 * @returns The request.
 */
export function chatRequest(
  target: { url: string; headers: Record<string, string> },
  stream: boolean,
): WrkRequest {
  return {
    url: `${target.url}/v1/chat/completions`,
    headers: { ...JSON_HEADERS, ...target.headers },
    body: chatBody(stream),
  };
}

/**
 * The same call straight to the simulator.
 *
 * @param sim The simulator.
 * @param stream Whether to ask for a stream.
 * @returns The request.
 */
export function directRequest(
  sim: SimulatorProcess,
  stream: boolean,
): WrkRequest {
  return {
    url: `${sim.openaiBase}/chat/completions`,
    headers: { ...JSON_HEADERS, authorization: "Bearer sk-bench-direct" },
    body: chatBody(stream),
  };
}

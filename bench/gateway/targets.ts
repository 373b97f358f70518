/**
 * The three things the gateway benchmark sends load to: the provider
 * simulator itself (the limit), our gateway with every feature on, and
 * Portkey's open-source gateway on Node, both in front of that simulator.
 *
 * @module
 */
import { createCaller } from "../../gateway/state/callers.ts";
import { usdToMicros } from "../../gateway/state/credits/money.ts";
import { closeStore, openStore } from "../../gateway/state/store/mod.ts";
import { type Child, spawnChild } from "../_process.ts";
import type { WrkRequest } from "./wrk.ts";

/** A started simulator. */
export interface SimulatorProcess {
  /** The process. */
  child: Child;
  /** Its OpenAI-compatible base URL (`…/openai/v1`). */
  openaiBase: string;
}

const ROOT = new URL("../../", import.meta.url).pathname;

/** The model every request asks for (an OpenAI entry of the catalog). */
export const MODEL = "gpt-5-mini";

/**
 * The chat request body every target receives.
 *
 * @param stream Whether to ask for a stream.
 * @returns The JSON text.
 */
export function chatBody(stream: boolean): string {
  return JSON.stringify({
    model: MODEL,
    stream,
    max_tokens: 64,
    messages: [{ role: "user", content: "hello gateway" }],
  });
}

/**
 * Starts `gateway/simulator/main.ts` in its own process.
 *
 * @param latencyMs Fixed latency before the first byte.
 * @param extraArgs More simulator flags (`--chunk-delay-ms`, `--reply`).
 * @returns The process and its OpenAI base URL.
 */
export async function startSimulatorProcess(
  latencyMs: number,
  extraArgs: string[] = [],
): Promise<SimulatorProcess> {
  const { child } = await spawnChild(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `${ROOT}gateway/simulator/main.ts`,
      "--port",
      "0",
      "--latency-ms",
      String(latencyMs),
      ...extraArgs,
    ],
    cwd: ROOT,
    ready: /^OPENAI_BASE_URL=(\S+)/,
  });
  const line = child.lines.find((l) => l.startsWith("OPENAI_BASE_URL="));
  return { child, openaiBase: line!.slice("OPENAI_BASE_URL=".length) };
}

/** A started floor relay (`floor.ts`). */
export interface FloorProcess {
  /** The process. */
  child: Child;
  /** Its base URL (it takes the gateway's paths). */
  url: string;
}

/**
 * Starts the floor relay (`floor.ts`) in front of an OpenAI base URL.
 *
 * @param openaiBase The upstream's OpenAI base URL.
 * @param options `bodiesThroughJs`: the floor that reads its bodies in
 *   JavaScript (`FLOOR_JS=1`).
 * @returns The process and its URL.
 */
export async function startFloorProcess(
  openaiBase: string,
  options: { bodiesThroughJs?: boolean } = {},
): Promise<FloorProcess> {
  const { child, match } = await spawnChild(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}bench/gateway/floor.ts`],
    env: {
      UPSTREAM: openaiBase,
      ...options.bodiesThroughJs ? { FLOOR_JS: "1" } : {},
    },
    ready: /floor relay listening on (\S+)/,
  });
  return { child, url: match[1] };
}

/** A started gateway and the caller whose key the load presents. */
export interface GatewayProcess {
  /** The process (its pid is the gateway's: `deno run` does not fork). */
  child: Child;
  /** The gateway's base URL. */
  url: string;
  /** A funded caller key. */
  callerKey: string;
}

/**
 * The `deno run` flags of `deno task start`, so the bench and the soak run the
 * gateway exactly as users do (the V8 tuning included).
 *
 * @returns The flags between `-A` and `gateway/main.ts`.
 */
export async function startTaskFlags(): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
  const words = (config.tasks.start as string).split(/\s+/);
  return words.slice(words.indexOf("-A") + 1, words.indexOf("gateway/main.ts"));
}

/**
 * Creates a funded caller in a fresh store, then starts `gateway/main.ts`
 * on that store in front of the simulator, with a pool of four OpenAI keys
 * under per-key limits. The store is the KV file at `kvPath`, or the
 * PostgreSQL database `extraEnv.GATEWAY_STORE` names (an empty one).
 *
 * @param openaiBase The simulator's OpenAI base URL.
 * @param kvPath A KV file path that does not exist yet.
 * @param extraDenoFlags Flags for `deno run` (e.g. `--cpu-prof`).
 * @param extraEnv More environment variables (e.g. `MALLOC_ARENA_MAX`, `GATEWAY_STORE`).
 * @returns The process, URL and caller key.
 */
export async function startGatewayProcess(
  openaiBase: string,
  kvPath: string,
  extraDenoFlags: string[] = [],
  extraEnv: Record<string, string> = {},
): Promise<GatewayProcess> {
  const { kv } = await openStore({ store: extraEnv.GATEWAY_STORE, kvPath });
  const caller = await createCaller(kv, {
    name: "bench",
    creditsMicros: usdToMicros(1_000_000),
  });
  await closeStore(kv);
  const { child, match } = await spawnChild(Deno.execPath(), {
    args: [
      "run",
      "-A",
      ...await startTaskFlags(),
      ...extraDenoFlags,
      `${ROOT}gateway/main.ts`,
    ],
    cwd: ROOT,
    env: {
      PORT: "0",
      HOST: "127.0.0.1",
      GATEWAY_KV_PATH: kvPath,
      OPENAI_BASE_URL: openaiBase,
      OPENAI_API_KEYS: "sk-bench-0,sk-bench-1,sk-bench-2,sk-bench-3",
      // Limits high enough never to bind, so the key pool's accounting runs on every call.
      OPENAI_RPM: "10000000",
      OPENAI_TPM: "1000000000",
      ...extraEnv,
    },
    ready: /listening on (http:\/\/\S+)/,
  });
  return { child, url: match[1], callerKey: caller.key };
}

/** A started Portkey gateway. */
export interface PortkeyProcess {
  /** The Node process. */
  child: Child;
  /** Its base URL. */
  url: string;
}

/**
 * Starts `@portkey-ai/gateway` (installed under `bench/.cache/node`) on Node.
 *
 * @param nodeDir The directory holding its `node_modules`.
 * @param port A free port (Portkey takes `--port=` and has no port 0).
 * @returns The process and its URL.
 */
export async function startPortkeyProcess(
  nodeDir: string,
  port: number,
): Promise<PortkeyProcess> {
  const { child } = await spawnChild("node", {
    args: [
      `${nodeDir}/node_modules/@portkey-ai/gateway/build/start-server.js`,
      `--port=${port}`,
      "--headless",
    ],
    cwd: nodeDir,
    env: { NODE_ENV: "production" },
    ready: /Ready for connections/,
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

/**
 * A free loopback port, found by binding port 0 and releasing it.
 *
 * @returns The port number.
 */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** The request each target receives, by target. */
export interface TargetRequests {
  /** Straight to the simulator. */
  direct: WrkRequest;
  /** Through our gateway. */
  gateway: WrkRequest;
  /** Through Portkey. */
  portkey: WrkRequest;
}

/**
 * The same chat call addressed to each target.
 *
 * @param sim The simulator.
 * @param gateway Our gateway.
 * @param portkey Portkey.
 * @param stream Whether to ask for a stream.
 * @returns One request per target.
 */
export function targetRequests(
  sim: SimulatorProcess,
  gateway: GatewayProcess,
  portkey: PortkeyProcess,
  stream: boolean,
): TargetRequests {
  const body = chatBody(stream);
  const json = { "content-type": "application/json" };
  return {
    direct: {
      url: `${sim.openaiBase}/chat/completions`,
      headers: { ...json, authorization: "Bearer sk-bench-direct" },
      body,
    },
    gateway: {
      url: `${gateway.url}/v1/chat/completions`,
      headers: { ...json, authorization: `Bearer ${gateway.callerKey}` },
      body,
    },
    portkey: {
      url: `${portkey.url}/v1/chat/completions`,
      headers: {
        ...json,
        authorization: "Bearer sk-bench-portkey",
        "x-portkey-provider": "openai",
        "x-portkey-custom-host": sim.openaiBase,
      },
      body,
    },
  };
}

/**
 * CPU per non-streamed call of the gateway as a ratio to the floor relay,
 * quickly: one simulator (0 ms), the floor (`floor.ts`), the floor with its
 * bodies through JavaScript (`FLOOR_JS=1`) and the gateway as
 * `deno task start` runs it (KV file on disk), each in its own process; then
 * `rounds` rounds in which the three take turns under unpaced wrk (64
 * connections, `seconds` each), CPU from `/proc/<pid>/stat`. The figure to
 * compare two versions of the hot path by, without the whole `deno task bench`.
 *
 * `deno run -A bench/gateway/cpu_ratio.ts [rounds] [seconds] [--cpu-prof DIR] [--v8-flags F] [--env K=V]…`
 *
 * With `--cpu-prof DIR` the gateway runs under V8's sampling profiler and
 * writes its profile into DIR when it stops; `--v8-flags F` replaces the start
 * task's V8 flags, to weigh them; `--env K=V` sets a variable of the gateway
 * (`GATEWAY_USAGE_AGGREGATES=off` weighs the usage counters, `GATEWAY_STORE`
 * runs it on PostgreSQL).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { readCpuMicros, readMemory, readThreadCpuMicros } from "../_process.ts";
import {
  chatBody,
  startFloorProcess,
  startGatewayProcess,
  startSimulatorProcess,
} from "./targets.ts";
import { runWrk } from "./wrk.ts";

const { values, positionals } = parseArgs({
  args: Deno.args,
  allowPositionals: true,
  options: {
    "cpu-prof": { type: "string" },
    "v8-flags": { type: "string" },
    env: { type: "string", multiple: true, default: [] },
  },
});
const rounds = Number(positionals[0] ?? 3);
const seconds = Number(positionals[1] ?? 4);
const work = await Deno.makeTempDir({ prefix: "mcpkit_cpu_ratio_" });

const sim = await startSimulatorProcess(0);
const floor = await startFloorProcess(sim.openaiBase);
const floorJs = await startFloorProcess(sim.openaiBase, {
  bodiesThroughJs: true,
});
const profileFlags = [
  ...values["cpu-prof"]
    ? ["--cpu-prof", `--cpu-prof-dir=${values["cpu-prof"]}`]
    : [],
  ...values["v8-flags"] ? [`--v8-flags=${values["v8-flags"]}`] : [],
];
const gateway = await startGatewayProcess(
  sim.openaiBase,
  `${work}/gateway.kv`,
  profileFlags,
  Object.fromEntries(values.env.map((pair) => {
    const at = pair.indexOf("=");
    return [pair.slice(0, at), pair.slice(at + 1)];
  })),
);
/** A target: its process and the non-streamed chat call it answers. */
const target = (pid: number, base: string, key: string) => ({
  pid,
  request: {
    url: `${base}/v1/chat/completions`,
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${key}`,
    },
    body: chatBody(false),
  },
});
const targets = {
  floor: target(floor.child.pid, floor.url, "sk-bench-direct"),
  floorJs: target(floorJs.child.pid, floorJs.url, "sk-bench-direct"),
  gateway: target(gateway.child.pid, gateway.url, gateway.callerKey),
};

try {
  for (const target of Object.values(targets)) {
    await runWrk(target.request, { connections: 64, durationS: 2 }, work);
  }
  for (let round = 1; round <= rounds; round++) {
    const perCall: Record<string, number> = {};
    const rps: Record<string, number> = {};
    let threadsBefore = new Map<string, number>();
    for (const [name, target] of Object.entries(targets)) {
      if (name === "gateway") {
        threadsBefore = await readThreadCpuMicros(target.pid);
      }
      const before = await readCpuMicros(target.pid);
      const result = await runWrk(
        target.request,
        { connections: 64, durationS: seconds },
        work,
      );
      if (result.errors > 0) {
        throw new Error(`${name} answered ${result.errors} errors`);
      }
      perCall[name] = (await readCpuMicros(target.pid) - before) /
        result.requests;
      rps[name] = result.rps;
      if (name === "gateway") {
        const after = await readThreadCpuMicros(target.pid);
        const spent = [...after].map(([thread, micros]) =>
          [
            thread,
            (micros - (threadsBefore.get(thread) ?? 0)) / result.requests,
          ] as const
        ).filter(([, perCall]) => perCall >= 1).sort((a, b) => b[1] - a[1]);
        console.log(
          `  gateway threads, µs/call: ${
            spent.map(([t, v]) => `${t} ${v.toFixed(0)}`).join(", ")
          }`,
        );
      }
    }
    const figure = (name: string) =>
      `${perCall[name].toFixed(0)} µs/call (${rps[name].toFixed(0)} req/s)`;
    console.log(
      `round ${round}: floor ${figure("floor")}, floor with bodies through JS ${
        figure("floorJs")
      }, gateway ${figure("gateway")}; gateway / floor ${
        (perCall.gateway / perCall.floor).toFixed(2)
      }×, / JS floor ${(perCall.gateway / perCall.floorJs).toFixed(2)}×`,
    );
  }
  const memory = await readMemory(gateway.child.pid);
  console.log(
    `gateway peak RSS ${memory.peakMiB.toFixed(0)} MiB, now ${
      memory.rssMiB.toFixed(0)
    } MiB`,
  );
} finally {
  await gateway.child.stop();
  await floor.child.stop();
  await floorJs.child.stop();
  await sim.child.stop();
  await Deno.remove(work, { recursive: true });
}

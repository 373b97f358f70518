/**
 * CPU per non-streamed call of the gateway as a ratio to the floor relay,
 * quickly: one simulator (0 ms), the floor (`floor.ts`) and the gateway as
 * `deno task start` runs it (KV file on disk), each in its own process; then
 * `rounds` rounds in which the two take turns under unpaced wrk (64
 * connections, `seconds` each), CPU from `/proc/<pid>/stat`. The figure to
 * compare two versions of the hot path by, without the whole `deno task bench`.
 *
 * `deno run -A bench/gateway/cpu_ratio.ts [rounds] [seconds] [--cpu-prof DIR]`
 *
 * With `--cpu-prof DIR` the gateway runs under V8's sampling profiler and
 * writes its profile into DIR when it stops; `--v8-flags F` replaces the start
 * task's V8 flags, to weigh them.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { readCpuMicros, readMemory, spawnChild } from "../_process.ts";
import {
  chatBody,
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
  },
});
const rounds = Number(positionals[0] ?? 3);
const seconds = Number(positionals[1] ?? 4);
const work = await Deno.makeTempDir({ prefix: "mcpkit_cpu_ratio_" });

const sim = await startSimulatorProcess(0);
const floor = await spawnChild(Deno.execPath(), {
  args: ["run", "-A", new URL("./floor.ts", import.meta.url).pathname],
  env: { UPSTREAM: sim.openaiBase },
  ready: /floor relay listening on (\S+)/,
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
);
const json = { "content-type": "application/json" };
const targets = {
  floor: {
    pid: floor.child.pid,
    request: {
      url: `${floor.match[1]}/v1/chat/completions`,
      headers: { ...json, authorization: "Bearer sk-bench-direct" },
      body: chatBody(false),
    },
  },
  gateway: {
    pid: gateway.child.pid,
    request: {
      url: `${gateway.url}/v1/chat/completions`,
      headers: { ...json, authorization: `Bearer ${gateway.callerKey}` },
      body: chatBody(false),
    },
  },
};

try {
  for (const target of Object.values(targets)) {
    await runWrk(target.request, { connections: 64, durationS: 2 }, work);
  }
  for (let round = 1; round <= rounds; round++) {
    const perCall: Record<string, number> = {};
    const rps: Record<string, number> = {};
    for (const [name, target] of Object.entries(targets)) {
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
    }
    console.log(
      `round ${round}: floor ${perCall.floor.toFixed(0)} µs/call (${
        rps.floor.toFixed(0)
      } req/s), gateway ${perCall.gateway.toFixed(0)} µs/call (${
        rps.gateway.toFixed(0)
      } req/s), ratio ${(perCall.gateway / perCall.floor).toFixed(2)}×`,
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
  await sim.child.stop();
  await Deno.remove(work, { recursive: true });
}

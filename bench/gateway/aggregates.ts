/**
 * What the usage aggregates cost on the hot path: two gateway processes as
 * `deno task start` runs them, each with its own KV file on disk, one with
 * `GATEWAY_USAGE_AGGREGATES=on` (the default) and one with `off`, in front of
 * one simulator (0 ms), taking turns: saturation throughput and server CPU
 * per call (`wrk -t1 -c64`, unpaced), then latency at a paced 500 req/s.
 *
 * `deno run -A bench/gateway/aggregates.ts [rounds] [seconds]`
 *
 * @module
 */
import { readCpuMicros } from "../_process.ts";
import { startGatewayProcess, startSimulatorProcess } from "./targets.ts";
import { chatBody } from "./targets.ts";
import { runWrk } from "./wrk.ts";

const rounds = Number(Deno.args[0] ?? 3);
const seconds = Number(Deno.args[1] ?? 6);
const work = await Deno.makeTempDir({ prefix: "mcpkit-agg-" });
const sim = await startSimulatorProcess(0);
const modes = ["on", "off"] as const;
const gateways = Object.fromEntries(
  await Promise.all(modes.map(async (mode) => [
    mode,
    await startGatewayProcess(sim.openaiBase, `${work}/${mode}.kv`, [], {
      GATEWAY_USAGE_AGGREGATES: mode,
    }),
  ])),
);
const results: Record<string, { rps: number[]; cpu: number[]; p50: number[] }> =
  { on: { rps: [], cpu: [], p50: [] }, off: { rps: [], cpu: [], p50: [] } };
try {
  for (const mode of modes) {
    const g = gateways[mode];
    await runWrk(
      {
        url: `${g.url}/v1/chat/completions`,
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${g.callerKey}`,
        },
        body: chatBody(false),
      },
      { connections: 64, durationS: 2 },
      work,
    );
  }
  for (let round = 0; round < rounds; round++) {
    for (const mode of round % 2 === 0 ? modes : [...modes].reverse()) {
      const g = gateways[mode];
      const request = {
        url: `${g.url}/v1/chat/completions`,
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${g.callerKey}`,
        },
        body: chatBody(false),
      };
      const before = await readCpuMicros(g.child.pid);
      const saturated = await runWrk(request, {
        connections: 64,
        durationS: seconds,
      }, work);
      const cpu = (await readCpuMicros(g.child.pid) - before) /
        saturated.requests;
      const paced = await runWrk(request, {
        connections: 64,
        durationS: seconds,
        rate: 500,
      }, work);
      results[mode].rps.push(saturated.rps);
      results[mode].cpu.push(cpu);
      results[mode].p50.push(paced.p50);
      console.error(
        `round ${round + 1} ${mode}: ${
          saturated.rps.toFixed(0)
        } req/s saturated (${saturated.errors} errors), ${
          cpu.toFixed(0)
        } µs CPU/call, p50 at 500 req/s ${paced.p50.toFixed(3)} ms`,
      );
    }
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const on = results.on;
  const off = results.off;
  console.log(JSON.stringify(
    {
      rounds,
      seconds,
      on: { rps: mean(on.rps), cpuMicros: mean(on.cpu), p50Ms: mean(on.p50) },
      off: {
        rps: mean(off.rps),
        cpuMicros: mean(off.cpu),
        p50Ms: mean(off.p50),
      },
      throughputChange: mean(on.rps) / mean(off.rps) - 1,
      addedP50Ms: mean(on.p50) - mean(off.p50),
    },
    null,
    2,
  ));
} finally {
  for (const mode of modes) await gateways[mode].child.stop();
  await sim.child.stop();
  await Deno.remove(work, { recursive: true });
}

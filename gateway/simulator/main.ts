/**
 * Runs the provider simulator on its own, for benchmarks and manual testing:
 *
 * ```sh
 * deno run -A gateway/simulator/main.ts --port 9000 [--hostname 127.0.0.1]
 *   [--latency-ms 0] [--chunk-delay-ms 0] [--reply "fixed text"] [--max-records 1000]
 * ```
 *
 * Prints `Simulator listening on <baseUrl>`, then one `P_BASE_URL=<url>` line
 * per provider (ready for the gateway's environment), and stops cleanly on
 * SIGINT or SIGTERM.
 *
 * @module
 */

import { parseArgs } from "node:util";
import type { Behaviour } from "./behaviour.ts";
import { startSimulator } from "./mod.ts";

function numberOption(
  value: string | undefined,
  name: string,
): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) {
    throw new RangeError(
      `Cannot use "${value}" for --${name}: expected a non-negative integer`,
    );
  }
  return parsed;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      port: { type: "string", default: "0" },
      hostname: { type: "string", default: "127.0.0.1" },
      "latency-ms": { type: "string" },
      "chunk-delay-ms": { type: "string" },
      reply: { type: "string" },
      "max-records": { type: "string", default: "1000" },
    },
  });
  const behaviour: Behaviour = {
    latencyMs: numberOption(values["latency-ms"], "latency-ms"),
    chunkDelayMs: numberOption(values["chunk-delay-ms"], "chunk-delay-ms"),
    reply: values.reply,
  };
  const sim = await startSimulator({
    port: numberOption(values.port, "port"),
    hostname: values.hostname,
    behaviour: Object.fromEntries(
      Object.entries(behaviour).filter(([, v]) => v !== undefined),
    ),
    maxRecords: numberOption(values["max-records"], "max-records"),
  });
  console.log(`Simulator listening on ${sim.baseUrl}`);
  for (const [name, url] of Object.entries(sim.env())) {
    console.log(`${name}=${url}`);
  }
  const stop = () => {
    sim.close().then(() => Deno.exit(0));
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}

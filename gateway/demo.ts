/**
 * `deno task demo`: the gateway in front of the built-in provider simulator
 * (all five providers, no network), with a demo caller key holding demo
 * credits, and a `curl` line to try it.
 *
 * The KV is `:memory:` unless `GATEWAY_KV_PATH` is set, so a demo leaves
 * nothing behind.
 *
 * @module
 */
import { createCaller } from "./callers.ts";
import { ConfigError, parseConfig, PROVIDERS } from "./config.ts";
import { usdToMicros } from "./credits/money.ts";
import { type RunningGateway, startGateway } from "./server.ts";
import { startSimulator } from "./simulator/mod.ts";

const DEMO_CREDITS_USD = 5;

/** A running demo: the simulator, the gateway in front of it, and a caller. */
export interface Demo {
  /** The gateway. */
  gateway: RunningGateway;
  /** The simulator's base URL. */
  simulatorUrl: string;
  /** The demo caller's key. */
  callerKey: string;
  /** The demo caller's starting credits, USD. */
  creditsUsd: number;
  /** Stops the gateway, then the simulator. */
  close(): Promise<void>;
}

/**
 * Starts the provider simulator and the gateway in front of it, in this
 * process, with a KV in memory (unless `GATEWAY_KV_PATH` is set) and a caller
 * holding $5 of demo credits.
 *
 * @param options `quiet`: keep the gateway's request log off stderr; `port`:
 * where it listens (default `PORT` or 8080; 0 picks a free one).
 * @returns The running demo.
 * @throws {ConfigError} On a configuration mistake (a bad variable, a busy port).
 */
export async function startDemo(
  options: { quiet?: boolean; port?: number } = {},
): Promise<Demo> {
  const sim = await startSimulator({
    behaviour: { latencyMs: 20, chunkDelayMs: 15 },
  });
  const env: Record<string, string | undefined> = {
    GATEWAY_KV_PATH: ":memory:",
    ...Deno.env.toObject(),
    ...sim.env(),
    ...(options.port !== undefined && { PORT: String(options.port) }),
  };
  for (const provider of PROVIDERS) {
    env[`${provider.toUpperCase()}_API_KEYS`] =
      `demo-${provider}-key-1,demo-${provider}-key-2`;
  }
  let gateway: RunningGateway;
  try {
    gateway = await startGateway(
      parseConfig({ env }),
      options.quiet ? { log: () => {} } : {},
    );
  } catch (error) {
    await sim.close();
    throw error;
  }
  const caller = await createCaller(gateway.kv, {
    name: "demo",
    creditsMicros: usdToMicros(DEMO_CREDITS_USD),
  });
  return {
    gateway,
    simulatorUrl: sim.baseUrl,
    callerKey: caller.key,
    creditsUsd: DEMO_CREDITS_USD,
    close: async () => {
      await gateway.shutdown();
      await sim.close();
    },
  };
}

if (import.meta.main) {
  let demo: Demo;
  try {
    demo = await startDemo();
  } catch (error) {
    // A configuration mistake (a bad variable, a busy port) is one line.
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    Deno.exit(1);
  }
  const { gateway } = demo;
  const body = JSON.stringify({
    model: "claude-haiku-4-5",
    messages: [{ role: "user", content: "Hello, gateway" }],
  });
  console.log(
    `mcpkit gateway demo on ${gateway.url}, upstreams simulated at ${demo.simulatorUrl}
Demo caller key (shown once): ${demo.callerKey}  ($${DEMO_CREDITS_USD} of demo credits)

Try it:
curl -s ${gateway.url}/v1/chat/completions -H 'Authorization: Bearer ${demo.callerKey}' -H 'content-type: application/json' -d '${body}'
curl -s ${gateway.url}/v1/credits -H 'Authorization: Bearer ${demo.callerKey}'
Models: curl -s ${gateway.url}/v1/models   Stop: Ctrl-C`,
  );
  const stop = async () => {
    await demo.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}

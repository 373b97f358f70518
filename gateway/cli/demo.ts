/**
 * `deno task demo`: the gateway in front of the built-in provider simulator
 * (all five providers, no network), with a demo caller key holding demo
 * credits, a `curl` line to try it, and the console's address with the
 * admin token that signs in to it (`GATEWAY_ADMIN_TOKEN`, or one made up
 * for this run).
 *
 * The KV is `:memory:` unless `GATEWAY_KV_PATH` is set, so a demo leaves
 * nothing behind. It listens on 127.0.0.1 unless `HOST` says otherwise
 * (`HOST=0.0.0.0` for every interface): it prints an admin token, and the
 * admin API and console answer whoever can reach the port.
 *
 * @module
 */
import { createCaller } from "../state/callers.ts";
import { ConfigError, parseConfig } from "../config.ts";
import { PROVIDER_NAMES } from "../upstream/providers/mod.ts";
import { usdToMicros } from "../state/credits/money.ts";
import { type RunningGateway, startGateway } from "../http/server.ts";
import { startSimulator } from "../simulator/mod.ts";

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
  /** The admin token that signs in to the console: `GATEWAY_ADMIN_TOKEN`, or one made for this run. */
  adminToken: string;
  /** Whether {@linkcode Demo.adminToken} was made for this run (not the operator's own, so it may be printed). */
  adminTokenMade: boolean;
  /** Stops the gateway, then the simulator. */
  close(): Promise<void>;
}

/**
 * Starts the provider simulator and the gateway in front of it, in this
 * process, with a KV in memory (unless `GATEWAY_KV_PATH` is set), a caller
 * holding $5 of demo credits, and the admin API and console on
 * (`GATEWAY_ADMIN_TOKEN`, or a random token made for this run), listening
 * on 127.0.0.1 unless `HOST` is set.
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
    // Loopback unless the operator asks for more: the demo prints its
    // admin token, and the gateway's own default is every interface.
    HOST: "127.0.0.1",
    ...Deno.env.toObject(),
    ...sim.env(),
    ...(options.port !== undefined && { PORT: String(options.port) }),
  };
  for (const provider of PROVIDER_NAMES) {
    env[`${provider.toUpperCase()}_API_KEYS`] =
      `demo-${provider}-key-1,demo-${provider}-key-2`;
  }
  // The console needs the admin token; a run without one gets its own.
  const adminTokenMade = !env.GATEWAY_ADMIN_TOKEN;
  env.GATEWAY_ADMIN_TOKEN ||= `demo-admin-${
    crypto.randomUUID().replaceAll("-", "")
  }`;
  const adminToken = env.GATEWAY_ADMIN_TOKEN;
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
    adminToken,
    adminTokenMade,
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
  const key = demo.callerKey;
  console.log(
    `mcpkit gateway demo on ${gateway.url}, upstreams simulated at ${demo.simulatorUrl}
Demo caller key (shown once): ${key}  ($${DEMO_CREDITS_USD} of demo credits)

Try it:
curl -sS --fail-with-body ${gateway.url}/v1/chat/completions -H 'Authorization: Bearer ${key}' -H 'content-type: application/json' -d '${body}'
curl -sS --fail-with-body ${gateway.url}/v1/credits -H 'Authorization: Bearer ${key}'
Models: curl -sS ${gateway.url}/v1/models

Console: ${gateway.url}/console  (sign in with the admin token${
      demo.adminTokenMade
        ? ` made for this run: ${demo.adminToken}`
        : ": your GATEWAY_ADMIN_TOKEN"
    })
Caller page: ${gateway.url}/activity  (sign in with the demo caller key)
Stop: Ctrl-C`,
  );
  const stop = async () => {
    await demo.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}

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
import { startGateway } from "./server.ts";
import { startSimulator } from "./simulator/mod.ts";

const DEMO_CREDITS_USD = 5;

if (import.meta.main) {
  const sim = await startSimulator({
    behaviour: { latencyMs: 20, chunkDelayMs: 15 },
  });
  const env: Record<string, string | undefined> = {
    GATEWAY_KV_PATH: ":memory:",
    ...Deno.env.toObject(),
    ...sim.env(),
  };
  for (const provider of PROVIDERS) {
    env[`${provider.toUpperCase()}_API_KEYS`] =
      `demo-${provider}-key-1,demo-${provider}-key-2`;
  }
  let gateway;
  try {
    gateway = await startGateway(parseConfig({ env }));
  } catch (error) {
    // A configuration mistake (a bad variable, a busy port) is one line.
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    Deno.exit(1);
  }
  const caller = await createCaller(gateway.kv, {
    name: "demo",
    creditsMicros: usdToMicros(DEMO_CREDITS_USD),
  });
  const body = JSON.stringify({
    model: "claude-haiku-4-5",
    messages: [{ role: "user", content: "Hello, gateway" }],
  });
  console.log(
    `mcpkit gateway demo on ${gateway.url}, upstreams simulated at ${sim.baseUrl}
Demo caller key (shown once): ${caller.key}  ($${DEMO_CREDITS_USD} of demo credits)

Try it:
curl -s ${gateway.url}/v1/chat/completions -H 'Authorization: Bearer ${caller.key}' -H 'content-type: application/json' -d '${body}'
curl -s ${gateway.url}/v1/credits -H 'Authorization: Bearer ${caller.key}'
Models: curl -s ${gateway.url}/v1/models   Stop: Ctrl-C`,
  );
  const stop = async () => {
    await gateway.shutdown();
    await sim.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}

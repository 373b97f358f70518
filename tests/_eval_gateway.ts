// What the eval suites that run against a real gateway share: a gateway in
// front of the provider simulator, and a caller with credit on it.
import { createCaller, type NewCaller } from "../gateway/state/callers.ts";
import { parseConfig } from "../gateway/config.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { type RunningGateway, startGateway } from "../gateway/http/server.ts";

/** What the simulator gives the gateway: its base URLs as environment. */
export interface SimulatorEnv {
  /** The `*_BASE_URL` variables pointing the gateway at the simulator. */
  env(): Record<string, string>;
}

/**
 * Starts a gateway (in-memory KV, port 0, quiet) in front of `sim`, with one
 * OpenAI key.
 *
 * @param sim The simulator.
 * @returns The gateway.
 */
export function simulatedGateway(sim: SimulatorEnv): Promise<RunningGateway> {
  return startGateway(
    parseConfig({
      env: {
        GATEWAY_KV_PATH: ":memory:",
        PORT: "0",
        ...sim.env(),
        OPENAI_API_KEYS: "sk-test-1",
      },
    }),
    { log: () => {} },
  );
}

/**
 * A gateway in front of `sim` (OpenAI models) and a caller named `eval`
 * with $1.
 *
 * @param sim The simulator.
 * @returns The gateway and the caller.
 */
export async function gatewayWithCaller(
  sim: SimulatorEnv,
): Promise<{ gateway: RunningGateway; caller: NewCaller }> {
  const gateway = await simulatedGateway(sim);
  const caller = await createCaller(gateway.kv, {
    name: "eval",
    creditsMicros: usdToMicros(1),
  });
  return { gateway, caller };
}

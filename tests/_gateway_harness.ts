/**
 * A gateway in front of the provider simulator, on loopback, for end-to-end
 * tests: nothing of the gateway is mocked.
 */
import { createCaller, type NewCaller } from "../gateway/state/callers.ts";
import { parseConfig } from "../gateway/config.ts";
import { PROVIDER_NAMES } from "../gateway/upstream/providers/mod.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { type RunningGateway, startGateway } from "../gateway/http/server.ts";
import {
  type Simulator,
  type SimulatorOptions,
  startSimulator,
} from "../gateway/simulator/mod.ts";

/** A running gateway, its simulator and one funded caller. */
export interface Harness extends AsyncDisposable {
  /** The gateway's base URL, `http://127.0.0.1:port`. */
  url: string;
  sim: Simulator;
  gateway: RunningGateway;
  kv: Deno.Kv;
  caller: NewCaller;
  /** Every structured log record the gateway wrote. */
  logs: Record<string, unknown>[];
  /** The provider keys configured, by provider. */
  providerKeys: Record<string, string[]>;
  /** Authorization headers of the harness caller. */
  auth(extra?: Record<string, string>): Record<string, string>;
  /** POSTs JSON to the gateway as the harness caller. */
  post(
    path: string,
    body: unknown,
    headers?: Record<string, string>,
  ): Promise<Response>;
  close(): Promise<void>;
}

/** Options of {@linkcode startHarness}. */
export interface HarnessOptions {
  /** Simulator options. */
  sim?: SimulatorOptions;
  /** Extra gateway environment (e.g. `GATEWAY_UPSTREAM_TIMEOUT_MS`). */
  env?: Record<string, string>;
  /** Keys per provider (default two each). */
  keysPerProvider?: number;
  /** The caller's opening credits, USD (default 100). */
  credits?: number;
  /** A KV path (default `:memory:`). */
  kvPath?: string;
}

/**
 * Starts a simulator and a gateway wired to it, and creates a funded caller.
 *
 * @param options Simulator behaviour, gateway environment, key count, credits.
 * @returns The harness; `await using` closes it.
 */
export async function startHarness(
  options: HarnessOptions = {},
): Promise<Harness> {
  const sim = await startSimulator(options.sim);
  const providerKeys: Record<string, string[]> = {};
  const env: Record<string, string> = {
    ...sim.env(),
    PORT: "0",
    HOST: "127.0.0.1",
    GATEWAY_KV_PATH: options.kvPath ?? ":memory:",
    ...options.env,
  };
  for (const provider of PROVIDER_NAMES) {
    const keys = Array.from(
      { length: options.keysPerProvider ?? 2 },
      (_, i) => `sk-${provider}-secret-${i}-${crypto.randomUUID()}`,
    );
    providerKeys[provider] = keys;
    env[`${provider.toUpperCase()}_API_KEYS`] ??= keys.join(",");
  }
  const logs: Record<string, unknown>[] = [];
  const gateway = await startGateway(parseConfig({ env }), {
    log: (record) => logs.push(record),
  });
  const caller = await createCaller(gateway.kv, {
    name: "harness",
    creditsMicros: usdToMicros(options.credits ?? 100),
  });
  const url = `http://127.0.0.1:${gateway.port}`;
  const auth = (extra: Record<string, string> = {}) => ({
    authorization: `Bearer ${caller.key}`,
    ...extra,
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await gateway.shutdown();
    await sim.close();
  };
  return {
    url,
    sim,
    gateway,
    kv: gateway.kv,
    caller,
    logs,
    providerKeys,
    auth,
    post: (path, body, headers = auth()) =>
      fetch(url + path, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
      }),
    close,
    [Symbol.asyncDispose]: close,
  };
}

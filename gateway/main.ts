/**
 * `deno task start`: the gateway on `PORT`, configured from the environment
 * (and `GATEWAY_CONFIG`). SIGTERM or SIGINT drains in-flight calls and exits.
 *
 * @module
 */
import { ConfigError, loadConfig } from "./config.ts";
import { startGateway } from "./server.ts";

if (import.meta.main) {
  let config;
  try {
    config = await loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    Deno.exit(1);
  }
  const gateway = await startGateway(config, {
    onListen: (url) =>
      console.error(
        `mcpkit gateway listening on ${url} (KV: ${config.kvPath})`,
      ),
  });
  const stop = async () => {
    await gateway.shutdown();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGTERM", stop);
  Deno.addSignalListener("SIGINT", stop);
}

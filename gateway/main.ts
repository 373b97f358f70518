/**
 * `deno task start`: the gateway on `PORT`, configured from the environment
 * (and `GATEWAY_CONFIG`). SIGTERM or SIGINT drains in-flight calls and exits.
 *
 * @module
 */
import { ConfigError, loadConfig, providerKeyWarnings } from "./config.ts";
import { startGateway } from "./http/server.ts";
import { describePostgresUrl } from "./state/store/mod.ts";

if (import.meta.main) {
  let gateway;
  try {
    const config = await loadConfig();
    // Names the store as `startGateway` opens it, without credentials.
    const store = () =>
      config.store
        ? `PostgreSQL ${describePostgresUrl(config.store)}`
        : `KV ${config.kvPath}`;
    gateway = await startGateway(config, {
      onListen: (url) =>
        console.error(
          ["0.0.0.0", "::"].includes(config.hostname)
            ? `mcpkit gateway listening on every interface, port ${
              new URL(url).port
            } (from this machine: ${url}; HOST=127.0.0.1 keeps it local; store: ${store()})`
            : `mcpkit gateway listening on ${url} (store: ${store()})`,
        ),
    });
    for (const warning of providerKeyWarnings(config)) console.error(warning);
  } catch (error) {
    // A configuration mistake (a bad variable, a busy port) is one line.
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    Deno.exit(1);
  }
  const running = gateway;
  const stop = async () => {
    await running.shutdown();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGTERM", stop);
  Deno.addSignalListener("SIGINT", stop);
}

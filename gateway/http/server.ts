/**
 * Runs a gateway on `Deno.serve`: opens its store (a KV file or PostgreSQL),
 * sweeps the credit leases of crashed processes and expired usage buckets,
 * serves `/metrics` on an address of its own when asked, and shuts down
 * gracefully (in-flight calls drain, queued charges commit, then the store
 * closes).
 *
 * @module
 */
import { createGateway } from "./app.ts";
import { ConfigError, type GatewayConfig } from "../config.ts";
import { type ResilientServer, serveResilient } from "../../_serve.ts";
import { sweepExpiredLeases } from "../state/credits/sweep.ts";
import {
  journalDirFor,
  replayJournals,
  SettleJournal,
} from "../state/credits/journal.ts";
import { sweepUsage } from "../state/usage_buckets.ts";
import { closeStore, openStore, storeClock } from "../state/store/mod.ts";
import type { CatalogEntry } from "../state/catalog.ts";

/** How often each process releases reservations left open by a crashed one. */
const SWEEP_INTERVAL_MS = 60_000;

/** A gateway that is serving. */
export interface RunningGateway {
  /** `http://host:port`, for loopback callers. */
  readonly url: string;
  /** The port it listens on. */
  readonly port: number;
  /** Its store (Deno KV's interface, on a KV file or PostgreSQL). */
  readonly kv: Deno.Kv;
  /** Which store it opened, for the start-up line: `KV file ./data/gateway.kv`, `PostgreSQL db:5432/gateway`. */
  readonly store: string;
  /**
   * Stops accepting calls, lets in-flight ones finish (up to the drain
   * timeout), commits the charges still queued, then closes the KV.
   *
   * @returns A promise that resolves once everything is closed.
   */
  shutdown(): Promise<void>;
}

/** Options of {@linkcode startGateway}. */
export interface StartOptions {
  /** An open KV to use instead of opening `config.kvPath`; it is not closed on shutdown. */
  kv?: Deno.Kv;
  /** The models served; defaults to the shipped catalog. */
  catalog?: readonly CatalogEntry[];
  /** Structured log sink; defaults to JSON lines on stderr. */
  log?: (record: Record<string, unknown>) => void;
  /** Called once listening. */
  onListen?: (url: string) => void;
}

/**
 * Opens the store (PostgreSQL at `config.store`, else the KV at
 * `config.kvPath`, its folder created) and serves the gateway.
 *
 * @param config The validated configuration.
 * @param options A KV, catalog, log sink or listen callback to use instead of the defaults.
 * @returns The running gateway.
 *
 * @example Serve on a free port with an in-memory store
 * ```ts
 * import { parseConfig } from "../config.ts";
 * import { startGateway } from "./server.ts";
 * import assert from "node:assert/strict";
 *
 * const kv = await Deno.openKv(":memory:");
 * const gateway = await startGateway(
 *   parseConfig({ env: { PORT: "0", HOST: "127.0.0.1" } }),
 *   { kv, log: () => {} },
 * );
 * const response = await fetch(`${gateway.url}/health`);
 * assert.deepEqual(await response.json(), { ok: true });
 * await gateway.shutdown();
 * kv.close();
 * ```
 */
export async function startGateway(
  config: GatewayConfig,
  options: StartOptions = {},
): Promise<RunningGateway> {
  const log = options.log ??
    ((record) => console.error(JSON.stringify(record)));
  const opened = options.kv
    ? { kv: options.kv, description: "a store passed in" }
    : await openStore(config, log);
  const kv = opened.kv;
  const journalDir = options.kv ? undefined : journalDirFor(config);
  const journal = journalDir ? await SettleJournal.open(journalDir) : undefined;
  // One clock for every host on PostgreSQL: the database's.
  const now = storeClock(kv, () => Date.now() + config.clockOffsetMs);
  const app = createGateway({
    config,
    kv,
    catalog: options.catalog,
    log: options.log,
    journal,
    now,
  });
  // Charges a dead process left in the journal: charged (once), its leases
  // given back, before this process serves, and again at every sweep.
  const replay = async () => {
    if (!journalDir) return;
    try {
      const replayed = await replayJournals(kv, journalDir, {
        own: journal?.path,
        traceRetentionMs: config.traceRetentionDays * 86_400_000,
        usageAggregates: config.usageAggregates === "on",
      });
      if (replayed.journals > 0) {
        log({
          level: "warn",
          message: "Replayed the settlement journals of dead processes",
          ...replayed,
        });
      }
    } catch (error) {
      log({ level: "error", message: `Journal replay failed: ${error}` });
    }
  };
  await replay();
  // Limited provider keys' first shared slices, so the first calls find one.
  await app.ready();
  const sweep = setInterval(() => {
    replay();
    sweepExpiredLeases(kv, now()).catch((error) =>
      log({ level: "error", message: `Lease sweep failed: ${error}` })
    );
    sweepUsage(kv, now(), config.usageRetentionDays).catch((error) =>
      log({ level: "error", message: `Usage sweep failed: ${error}` })
    );
  }, SWEEP_INTERVAL_MS);
  Deno.unrefTimer(sweep);

  let url = "";
  let server: ResilientServer;
  try {
    server = serveResilient({
      port: config.port,
      hostname: config.hostname,
      onListen: ({ hostname, port }) => {
        const host = hostname === "0.0.0.0" || hostname === "::"
          ? "localhost"
          : hostname;
        url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
        options.onListen?.(url);
      },
      log: (message) => log({ level: "error", message }),
    }, app.fetch);
  } catch (error) {
    clearInterval(sweep);
    journal?.close();
    if (!options.kv) await closeStore(kv);
    if (error instanceof Deno.errors.AddrInUse) {
      throw new ConfigError(
        `Port ${config.port} on ${config.hostname} is already in use: set PORT= to a free port`,
      );
    }
    throw error;
  }

  // Prometheus without the admin token, on an address of its own.
  let metricsServer: Deno.HttpServer | undefined;
  if (config.metricsAddr) {
    const at = config.metricsAddr.lastIndexOf(":");
    try {
      metricsServer = Deno.serve(
        {
          hostname: config.metricsAddr.slice(0, at).replace(/^\[|\]$/g, ""),
          port: Number(config.metricsAddr.slice(at + 1)),
          onListen: () => {},
        },
        (request) =>
          new URL(request.url).pathname === "/metrics" &&
            request.method === "GET"
            ? app.metricsResponse()
            : new Response("Not found: this address serves GET /metrics\n", {
              status: 404,
            }),
      );
    } catch (error) {
      await server.shutdown();
      clearInterval(sweep);
      journal?.close();
      if (!options.kv) await closeStore(kv);
      throw new ConfigError(
        `GATEWAY_METRICS_ADDR ${config.metricsAddr} cannot be served: ${
          (error as Error).message
        }`,
      );
    }
  }

  let closing: Promise<void> | undefined;
  return {
    get url() {
      return url;
    },
    port: server.addr.port,
    kv,
    store: opened.description,
    shutdown() {
      closing ??= (async () => {
        clearInterval(sweep);
        let timer: ReturnType<typeof setTimeout> | undefined;
        const drained = Promise.all([
          server.shutdown(),
          metricsServer?.shutdown(),
        ]);
        const timedOut = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, config.drainTimeoutMs);
        });
        await Promise.race([drained, timedOut]);
        clearTimeout(timer);
        // Answered calls may still have their charge queued (write-behind).
        await app.flush();
        // What did not commit stays in the journal for the next process.
        journal?.close();
        if (!options.kv) await closeStore(kv);
      })();
      return closing;
    },
  };
}

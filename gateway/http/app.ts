/**
 * The gateway's HTTP app: builds the state a call needs (catalog, key pool,
 * callers, billing, limits, metrics), stamps each request with its request
 * and trace ids, and mounts the route groups at the root and under `/v1`:
 * calls (`call_routes.ts`), the models listing, the caller's account, health
 * and metrics, the admin API and the console pages. Which convention an
 * error is written in is set by the route that matched (`route_scopes.ts`).
 * The work of an inference call is in `call/`.
 *
 * @module
 */
import { uuidV7 } from "../_ids.ts";
import { Hono } from "hono";
import type { SettleJournal } from "../state/credits/journal.ts";
import { BodyBudget, bodyGuard } from "./body_guard.ts";
import { cheapestRates } from "../call/hold_floor.ts";
import { createAdminRoutes } from "./admin.ts";
import { consolePages } from "./console/pages.ts";
import { callerAuth } from "./auth.ts";
import type { CallDeps } from "../call/deps.ts";
import { LimitCounters } from "../state/limits/counters.ts";
import { LiveCatalog } from "../state/live_catalog.ts";
import { statePins } from "../state/response_pins.ts";
import { createMetrics } from "../observe/metrics.ts";
import { Catalog, DEFAULT_CATALOG } from "../state/catalog.ts";
import type { GatewayConfig } from "../config.ts";
import { createCallerAuthenticator } from "../state/callers.ts";
import { createBilling } from "../state/credits/billing.ts";
import {
  errorResponse,
  errorRouteOf,
  GatewayError,
  renderErrors,
} from "../errors.ts";
import { MemoryKeyPool } from "../upstream/key_pool.ts";
import { PROVIDERS } from "../upstream/providers/mod.ts";
import type { CatalogEntry } from "../state/catalog.ts";
import type { KeyPool } from "../upstream/key_pool.ts";
import type { ProviderName } from "../upstream/providers/mod.ts";
import type { GatewayEnv } from "./_env.ts";
import { callRoutes } from "./call_routes.ts";
import { callerRoutes } from "./caller_routes.ts";
import { modelRoutes } from "./model_routes.ts";
import { metricsResponse, statusRoutes } from "./status_routes.ts";
import { doubledPrefixRoutes, scopeRoutes } from "./route_scopes.ts";
import { storeStatus } from "../state/store/mod.ts";

/** What {@linkcode createGateway} needs. */
export interface GatewayOptions {
  /** Validated configuration (see `parseConfig`/`loadConfig`). */
  config: GatewayConfig;
  /** The gateway's state: callers, balances, ledger, traces. */
  kv: Deno.Kv;
  /** The models served; defaults to the shipped catalog. */
  catalog?: readonly CatalogEntry[];
  /** The provider key pool; defaults to one built from the config's keys. */
  keyPool?: KeyPool;
  /** Where structured log records go; defaults to one JSON line each on stderr. */
  log?: (record: Record<string, unknown>) => void;
  /** The settlement journal each charge is written to before it commits. */
  journal?: SettleJournal;
  /** The clock of time-based state (leases, limit windows, key windows): the store's (`storeClock`); default this process's. */
  now?: () => number;
}

/**
 * The gateway as an HTTP handler. It is a Hono app; the public type names only
 * what callers use, so the package's API does not hang on Hono's types.
 */
export interface GatewayApp {
  /** Answers one request; hand it to `Deno.serve`. */
  fetch(request: Request): Response | Promise<Response>;
  /** Sends a request to the app in-process, as Hono's `app.request()` (handy in tests). */
  request(
    input: string | Request | URL,
    init?: RequestInit,
  ): Response | Promise<Response>;
  /**
   * Waits until the charges of answered calls are committed: a non-streamed
   * call is answered before its settlement commits (write-behind). Call it
   * after the server has drained and before closing the KV.
   *
   * @returns A promise that resolves once every queued settlement committed or was logged as failed.
   */
  flush(): Promise<void>;
  /**
   * The `/metrics` answer without the admin check, for a listen address of
   * its own (`GATEWAY_METRICS_ADDR`).
   *
   * @returns The Prometheus text exposition.
   */
  metricsResponse(): Promise<Response>;
  /**
   * Resolves once the key pool holds its first slice of each limited
   * provider key's shared RPM/TPM, so the first calls find one. `startGateway`
   * waits for it before it serves.
   *
   * @returns A promise.
   */
  ready(): Promise<void>;
}

/**
 * Builds the gateway: a Hono app serving every route bare and under `/v1`.
 * It holds no module-level state; everything lives in `options.kv` and in
 * the key pool this call creates.
 *
 * @param options Configuration, KV and optional overrides.
 * @returns The app; serve it with `Deno.serve(app.fetch)`.
 *
 * @example Serve a gateway
 * ```ts ignore
 * import { createGateway, loadConfig } from "@org/mcpkit/gateway";
 * const config = await loadConfig();
 * const kv = await Deno.openKv(config.kvPath);
 * Deno.serve({ port: config.port }, createGateway({ config, kv }).fetch);
 * ```
 *
 * @example Ask a gateway in-process
 * ```ts
 * import { createGateway, parseConfig } from "@org/mcpkit/gateway";
 * import assert from "node:assert/strict";
 *
 * const kv = await Deno.openKv(":memory:");
 * const app = createGateway({ config: parseConfig(), kv, log: () => {} });
 * const response = await app.request("/v1/health");
 * assert.deepEqual(await response.json(), { ok: true });
 * await app.flush();
 * kv.close();
 * ```
 */
export function createGateway(options: GatewayOptions): GatewayApp {
  const { config, kv } = options;
  const log = options.log ??
    ((record) =>
      console.error(
        JSON.stringify({ time: new Date().toISOString(), ...record }),
      ));
  const seed = options.catalog ?? DEFAULT_CATALOG;
  const catalog = new Catalog(seed);
  const liveCatalog = new LiveCatalog(kv, seed, catalog, log);
  const keyPool = options.keyPool ?? new MemoryKeyPool(
    Object.fromEntries(
      Object.entries(config.providers).map((
        [name, p],
      ) => [name, { keys: p.apiKeys, rpm: p.rpm, tpm: p.tpm }]),
    ),
    {
      defaultCooldownMs: config.keyCooldownMs,
      // Keys' rpm/tpm hold across every process sharing this store.
      store: kv,
      ...(options.now ? { now: options.now } : {}),
      onRefused: (provider, keyId, status, cooldownMs) =>
        log({
          level: "warn",
          message:
            "Provider refused a key; it cools down, then one call probes it",
          provider,
          keyId,
          status,
          cooldownMs,
        }),
      // Any caller can earn a 429: the log names who cooled which key, for
      // how long (bounded by the pool), so one who keeps doing it is found.
      onCooled: (cooled) =>
        log({
          level: "warn",
          message: "A 429 cooled a provider key",
          ...cooled,
        }),
    },
  );
  const callers = createCallerAuthenticator(kv, {
    cacheTtlMs: config.callerCacheMs,
  });
  const metrics = createMetrics(() => keyPool.health());
  const billing = createBilling(kv, {
    onCommit: (seconds) => metrics.observeCommit(seconds),
    traceRetentionMs: config.traceRetentionDays * 86_400_000,
    usageAggregates: config.usageAggregates === "on",
    log,
    journal: options.journal,
    ...(options.now ? { now: options.now } : {}),
  });
  const limits = new LimitCounters(kv, options.now);
  const deps: CallDeps = {
    billing,
    limits,
    metrics,
    keyPool,
    model: (id) => catalog.get(id),
    modelsOn: (route) =>
      catalog.list().filter((m) => m.routes.includes(route)).map((m) => m.id),
    providers: PROVIDERS,
    baseUrls: Object.fromEntries(
      Object.entries(config.providers).map(([name, p]) => [name, p.baseUrl]),
    ) as Record<ProviderName, string>,
    upstreamTimeoutMs: config.upstreamTimeoutMs,
    keyCooldownMs: config.keyCooldownMs,
    statePins: statePins(kv),
    ...(config.traceBodies === "on" &&
      { traceBodyBytes: config.traceBodyBytes }),
    log,
  };

  const app = new Hono<GatewayEnv>();
  app.use(async (c, next) => {
    const requestId = `req_${crypto.randomUUID().replaceAll("-", "")}`;
    // Time-ordered: the trace-id index entry of each call goes in key order.
    const traceId = c.req.header("trace-id")?.slice(0, 128) || uuidV7();
    c.set("requestId", requestId);
    c.set("traceId", traceId);
    await next();
    c.res.headers.set("x-request-id", requestId);
    c.res.headers.set("trace-id", traceId);
  });
  app.onError(renderErrors(log));
  app.notFound((c) =>
    errorResponse(
      errorRouteOf(c),
      new GatewayError(404, `No route "${c.req.method} ${c.req.path}"`),
    )
  );

  // Before a body is parsed: an expired key, no credit for a large body,
  // counted limits already reached, too many bytes of bodies in flight for
  // one caller, and a body whose first pieces already hold more than the
  // balance are refused; the body is read within GATEWAY_MAX_BODY_BYTES.
  const readBody = bodyGuard({
    billing,
    limits,
    budget: new BodyBudget(config.maxCallerBodyBytes),
    maxBodyBytes: config.maxBodyBytes,
    cheapestRates: (route) => cheapestRates(catalog.list(), route),
  });

  const api = new Hono<GatewayEnv>();
  // First, so every error on a route's paths speaks its convention.
  scopeRoutes(api);
  // Models and prices changed at run time reach this process within seconds.
  api.use(async (_c, next) => {
    await liveCatalog.fresh();
    await next();
  });
  // The key is checked from the headers, before any body is read.
  const authenticate = callerAuth(callers);

  api.route(
    "/",
    statusRoutes(metrics, config.adminToken, () => storeStatus(kv)),
  );
  api.route("/", modelRoutes(catalog, config.providers));
  api.route("/", callerRoutes(kv, billing, authenticate));
  api.route(
    "/",
    callRoutes(deps, { authenticate, readBody }),
  );
  api.route(
    "/admin",
    createAdminRoutes({
      kv,
      adminToken: config.adminToken,
      log,
      keyHealth: () => keyPool.health(),
      catalog: () => catalog.list(),
    }),
  );

  app.route("/", consolePages());
  app.route("/v1", api);
  app.route("/", api);
  const doubled = doubledPrefixRoutes();
  app.route("/v1/v1", doubled);
  app.route("/v1beta/v1beta", doubled);
  return Object.assign(app, {
    flush: async () => {
      await limits.flush();
      await billing.flush();
      // Slice claims under way, so none meets a closed store.
      if (keyPool instanceof MemoryKeyPool) await keyPool.ready();
    },
    ready: async () => {
      if (keyPool instanceof MemoryKeyPool) await keyPool.ready();
    },
    metricsResponse: () => metricsResponse(metrics),
  });
}

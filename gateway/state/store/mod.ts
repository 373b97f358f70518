/**
 * Where the gateway keeps its state: one store, opened once at start-up and
 * passed in. Both stores offer the same interface, Deno KV's API (the part
 * the gateway uses), so every domain rule is written once against it:
 *
 * - the **KV file** (default, `GATEWAY_KV_PATH`): Deno KV, embedded, exact
 *   across the processes of one host;
 * - **PostgreSQL** (`GATEWAY_STORE=postgres://…`): every process on every
 *   host shares one database (`postgres.ts`, imported only when a
 *   PostgreSQL store is opened: its client and the Node.js modules it needs
 *   held 3 to 5 MiB of a gateway on KV's resident memory at rest).
 *
 * Every key either store holds is built in `../kv_keys.ts`.
 *
 * @module
 */
import { dirname } from "node:path";
import { ConfigError } from "../../config.ts";
import type { PostgresKv } from "./postgres.ts";
import type { StoreOutage, StoreStatus } from "./outage.ts";

/** The gateway's state store: Deno KV's interface, on either store. */
export type GatewayStore = Deno.Kv;

/** An open store and how to name and close it. */
export interface OpenedStore {
  /** The store. */
  kv: GatewayStore;
  /** Names it for the start-up line, without credentials: `KV file ./data/gateway.kv` or `PostgreSQL db.internal:5432/gateway`. */
  description: string;
}

/**
 * Opens the store the settings name: PostgreSQL for a `postgres://` URL in
 * `store`, else the Deno KV at `kvPath` (a file, its folder created;
 * `:memory:`; or an `http(s)://` KV Connect URL).
 *
 * @param settings `store` (`GATEWAY_STORE`), `kvPath` (`GATEWAY_KV_PATH`), `clockOffsetMs` and, on PostgreSQL, `storeWaitMs` (`GATEWAY_STORE_WAIT_MS`).
 * @param log Told when PostgreSQL becomes unreachable and when it is back.
 * @returns The open store.
 * @throws {ConfigError} When the PostgreSQL store cannot be opened (one line, without credentials).
 */
export async function openStore(
  settings: {
    store?: string;
    kvPath: string;
    clockOffsetMs?: number;
    storeWaitMs?: number;
  },
  log?: (record: Record<string, unknown>) => void,
): Promise<OpenedStore> {
  if (settings.store) {
    const description = `PostgreSQL ${describePostgresUrl(settings.store)}`;
    try {
      const { openPostgresStore } = await import("./postgres.ts");
      const offset = settings.clockOffsetMs ?? 0;
      return {
        kv: await openPostgresStore(settings.store, {
          now: () => Date.now() + offset,
          waitMs: settings.storeWaitMs,
          log,
        }),
        description,
      };
    } catch (error) {
      // One line at start-up, never the URL's password.
      throw new ConfigError(
        `Cannot open the store (GATEWAY_STORE) at ${description}: ${
          (error as Error).message
        }`,
      );
    }
  }
  const path = settings.kvPath;
  const remote = /^https?:\/\//.test(path);
  if (path !== ":memory:" && !remote) {
    await Deno.mkdir(dirname(path), { recursive: true });
  }
  return {
    kv: await Deno.openKv(path),
    description: remote
      ? `remote KV ${describeUrl(path)}`
      : path === ":memory:"
      ? "KV in memory"
      : `KV file ${path}`,
  };
}

/**
 * Closes a store, waiting for a PostgreSQL store's connections to end.
 *
 * @param kv The store.
 * @returns A promise that resolves once closed.
 */
export async function closeStore(kv: GatewayStore): Promise<void> {
  if (isPostgres(kv)) await kv.end();
  else kv.close();
}

// By shape, not `instanceof`, so that this module does not load postgres.ts.
function isPostgres(kv: GatewayStore): kv is PostgresKv {
  return typeof (kv as Partial<PostgresKv>).end === "function";
}

function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.host}${parsed.pathname}`;
  } catch {
    return "(unparsable URL)";
  }
}

/**
 * A PostgreSQL URL without its user and password, for logs.
 *
 * @param url The URL.
 * @returns `host:port/database`.
 */
export function describePostgresUrl(url: string): string {
  return describeUrl(url.replace(/^postgres(ql)?:/, "http:"));
}

/**
 * The clock a store's time-based state keeps to: PostgreSQL's own (every
 * host agrees on it), else this process's.
 *
 * @param kv The store.
 * @param localNow This process's clock, for a KV store.
 * @returns The clock, epoch ms.
 *
 * @example
 * ```ts
 * import { storeClock } from "./mod.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * storeClock(kv)() > 0; // true: this process's clock
 * kv.close();
 * ```
 */
export function storeClock(
  kv: Deno.Kv,
  localNow: () => number = Date.now,
): () => number {
  const now = (kv as { now?: unknown; clockMs?: unknown }).now;
  return typeof now === "function" &&
      typeof (kv as { clockMs?: unknown }).clockMs === "function"
    ? now as () => number
    : localNow;
}

/** A store that tracks its outages: PostgreSQL (`outage.ts`); found by shape, so that this module does not load postgres.ts. */
function outageOf(kv: Deno.Kv): StoreOutage | undefined {
  const outage = (kv as { outage?: unknown }).outage;
  return typeof outage === "object" && outage !== null &&
      typeof (outage as Partial<StoreOutage>).status === "function"
    ? outage as StoreOutage
    : undefined;
}

/**
 * Whether a store answers now: `false` while PostgreSQL is unreachable and
 * its probe loop waits for it (`outage.ts`); always `true` for a KV store,
 * which is local. Work that can be done without the store (serving a cached
 * lookup, a catalog already loaded) does it instead of waiting.
 *
 * @param kv The store.
 * @returns Whether the store is reachable.
 *
 * @example
 * ```ts
 * import { storeReachable } from "./mod.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * storeReachable(kv); // true
 * kv.close();
 * ```
 */
export function storeReachable(kv: Deno.Kv): boolean {
  return outageOf(kv)?.reachable ?? true;
}

/**
 * Whether a store answers, for how long it has not, and how long calls wait
 * for it (for `/health`).
 *
 * @param kv The store.
 * @returns The status; a KV store is always reachable and waits 0 ms.
 *
 * @example
 * ```ts
 * import { storeStatus } from "./mod.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * storeStatus(kv); // { reachable: true, waitMs: 0 }
 * kv.close();
 * ```
 */
export function storeStatus(kv: Deno.Kv): StoreStatus {
  return outageOf(kv)?.status() ?? { reachable: true, waitMs: 0 };
}

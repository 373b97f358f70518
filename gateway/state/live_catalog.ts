/**
 * The live catalog: models and prices changed at run time through the admin
 * API or the CLI, kept in KV and seen by every gateway process within
 * {@linkcode CATALOG_REFRESH_MS} of the change. The catalog file is the starting set; KV
 * holds what changed since: a replaced or added entry, or a removal.
 *
 * @module
 */
import {
  type Catalog,
  CatalogEntryError,
  DEFAULT_CATALOG,
  parseCatalogEntry,
} from "./catalog.ts";
import {
  catalogChangeKey,
  catalogChangesPrefix,
  catalogVersionKey,
} from "./kv_keys.ts";
import type { CatalogEntry } from "./catalog.ts";
import { storeReachable } from "./store/mod.ts";

/** How often each process looks for catalog changes, ms. */
export const CATALOG_REFRESH_MS = 2_000;

/** One change over the seed: the entry that replaces or adds a model, or its removal. */
type CatalogChange = { entry: CatalogEntry } | { removed: true };

/**
 * Adds or replaces a model for every process.
 *
 * @param kv The gateway's KV.
 * @param raw The catalog entry (validated).
 * @param seed The catalog file's entries, against which its names are checked.
 * @returns The stored entry.
 * @throws {CatalogEntryError} For an invalid entry, or one whose id or alias
 * another model already answers to.
 *
 * @example A price change every process serves within two seconds
 * ```ts
 * import { putModel, readCatalog } from "./live_catalog.ts";
 * import { DEFAULT_CATALOG } from "./catalog.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const mini = DEFAULT_CATALOG.find((model) => model.id === "gpt-4o-mini")!;
 * await putModel(kv, { ...mini, pricing: { input: 0.1, output: 0.4 } });
 * const entries = await readCatalog(kv, DEFAULT_CATALOG, () => {});
 * entries.find((model) => model.id === "gpt-4o-mini")?.pricing.input; // 0.1
 * kv.close();
 * ```
 */
export async function putModel(
  kv: Deno.Kv,
  raw: unknown,
  seed: readonly CatalogEntry[] = DEFAULT_CATALOG,
): Promise<CatalogEntry> {
  const entry = parseCatalogEntry(raw);
  const others = (await readCatalog(kv, seed)).filter((other) =>
    other.id !== entry.id
  );
  const clash = nameClash(entry, others);
  if (clash) throw clash;
  await commitChange(kv, entry.id, { entry });
  return entry;
}

/**
 * Why `entry` cannot join `others`: one of its aliases, or its id, is a
 * name another model already answers to (a call would reach either).
 *
 * @returns The error naming the field, or `undefined` when every name is free.
 */
function nameClash(
  entry: CatalogEntry,
  others: readonly CatalogEntry[],
): CatalogEntryError | undefined {
  const holders = new Map<string, string>();
  for (const other of others) {
    for (const name of [other.id, ...other.aliases ?? []]) {
      holders.set(name, other.id);
    }
  }
  const names = [entry.id, ...entry.aliases ?? []];
  const index = names.findIndex((name) => holders.has(name));
  if (index < 0) return undefined;
  const field = index === 0 ? "id" : `aliases[${index - 1}]`;
  return new CatalogEntryError(
    `Invalid catalog entry: "${field}" names "${names[index]}", which model "${
      holders.get(names[index])
    }" already answers to`,
    field,
  );
}

/**
 * Removes a model for every process. Calls already running finish at the
 * price they reserved.
 *
 * @param kv The gateway's KV.
 * @param id The model id.
 *
 * @example
 * ```ts
 * import { readCatalog, removeModel } from "./live_catalog.ts";
 * import { DEFAULT_CATALOG } from "./catalog.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * await removeModel(kv, "gpt-4o-mini");
 * const entries = await readCatalog(kv, DEFAULT_CATALOG, () => {});
 * entries.some((model) => model.id === "gpt-4o-mini"); // false
 * kv.close();
 * ```
 */
export async function removeModel(kv: Deno.Kv, id: string): Promise<void> {
  await commitChange(kv, id, { removed: true });
}

async function commitChange(
  kv: Deno.Kv,
  id: string,
  change: CatalogChange,
): Promise<void> {
  await kv.atomic()
    .set(catalogChangeKey(id), change)
    .sum(catalogVersionKey(), 1n)
    .commit();
}

/**
 * The effective catalog: the seed with KV's changes applied, in seed order,
 * additions after. A stored entry that is no longer valid (written before a
 * bound it breaks, such as a price the money maths cannot hold) is ignored,
 * and reported, so one bad entry never stops every other change from being
 * served: the model keeps its seed entry, or stays out.
 *
 * @param kv The gateway's KV.
 * @param seed The catalog file's entries.
 * @param onInvalid Told of each stored entry ignored, with why.
 * @returns The entries.
 *
 * @example With nothing changed, the seed itself
 * ```ts
 * import { readCatalog } from "./live_catalog.ts";
 * import { DEFAULT_CATALOG } from "./catalog.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * (await readCatalog(kv, DEFAULT_CATALOG, () => {})).length === DEFAULT_CATALOG.length; // true
 * kv.close();
 * ```
 */
export async function readCatalog(
  kv: Deno.Kv,
  seed: readonly CatalogEntry[],
  onInvalid: (id: string, error: CatalogEntryError) => void = () => {},
): Promise<CatalogEntry[]> {
  const changes = new Map<string, CatalogChange>();
  for await (
    const item of kv.list<CatalogChange>({ prefix: catalogChangesPrefix() })
  ) {
    const id = item.key.at(-1) as string;
    if (!("entry" in item.value)) {
      changes.set(id, item.value);
      continue;
    }
    try {
      changes.set(id, { entry: parseCatalogEntry(item.value.entry) });
    } catch (error) {
      if (!(error instanceof CatalogEntryError)) throw error;
      onInvalid(id, error);
    }
  }
  // Seed entries nobody changed claim their names first; a change that
  // claims a name already taken (two concurrent puts can each pass
  // putModel's check) is left out, reported, and its model keeps its seed
  // entry, so the catalog always loads.
  const taken = seed.filter((entry) => !changes.has(entry.id));
  const accepted = new Map<string, CatalogEntry>();
  for (const [id, change] of changes) {
    if (!("entry" in change)) continue;
    const clash = nameClash(change.entry, [...taken, ...accepted.values()]);
    if (clash) onInvalid(id, clash);
    else accepted.set(id, change.entry);
  }
  const entries: CatalogEntry[] = [];
  for (const entry of seed) {
    const change = changes.get(entry.id);
    changes.delete(entry.id);
    if (!change) entries.push(entry);
    else if ("entry" in change) entries.push(accepted.get(entry.id) ?? entry);
  }
  for (const [id, change] of changes) {
    if ("entry" in change && accepted.has(id)) entries.push(change.entry);
  }
  return entries;
}

/**
 * Keeps a {@linkcode Catalog} in step with KV without a timer: a request
 * that finds the last look older than {@linkcode CATALOG_REFRESH_MS} reads
 * the change counter (one KV read) and reloads when it moved.
 *
 * @example
 * ```ts
 * import { LiveCatalog, putModel } from "./live_catalog.ts";
 * import { Catalog, DEFAULT_CATALOG } from "./catalog.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const catalog = new Catalog(DEFAULT_CATALOG);
 * const live = new LiveCatalog(kv, DEFAULT_CATALOG, catalog, console.error);
 * await live.fresh();
 * await putModel(kv, { ...catalog.get("gpt-4o-mini")!, id: "mini-eu" });
 * // Another request, two seconds on: `await live.fresh()` reloads, and
 * // `catalog.get("mini-eu")` is the new model.
 * kv.close();
 * ```
 */
export class LiveCatalog {
  readonly #kv: Deno.Kv;
  readonly #seed: readonly CatalogEntry[];
  readonly #catalog: Catalog;
  readonly #log: (record: Record<string, unknown>) => void;
  #version: bigint | undefined;
  #checkedAt = -Infinity;
  #refreshing: Promise<void> | undefined;

  /**
   * Follows KV's changes for `catalog`.
   *
   * @param kv The gateway's KV.
   * @param seed The catalog file's entries.
   * @param catalog The catalog the gateway serves from.
   * @param log Where a failed refresh is reported.
   */
  constructor(
    kv: Deno.Kv,
    seed: readonly CatalogEntry[],
    catalog: Catalog,
    log: (record: Record<string, unknown>) => void,
  ) {
    this.#kv = kv;
    this.#seed = seed;
    this.#catalog = catalog;
    this.#log = log;
  }

  /**
   * Resolves once the catalog is at most {@linkcode CATALOG_REFRESH_MS} old,
   * or at once while the store is unreachable (the catalog known is served).
   *
   * @returns A promise that resolves when the catalog is fresh.
   */
  fresh(): Promise<void> {
    // An unreachable store is not waited for: the catalog known is served.
    if (
      performance.now() - this.#checkedAt < CATALOG_REFRESH_MS ||
      !storeReachable(this.#kv)
    ) {
      return Promise.resolve();
    }
    this.#refreshing ??= this.#refresh().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  async #refresh(): Promise<void> {
    try {
      const current =
        (await this.#kv.get<Deno.KvU64>(catalogVersionKey())).value?.value ??
          0n;
      if (current !== this.#version) {
        this.#catalog.replace(
          await readCatalog(this.#kv, this.#seed, (id, error) =>
            this.#log({
              level: "error",
              message:
                `Stored catalog entry "${id}" is ignored: ${error.message}; correct it with PUT /admin/models/${id}`,
            })),
        );
        this.#version = current;
      }
      this.#checkedAt = performance.now();
    } catch (error) {
      // Serve from what is known; the next request tries again.
      this.#log({
        level: "error",
        message: `Catalog refresh failed: ${error}`,
      });
    }
  }
}

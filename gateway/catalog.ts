/**
 * The model catalog: which models exist, who serves them, on which routes,
 * at what price. The data lives in `catalog.json`; this file validates it.
 *
 * @module
 */
import { z } from "zod";
import catalogData from "./catalog.json" with { type: "json" };
import type { CatalogEntry } from "./types.ts";
import { firstIssue } from "./_zod.ts";

/**
 * The highest price the catalog takes, USD per million tokens: over a
 * hundred times the dearest model's output price (tens of USD). With at most
 * {@linkcode MAX_OUTPUT_TOKENS} output tokens and an input the size of the
 * largest body, a call's cost stays many orders of magnitude inside the
 * range where micro-USD are exact (`MAX_BALANCE_MICROS`), so the money maths
 * can always hold what a call costs.
 */
export const MAX_PRICE_USD_PER_MILLION = 10_000;

/** The most output tokens a catalog entry may allow one call (models offer at most a few hundred thousand). */
export const MAX_OUTPUT_TOKENS = 10_000_000;

/** The most alternates one entry may list. */
const MAX_ALTERNATES = 8;

const price = z.number().finite().nonnegative().max(MAX_PRICE_USD_PER_MILLION);
const modelId = z.string().min(1).max(256);

const entrySchema = z.object({
  id: modelId,
  provider: z.enum(["openai", "anthropic", "gemini", "xai", "openrouter"]),
  upstream: modelId,
  routes: z.array(z.enum(["chat", "messages", "responses", "gemini"])).min(1)
    .max(4),
  pricing: z.object({
    input: price,
    output: price,
    cachedInput: price.optional(),
    cacheWrite: price.optional(),
    cacheWrite1h: price.optional(),
  }),
  maxOutputTokens: z.number().int().positive().max(MAX_OUTPUT_TOKENS),
  alternates: z.array(modelId).max(MAX_ALTERNATES).optional(),
});

/** A catalog entry that is not valid; the message names the field. */
export class CatalogEntryError extends Error {
  /** The field at fault, as a dotted path (`pricing.input`). */
  readonly field: string;

  /**
   * Creates the error.
   *
   * @param message What is wrong, naming the field.
   * @param field The field at fault.
   */
  constructor(message: string, field = "") {
    super(message);
    this.name = "CatalogEntryError";
    this.field = field;
  }
}

/**
 * Validates one catalog entry.
 *
 * @param raw The entry as given (a file, the admin API).
 * @returns The entry.
 * @throws {CatalogEntryError} Naming the first invalid field.
 */
export function parseCatalogEntry(raw: unknown): CatalogEntry {
  const parsed = entrySchema.safeParse(raw);
  if (!parsed.success) {
    const { param, message } = firstIssue(parsed.error);
    throw new CatalogEntryError(
      `Invalid catalog entry: "${param}" ${message}`,
      param,
    );
  }
  return parsed.data;
}

/** The models a gateway serves, looked up by the id callers send. */
export class Catalog {
  #byId: Map<string, CatalogEntry>;

  /**
   * Validates and indexes the entries.
   *
   * @param entries Catalog entries; ids must be unique.
   * @throws {TypeError} for an invalid entry or a repeated id.
   */
  constructor(entries: readonly CatalogEntry[]) {
    this.#byId = new Map();
    for (const [index, raw] of entries.entries()) {
      const parsed = entrySchema.safeParse(raw);
      if (!parsed.success) {
        const { param, message } = firstIssue(parsed.error);
        throw new TypeError(
          `Invalid catalog entry ${index}: "${param}" ${message}`,
        );
      }
      if (this.#byId.has(parsed.data.id)) {
        throw new TypeError(
          `Invalid catalog: model "${parsed.data.id}" is listed twice`,
        );
      }
      this.#byId.set(parsed.data.id, parsed.data);
    }
  }

  /**
   * Replaces every entry at once (the live catalog's refresh): calls already
   * running keep the entry they resolved, and its prices.
   *
   * @param entries The new entries.
   * @throws {TypeError} For an invalid entry or a repeated id; the catalog is unchanged.
   */
  replace(entries: readonly CatalogEntry[]): void {
    this.#byId = new Catalog(entries).#byId;
  }

  /**
   * The entry for a model id.
   *
   * @param id The model id a caller sent.
   * @returns The entry, or `undefined` for an unknown model.
   */
  get(id: string): CatalogEntry | undefined {
    return this.#byId.get(id);
  }

  /**
   * Every entry, in catalog order.
   *
   * @returns The entries.
   */
  list(): CatalogEntry[] {
    return [...this.#byId.values()];
  }
}

/** The catalog shipped with the gateway (`gateway/catalog.json`). */
export const DEFAULT_CATALOG: readonly CatalogEntry[] = catalogData
  .models as CatalogEntry[];

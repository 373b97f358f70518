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

const entrySchema = z.object({
  id: z.string().min(1),
  provider: z.enum(["openai", "anthropic", "gemini", "xai", "openrouter"]),
  upstream: z.string().min(1),
  routes: z.array(z.enum(["chat", "messages", "responses", "gemini"])).min(1),
  pricing: z.object({
    input: z.number().nonnegative(),
    output: z.number().nonnegative(),
    cachedInput: z.number().nonnegative().optional(),
    cacheWrite: z.number().nonnegative().optional(),
    cacheWrite1h: z.number().nonnegative().optional(),
  }),
  maxOutputTokens: z.number().int().positive(),
});

/** The models a gateway serves, looked up by the id callers send. */
export class Catalog {
  readonly #byId: Map<string, CatalogEntry>;

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

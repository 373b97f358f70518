/**
 * The model catalog: which models exist, who serves them, on which routes,
 * at what price. The data lives in `catalog.json`; this file validates it,
 * against the providers the registry (`upstream/providers/mod.ts`) lists.
 *
 * @module
 */
import { z } from "zod";
import catalogData from "../catalog.json" with { type: "json" };
import { firstIssue } from "../_zod.ts";
import {
  PROVIDER_NAMES,
  type ProviderName,
} from "../upstream/providers/mod.ts";
import type { RouteName } from "../conventions.ts";
import {
  type ComputerUse,
  computerUseSchema,
  contextWindowSchema,
  type ModelFeatures,
  modelFeaturesSchema,
  sourcesSchema,
} from "./model_facts.ts";

export type { ComputerUse, ModelFeatures } from "./model_facts.ts";

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

/** The most aliases one entry may list. */
const MAX_ALIASES = 8;

const price = z.number().finite().nonnegative().max(MAX_PRICE_USD_PER_MILLION);
const modelId = z.string().min(1).max(256);

/**
 * A lifecycle date: a day (`2026-11-30`, its start in UTC) or an instant
 * with its offset (`2026-11-30T17:00:00Z`), within years 2000 to 9999 so
 * every header and page can write it.
 */
const lifecycleDate = z.union(
  [z.iso.date(), z.iso.datetime({ offset: true })],
  {
    error: "expected an ISO 8601 date (2026-11-30) or date-time with offset",
  },
).refine((text) => {
  const at = Date.parse(text);
  return at >= Date.UTC(2000, 0, 1) && at < Date.UTC(10_000, 0, 1);
}, "expected a date between the years 2000 and 9999");

const lifecycleSchema = z.strictObject({
  deprecated: lifecycleDate.optional(),
  retires: lifecycleDate.optional(),
  successor: modelId.optional(),
  reroute: z.boolean().optional(),
}).superRefine((lifecycle, context) => {
  const { deprecated, retires, successor, reroute } = lifecycle;
  if (deprecated && retires && Date.parse(retires) < Date.parse(deprecated)) {
    context.addIssue({
      code: "custom",
      path: ["retires"],
      message: `expected a date on or after "deprecated" (${deprecated})`,
    });
  }
  if (reroute && !(successor && retires)) {
    context.addIssue({
      code: "custom",
      path: ["reroute"],
      message:
        'needs "retires" and "successor": it routes calls to the successor after retirement',
    });
  }
});

/** Token prices of one rate (a tier, the long-context rate). */
const tokenPrices = z.strictObject({
  input: price,
  output: price,
  cachedInput: price.optional(),
  cacheWrite: price.optional(),
  cacheWrite1h: price.optional(),
});

const entrySchema = z.object({
  id: modelId,
  provider: z.enum(PROVIDER_NAMES),
  upstream: modelId,
  routes: z.array(z.enum(["chat", "messages", "responses", "gemini"])).min(1)
    .max(4),
  pricing: z.object({
    input: price,
    output: price,
    cachedInput: price.optional(),
    cacheWrite: price.optional(),
    cacheWrite1h: price.optional(),
    webSearch: price.optional(),
    tiers: z.strictObject({
      priority: tokenPrices.optional(),
      flex: tokenPrices.optional(),
    }).optional(),
    longContext: tokenPrices.extend({
      aboveInputTokens: z.number().int().positive(),
    }).optional(),
  }),
  maxOutputTokens: z.number().int().positive().max(MAX_OUTPUT_TOKENS),
  alternates: z.array(modelId).max(MAX_ALTERNATES).optional(),
  lifecycle: lifecycleSchema.optional(),
  aliases: z.array(modelId).min(1).max(MAX_ALIASES).optional(),
  computerUse: computerUseSchema.optional(),
  contextWindow: contextWindowSchema.optional(),
  features: modelFeaturesSchema.optional(),
  sources: sourcesSchema.optional(),
}).superRefine((entry, context) => {
  if (entry.lifecycle?.successor === entry.id) {
    context.addIssue({
      code: "custom",
      path: ["lifecycle", "successor"],
      message: "expected another model than the entry itself",
    });
  }
  const aliases = entry.aliases ?? [];
  const repeated = aliases.findIndex((alias, index) =>
    alias === entry.id || aliases.indexOf(alias) !== index
  );
  if (repeated >= 0) {
    context.addIssue({
      code: "custom",
      path: ["aliases", repeated],
      message:
        "expected a name other than the entry's id and its other aliases",
    });
  }
  if (
    entry.contextWindow !== undefined &&
    entry.maxOutputTokens > entry.contextWindow
  ) {
    context.addIssue({
      code: "custom",
      path: ["maxOutputTokens"],
      message: `expected at most "contextWindow" (${entry.contextWindow})`,
    });
  }
  // Each provider reads only its own computer-use fields; one set on
  // another provider's model is a mistake the operator should hear of.
  const computerUse = entry.computerUse;
  if (computerUse?.beta !== undefined && entry.provider !== "anthropic") {
    context.addIssue({
      code: "custom",
      path: ["computerUse", "beta"],
      message: "is an anthropic-beta header: only anthropic models take one",
    });
  }
  for (const field of ["environment", "environments"] as const) {
    if (computerUse?.[field] !== undefined && entry.provider !== "gemini") {
      context.addIssue({
        code: "custom",
        path: ["computerUse", field],
        message: "is a Gemini ComputerUse field: only gemini models take one",
      });
    }
  }
});

/**
 * A catalog entry that is not valid; the message names the field.
 *
 * @example
 * ```ts
 * import { CatalogEntryError, parseCatalogEntry } from "./catalog.ts";
 *
 * try {
 *   parseCatalogEntry({ id: "m" });
 * } catch (error) {
 *   if (error instanceof CatalogEntryError) error.field; // "provider"
 * }
 * ```
 */
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
 *
 * @example
 * ```ts
 * import { parseCatalogEntry } from "./catalog.ts";
 *
 * parseCatalogEntry({
 *   id: "fast", provider: "openai", upstream: "gpt-4o-mini", routes: ["chat"],
 *   pricing: { input: 0.15, output: 0.6 }, maxOutputTokens: 16384,
 * }).pricing.output; // 0.6
 * ```
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

/**
 * The models a gateway serves, looked up by the id callers send.
 *
 * @example
 * ```ts
 * import { Catalog, DEFAULT_CATALOG } from "./catalog.ts";
 *
 * const catalog = new Catalog(DEFAULT_CATALOG);
 * catalog.get("gpt-4o-mini")?.provider; // "openai"
 * catalog.get("no-such-model"); // undefined
 * ```
 */
export class Catalog {
  #byId: Map<string, CatalogEntry>;
  #byName: Map<string, CatalogEntry>;

  /**
   * Validates and indexes the entries.
   *
   * @param entries Catalog entries; ids must be unique.
   * @throws {TypeError} for an invalid entry or a repeated id.
   */
  constructor(entries: readonly CatalogEntry[]) {
    this.#byId = new Map();
    this.#byName = new Map();
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
    for (const entry of this.#byId.values()) this.#byName.set(entry.id, entry);
    for (const entry of this.#byId.values()) {
      for (const alias of entry.aliases ?? []) {
        const holder = this.#byName.get(alias);
        if (holder) {
          throw new TypeError(
            `Invalid catalog: alias "${alias}" of model "${entry.id}" already names model "${holder.id}"`,
          );
        }
        this.#byName.set(alias, entry);
      }
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
    const next = new Catalog(entries);
    this.#byId = next.#byId;
    this.#byName = next.#byName;
  }

  /**
   * The entry for a model id or one of its aliases (the name the provider
   * gives the model, such as `computer-use-preview` for `operator`).
   *
   * @param id The model id a caller sent.
   * @returns The entry, or `undefined` for an unknown model.
   */
  get(id: string): CatalogEntry | undefined {
    return this.#byName.get(id);
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

/** Where a model stands in its life at one moment. */
export type ModelStatus = "active" | "deprecated" | "retired";

/**
 * The instant a lifecycle date stands for, epoch ms: a bare day is its
 * start in UTC.
 *
 * @param date A validated lifecycle date.
 * @returns Epoch milliseconds.
 */
function instantOf(date: string): number {
  return Date.parse(date);
}

/**
 * Where a model stands at `now`: retired from its `retires` date on,
 * deprecated from its `deprecated` date on, active otherwise.
 *
 * @param entry The catalog entry.
 * @param now The moment, epoch ms.
 * @returns Its status.
 *
 * @example A model past its retirement date
 * ```ts
 * import { modelStatus } from "./catalog.ts";
 *
 * const entry = { lifecycle: { retires: "2026-01-01" } };
 * modelStatus(entry, Date.UTC(2026, 5, 1)); // "retired"
 * ```
 */
export function modelStatus(
  entry: Pick<CatalogEntry, "lifecycle">,
  now: number,
): ModelStatus {
  const { deprecated, retires } = entry.lifecycle ?? {};
  if (retires !== undefined && now >= instantOf(retires)) return "retired";
  if (deprecated !== undefined && now >= instantOf(deprecated)) {
    return "deprecated";
  }
  return "active";
}

/**
 * The headers that tell a caller of `entry` about its end: `Deprecation`
 * (RFC 9745, `@` and epoch seconds) once a deprecation date is set,
 * `Sunset` (RFC 8594, an HTTP date) once a retirement date is set, and a
 * `Link` to the successor (`rel="successor-version"`, RFC 5829) and to the
 * model's own entry, which holds the dates (`rel="deprecation"`).
 *
 * @param entry The catalog entry.
 * @returns Header names and values; empty for a model with no end in sight.
 *
 * @example The headers of a deprecated model
 * ```ts
 * import { lifecycleHeaders } from "./catalog.ts";
 *
 * lifecycleHeaders({
 *   id: "old",
 *   lifecycle: { deprecated: "2026-09-30", retires: "2026-11-30", successor: "new" },
 * });
 * // { deprecation: "@1790726400", sunset: "Mon, 30 Nov 2026 00:00:00 GMT",
 * //   link: '</v1/models/old>; rel="deprecation"; type="application/json", </v1/models/new>; rel="successor-version"' }
 * ```
 */
export function lifecycleHeaders(
  entry: Pick<CatalogEntry, "id" | "lifecycle">,
): Record<string, string> {
  const lifecycle = entry.lifecycle;
  if (!lifecycle?.deprecated && !lifecycle?.retires) return {};
  const headers: Record<string, string> = {};
  if (lifecycle.deprecated) {
    headers.deprecation = `@${
      Math.floor(instantOf(lifecycle.deprecated) / 1000)
    }`;
  }
  if (lifecycle.retires) {
    headers.sunset = new Date(instantOf(lifecycle.retires)).toUTCString();
  }
  const links = [
    `</v1/models/${
      encodeURIComponent(entry.id)
    }>; rel="deprecation"; type="application/json"`,
  ];
  if (lifecycle.successor) {
    links.push(
      `</v1/models/${
        encodeURIComponent(lifecycle.successor)
      }>; rel="successor-version"`,
    );
  }
  headers.link = links.join(", ");
  return headers;
}

/**
 * A model's lifecycle as `GET /models` shows it: its status now, its dates
 * as the catalog gives them, its successor and whether calls go there after
 * retirement.
 *
 * @param entry The catalog entry.
 * @param now The moment, epoch ms.
 * @returns The fields to show; `{status: "active"}` alone for a model with no dates.
 *
 * @example
 * ```ts
 * import { lifecycleInfo } from "./catalog.ts";
 *
 * lifecycleInfo({ lifecycle: { retires: "2026-11-30", successor: "new" } }, Date.UTC(2026, 11, 1));
 * // { status: "retired", retires: "2026-11-30", successor: "new" }
 * ```
 */
export function lifecycleInfo(
  entry: Pick<CatalogEntry, "lifecycle">,
  now: number,
): { status: ModelStatus } & ModelLifecycle {
  return { status: modelStatus(entry, now), ...entry.lifecycle };
}

/**
 * The catalog shipped with the gateway (`gateway/catalog.json`).
 *
 * @example
 * ```ts
 * import { DEFAULT_CATALOG } from "./catalog.ts";
 *
 * DEFAULT_CATALOG.filter((model) => model.routes.includes("messages")).length > 0; // true
 * ```
 */
export const DEFAULT_CATALOG: readonly CatalogEntry[] = catalogData
  .models as CatalogEntry[];

/** Prices in USD per million tokens. */
export interface ModelPricing {
  /** USD per million uncached input tokens. */
  input: number;
  /** USD per million output tokens. */
  output: number;
  /** USD per million cached input tokens (cache reads), where the provider bills them apart. */
  cachedInput?: number;
  /** USD per million input tokens written to a 5-minute cache (Anthropic: 1.25× input); absent: the input price. */
  cacheWrite?: number;
  /** USD per million input tokens written to a 1-hour cache (Anthropic: 2× input); absent: the 5-minute price. */
  cacheWrite1h?: number;
  /** USD per 1,000 server-side web searches; absent: a call asking for web search is refused. */
  webSearch?: number;
  /** Token prices of the `service_tier`s a caller may ask for beside the standard one; a tier absent here is refused. */
  tiers?: {
    /** `service_tier: "priority"`. */
    priority?: TokenPrices;
    /** `service_tier: "flex"`. */
    flex?: TokenPrices;
  };
  /** The rate of a call whose input is above `aboveInputTokens` (the whole call is billed at it); absent: a call asking for a long-context beta is refused. */
  longContext?: TokenPrices & {
    /** The input tokens above which the whole call is billed at this rate. */
    aboveInputTokens: number;
  };
}

/** Token prices of one rate, USD per million tokens (the fields of {@linkcode ModelPricing} of the same names). */
export interface TokenPrices {
  /** Uncached input. */
  input: number;
  /** Output. */
  output: number;
  /** Cache reads; absent: the input price. */
  cachedInput?: number;
  /** 5-minute cache writes; absent: the input price. */
  cacheWrite?: number;
  /** 1-hour cache writes; absent: the 5-minute price. */
  cacheWrite1h?: number;
}

/**
 * A model's end of life, dates in ISO 8601 (a bare day is its start in
 * UTC). Callers see the dates on `GET /models` and in `Deprecation` and
 * `Sunset` headers; from `retires` on a call is refused with 410 naming the
 * successor, or, with `reroute`, served by the successor at its price.
 */
export interface ModelLifecycle {
  /** From when the model is deprecated (still served). */
  deprecated?: string;
  /** From when the model is retired (no longer served as itself). */
  retires?: string;
  /** The catalog model that replaces it. */
  successor?: string;
  /** Whether calls after retirement go to the successor instead of being refused. */
  reroute?: boolean;
}

/** One entry of the model catalog (`gateway/catalog.json`). */
export interface CatalogEntry {
  /** The id callers send as `model`. */
  id: string;
  /** The provider that serves it. */
  provider: ProviderName;
  /** The id sent upstream. */
  upstream: string;
  /** The routes it is reachable on. */
  routes: RouteName[];
  /** Its prices. */
  pricing: ModelPricing;
  /** The most output tokens one call can produce; bounds the reservation. */
  maxOutputTokens: number;
  /** Other catalog models (the same model on another provider) a call falls back to, in order, when this one cannot be served. */
  alternates?: string[];
  /** Its deprecation, retirement and successor, when it has an end. */
  lifecycle?: ModelLifecycle;
  /** Other names callers may send for it, such as the provider's own id (`computer-use-preview`). */
  aliases?: string[];
  /** How computer use is reached on it, for the models that have it. */
  computerUse?: ComputerUse;
  /** The input plus output tokens it takes. */
  contextWindow?: number;
  /** The request features it refuses. */
  features?: ModelFeatures;
  /** The provider pages every fact of the entry was taken from. */
  sources?: string[];
}

/**
 * The entry whose upstream id is `upstreamId` at `provider` (or that lists
 * it in `aliases`): how the simulator finds the facts of the model a request
 * names.
 *
 * @example
 * ```ts
 * import { catalogEntryByUpstream } from "./catalog.ts";
 *
 * catalogEntryByUpstream("openai", "computer-use-preview")?.id; // "operator"
 * ```
 *
 * @param provider The provider addressed.
 * @param upstreamId The model id as the provider names it.
 * @param entries The entries to search (default: the built-in catalog).
 * @returns The entry, or `undefined` when none matches.
 */
export function catalogEntryByUpstream<
  E extends Pick<CatalogEntry, "provider" | "upstream"> & {
    aliases?: readonly string[];
  } = CatalogEntry,
>(
  provider: ProviderName,
  upstreamId: string,
  entries: readonly E[] = DEFAULT_CATALOG as unknown as readonly E[],
): E | undefined {
  return entries.find((entry) =>
    entry.provider === provider &&
    (entry.upstream === upstreamId || entry.aliases?.includes(upstreamId))
  );
}

/**
 * Values generated from a JSON schema, deterministically: the simulator's tool
 * arguments and its structured-output replies (`response_format`, Responses
 * `text.format`, Anthropic `output_config.format`, Gemini `responseSchema`).
 *
 * Reads JSON Schema (draft 7 to 2020-12, as OpenAI, Anthropic and zod write
 * it) and Gemini's OpenAPI subset (capitalised types, `nullable`, integers as
 * strings). Honoured: `type` (one or a list), `enum`, `const`, `anyOf` /
 * `oneOf` (the first variant), `allOf` (merged), `$ref` into the same
 * document (`#`, `#/$defs/…`, `#/definitions/…`), `properties` with
 * `required` and `additionalProperties`, `minProperties`, `items`,
 * `prefixItems`, `minItems` / `maxItems`, `uniqueItems`, numeric bounds and
 * `multipleOf`, `minLength` / `maxLength`, string `format`s and `pattern`
 * (the shortest string randexp builds from it, when no sample fits). Bounds
 * the Anthropic SDK moves into a `description` (`{minimum: 18}`) count as
 * bounds, since a model reads them. Recursive schemas end: past a depth only
 * required properties and the fewest items are generated.
 *
 * @module
 */

import randexp from "randexp";

// randexp is CommonJS: at run time the default import is `module.exports`
// (the class); its types describe `exports.default`.
const RandExp = ((randexp as unknown as { default?: unknown }).default ??
  randexp) as typeof randexp.default;

/** A JSON schema, loosely: the simulator reads only what it needs. */
type Schema = Record<string, unknown>;

function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Past this depth only required properties and the fewest items are generated. */
const FULL_DEPTH = 4;
/** Past this depth generation stops with the smallest value of the type. */
const MAX_DEPTH = 32;
/** Patterns are only tried on samples this short, so a hostile pattern cannot take long. */
const PATTERN_SAMPLE_LIMIT = 24;
/** Longer patterns are not generated from. */
const MAX_PATTERN_LENGTH = 1000;
/** Generation is skipped when the counted repetitions (`{n}`) could multiply past this. */
const MAX_REPETITION_PRODUCT = 10_000;
const COUNTED_REPETITION = /\{\s*(\d+)\s*(?:,\s*\d*\s*)?\}/g;

/**
 * The shortest string randexp builds for a pattern (every repetition at its
 * minimum, the first alternative and character), if it matches. Patterns
 * whose counted repetitions could nest into a huge string are skipped.
 */
function stringMatching(pattern: RegExp): string | undefined {
  const source = pattern.source;
  if (source.length > MAX_PATTERN_LENGTH) return undefined;
  let product = 1;
  for (const [, count] of source.matchAll(COUNTED_REPETITION)) {
    product *= Math.max(1, Number(count));
    if (product > MAX_REPETITION_PRODUCT) return undefined;
  }
  try {
    const generator = new RandExp(pattern);
    generator.randInt = (low: number) => low;
    const text: unknown = generator.gen();
    return typeof text === "string" && pattern.test(text) ? text : undefined;
  } catch {
    return undefined;
  }
}

/** Samples per string format, the first preferred; later ones fit stricter patterns (zod's time has no offset). */
const FORMAT_SAMPLES: Record<string, readonly string[]> = {
  date: ["2026-01-01"],
  "date-time": ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000Z"],
  time: ["12:00:00Z", "12:00:00"],
  duration: ["P1D"],
  email: ["user@example.com"],
  "idn-email": ["user@example.com"],
  hostname: ["example.com"],
  "idn-hostname": ["example.com"],
  ipv4: ["192.0.2.1"],
  ipv6: ["2001:db8::1"],
  cidrv4: ["192.0.2.0/24"],
  cidrv6: ["2001:db8::/32"],
  uri: ["https://example.com/"],
  url: ["https://example.com/"],
  iri: ["https://example.com/"],
  "uri-reference": ["https://example.com/"],
  "iri-reference": ["https://example.com/"],
  "uri-template": ["https://example.com/{id}"],
  uuid: ["00000000-0000-4000-8000-000000000000"],
  "json-pointer": ["/value"],
  "relative-json-pointer": ["0"],
  regex: ["^.*$"],
  byte: ["c2ltdWxhdGVk"],
  base64: ["c2ltdWxhdGVk"],
  base64url: ["c2ltdWxhdGVk"],
  int32: ["7"],
  int64: ["7"],
  cuid: ["cjld2cjxh0000qzrmn831i7rn"],
  cuid2: ["tz4a98xxat96iws9zmbrgj3a"],
  ulid: ["01ARZ3NDEKTSV4RRFFQ69G5FAV"],
  nanoid: ["V1StGXR8_Z5jdHi6B-myT"],
  emoji: ["😀"],
  e164: ["+15555550100"],
  mac: ["00:00:5e:00:53:01"],
  jwt: [
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl",
  ],
};

const PATTERN_CANDIDATES = [
  "a",
  "A",
  "0",
  "abc",
  "ABC",
  "123",
  "a1",
  "A1",
  "abc123",
  "2026-01-01",
  "user@example.com",
  "https://example.com/",
  "",
];

interface Context {
  /** The document `$ref`s point into. */
  root: unknown;
}

/** A finite number from a JSON number or a numeric string (Gemini sends int64 as strings). */
function numberOf(value: unknown): number | undefined {
  const number = typeof value === "string" && value.trim() !== ""
    ? Number(value)
    : value;
  return typeof number === "number" && Number.isFinite(number)
    ? number
    : undefined;
}

/** Gemini spells types in capitals (`OBJECT`); JSON Schema allows a list of types. */
function typesOf(schema: Schema): string[] {
  const listed = Array.isArray(schema.type) ? schema.type : [schema.type];
  const types = listed.filter((t): t is string => typeof t === "string")
    .map((t) => t.toLowerCase());
  if (types.length > 0) return types;
  if (isSchema(schema.properties) || schema.required !== undefined) {
    return ["object"];
  }
  if (schema.items !== undefined || schema.prefixItems !== undefined) {
    return ["array"];
  }
  return [];
}

function resolveRef(ref: string, root: unknown): unknown {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    const key = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll(
      "~0",
      "~",
    );
    if (!isSchema(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** `allOf` folded into one schema: properties and required lists merged, the rest later-wins. */
function mergeAllOf(schema: Schema): Schema {
  const { allOf, ...rest } = schema;
  let merged: Schema = rest;
  for (const part of Array.isArray(allOf) ? allOf : []) {
    if (!isSchema(part)) continue;
    const flat = mergeAllOf(part);
    merged = {
      ...flat,
      ...merged,
      properties: {
        ...(isSchema(flat.properties) ? flat.properties : {}),
        ...(isSchema(merged.properties) ? merged.properties : {}),
      },
      required: [
        ...(Array.isArray(flat.required) ? flat.required : []),
        ...(Array.isArray(merged.required) ? merged.required : []),
      ],
    };
  }
  return merged;
}

function sampleString(schema: Schema, name: string, index: number): string {
  const formats = typeof schema.format === "string"
    ? FORMAT_SAMPLES[schema.format.toLowerCase()]
    : undefined;
  const min = numberOf(schema.minLength) ?? 0;
  const max = numberOf(schema.maxLength) ?? Infinity;
  let text = formats?.[0] ??
    (index === 0 ? `${name} value` : `${name} value ${index + 1}`);
  if (formats === undefined) {
    if (text.length < min) text = text.padEnd(Math.min(min, 100_000), "x");
    if (text.length > max) text = text.slice(0, Math.max(0, max));
  }
  if (typeof schema.pattern !== "string") return text;
  let pattern: RegExp;
  try {
    pattern = new RegExp(schema.pattern, "u");
  } catch {
    return text;
  }
  // The text may be padded to any length; the format samples are ours and short.
  const fits = (candidate: string, limit = PATTERN_SAMPLE_LIMIT) =>
    candidate.length <= limit && pattern.test(candidate);
  const matching = [
    ...[text].filter((candidate) => fits(candidate)),
    ...(formats ?? []).filter((candidate) => fits(candidate, 128)),
    ...[stringMatching(pattern)].filter((c): c is string => c !== undefined),
    ...PATTERN_CANDIDATES.filter((candidate) => fits(candidate)),
  ];
  // A sample within the length bounds wins; else the pattern beats the lengths.
  return matching.find((c) => c.length >= min && c.length <= max) ??
    matching[0] ?? text;
}

function sampleNumber(schema: Schema, integer: boolean, index: number): number {
  const fallback = (integer ? 7 : 42.5) + index;
  // A bound as wide as the safe integers (zod's `int()` writes one) is no bound.
  const bound = (value: unknown) => {
    const number = numberOf(value);
    return number !== undefined && Math.abs(number) < 1e9 ? number : undefined;
  };
  // Draft 4 writes `exclusiveMinimum: true` beside `minimum`; later drafts a number.
  const minimum = bound(schema.minimum);
  const exclusiveMin = bound(schema.exclusiveMinimum) ??
    (schema.exclusiveMinimum === true ? minimum : undefined);
  const maximum = bound(schema.maximum);
  const exclusiveMax = bound(schema.exclusiveMaximum) ??
    (schema.exclusiveMaximum === true ? maximum : undefined);
  const step = integer ? 1 : 0.5;
  const low = exclusiveMin !== undefined
    ? (integer ? Math.floor(exclusiveMin) + 1 : exclusiveMin + step)
    : minimum !== undefined
    ? (integer ? Math.ceil(minimum) : minimum)
    : undefined;
  const high = exclusiveMax !== undefined
    ? (integer ? Math.ceil(exclusiveMax) - 1 : exclusiveMax - step)
    : maximum !== undefined
    ? (integer ? Math.floor(maximum) : maximum)
    : undefined;
  let value = low !== undefined ? low + index : fallback;
  if (high !== undefined && value > high) value = Math.max(high, low ?? high);
  const multiple = numberOf(schema.multipleOf);
  if (multiple !== undefined && multiple > 0) {
    const up = Math.ceil(value / multiple) * multiple;
    value = high !== undefined && up > high
      ? Math.floor(value / multiple) * multiple
      : up;
  }
  return value;
}

function sampleObject(
  schema: Schema,
  depth: number,
  context: Context,
  index: number,
): Record<string, unknown> {
  const properties = isSchema(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required)
    ? schema.required.filter((key): key is string => typeof key === "string")
    : [];
  const result: Record<string, unknown> = {};
  const keys = depth >= FULL_DEPTH
    ? Object.keys(properties).filter((key) => required.includes(key))
    : Object.keys(properties);
  for (const key of keys) {
    result[key] = sample(properties[key], key, depth + 1, context, index);
  }
  const extra = isSchema(schema.additionalProperties)
    ? schema.additionalProperties
    : undefined;
  for (const key of required) {
    if (!(key in result)) {
      result[key] = sample(extra ?? {}, key, depth + 1, context, 0);
    }
  }
  if (schema.additionalProperties !== false) {
    const wanted = Math.min(numberOf(schema.minProperties) ?? 0, 100);
    for (let i = 1; Object.keys(result).length < wanted; i++) {
      if (!(`extra${i}` in result)) {
        result[`extra${i}`] = sample(
          extra ?? {},
          `extra${i}`,
          depth + 1,
          context,
          0,
        );
      }
    }
  }
  return result;
}

function sampleArray(
  schema: Schema,
  name: string,
  depth: number,
  context: Context,
  index: number,
): unknown[] {
  const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
  const min = Math.min(numberOf(schema.minItems) ?? 0, 1000);
  const max = numberOf(schema.maxItems) ?? Infinity;
  let count = Math.max(
    depth >= FULL_DEPTH ? min : Math.max(min, 2),
    prefix.length,
  );
  if (schema.items === false) count = Math.min(count, prefix.length);
  count = Math.min(count, max);
  const unique = schema.uniqueItems === true;
  const items: unknown[] = [];
  for (let i = 0; i < count; i++) {
    const itemSchema = i < prefix.length ? prefix[i] : schema.items;
    items.push(
      sample(itemSchema, name, depth + 1, context, unique ? i : index),
    );
  }
  return items;
}

const DESCRIBED_BOUND =
  /\b(minimum|maximum|exclusiveMinimum|exclusiveMaximum|multipleOf|minLength|maxLength|minItems|maxItems|minProperties)\s*:\s*(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)/gi;

/**
 * Bounds written in the description, as the Anthropic SDK writes those its
 * API does not take (`{minimum: 18, maximum: 9007199254740991}`): a model
 * reads them, so the simulator honours them where the schema sets none.
 */
function withDescribedBounds(schema: Schema): Schema {
  if (typeof schema.description !== "string") return schema;
  const bounds: Schema = {};
  for (const [, key, value] of schema.description.matchAll(DESCRIBED_BOUND)) {
    const canonical = key.charAt(0).toLowerCase() + key.slice(1);
    if (!(canonical in schema)) bounds[canonical] = Number(value);
  }
  return Object.keys(bounds).length > 0 ? { ...schema, ...bounds } : schema;
}

/** A value the schema accepts; `index` varies it for `uniqueItems` arrays. */
function sample(
  raw: unknown,
  name: string,
  depth: number,
  context: Context,
  index: number,
): unknown {
  if (raw === true || raw === undefined) return `${name} value`;
  if (!isSchema(raw)) return `${name} value`;
  if (typeof raw.$ref === "string") {
    const target = resolveRef(raw.$ref, context.root);
    const { $ref: _ref, ...siblings } = raw;
    const resolved = isSchema(target) ? { ...target, ...siblings } : siblings;
    return sample(resolved, name, depth + 1, context, index);
  }
  const schema = withDescribedBounds(
    Array.isArray(raw.allOf) ? mergeAllOf(raw) : raw,
  );
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    return schema.enum[index % schema.enum.length];
  }
  const variants = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(variants) && variants.length > 0) {
    // Deep in a recursive schema, a variant that ends (a null, a leaf) wins.
    const leaf = depth >= FULL_DEPTH
      ? variants.find((v) =>
        isSchema(v) && v.$ref === undefined &&
        !typesOf(v).some((t) => t === "object" || t === "array")
      )
      : undefined;
    const { anyOf: _any, oneOf: _one, ...shared } = schema;
    const chosen = leaf ?? variants[0];
    return sample(
      isSchema(chosen) ? { ...shared, ...chosen } : chosen,
      name,
      depth,
      context,
      index,
    );
  }
  const types = typesOf(schema);
  const type = depth >= MAX_DEPTH && types.includes("null")
    ? "null"
    : types.find((t) => t !== "null") ?? types[0];
  switch (type) {
    case "object":
      return depth >= MAX_DEPTH
        ? {}
        : sampleObject(schema, depth, context, index);
    case "array":
      return depth >= MAX_DEPTH
        ? []
        : sampleArray(schema, name, depth, context, index);
    case "integer":
      return sampleNumber(schema, true, index);
    case "number":
      return sampleNumber(schema, false, index);
    case "boolean":
      return index % 2 === 0;
    case "null":
      return null;
    default:
      return sampleString(schema, name, index);
  }
}

/**
 * A value that validates against a JSON schema (or Gemini's OpenAPI
 * subset): every declared property filled (only the required ones deep in a
 * recursive schema), enums' first value, `"<name> value"` for strings, 7 for
 * integers, 42.5 for numbers, two items for arrays, each within the schema's
 * bounds and formats.
 *
 * @example
 * ```ts
 * import { valueFromSchema } from "./schema.ts";
 * valueFromSchema({
 *   type: "object",
 *   properties: { day: { type: "string", format: "date" }, size: { enum: ["S", "M"] } },
 *   required: ["day", "size"],
 *   additionalProperties: false,
 * });
 * // { day: "2026-01-01", size: "S" }
 * ```
 *
 * @param schema The schema.
 * @param name Names strings at the top level (`"<name> value"`).
 * @returns A JSON value the schema accepts.
 */
export function valueFromSchema(schema: unknown, name = "value"): unknown {
  return sample(schema, name, 0, { root: schema }, 0);
}

/**
 * Builds tool-call arguments from a tool's parameter schema, as
 * {@linkcode valueFromSchema} does. A schema without properties gets
 * `{"input": "simulated input", "count": 2}` so arguments are never trivial.
 *
 * @example
 * ```ts
 * import { argumentsFromSchema } from "./schema.ts";
 * argumentsFromSchema({ type: "object", properties: { city: { type: "string" } } });
 * // { city: "city value" }
 * ```
 *
 * @param schema The tool's parameter schema (JSON Schema, or Gemini's capitalised variant).
 * @returns A JSON object matching the schema.
 */
export function argumentsFromSchema(schema: unknown): Record<string, unknown> {
  const args = isSchema(schema)
    ? sample(schema, "input", 0, { root: schema }, 0)
    : {};
  return isSchema(args) && Object.keys(args).length > 0
    ? args
    : { input: "simulated input", count: 2 };
}

/**
 * Deterministic, cheap token arithmetic for the provider simulator: token
 * counts from character counts, the cached-token rule, splitting replies into
 * stream deltas, and tool-call arguments generated from a JSON schema.
 *
 * @module
 */

/** Tokens one image in the input counts for, whatever its size. */
export const IMAGE_TOKENS = 258;

/** Prompts shorter than this many tokens are never reported as cached (OpenAI's own threshold). */
export const CACHE_THRESHOLD_TOKENS = 1024;

/**
 * Converts a character count to tokens: one token per four characters, rounded up.
 *
 * @example
 * ```ts
 * import { tokensForChars } from "./tokens.ts";
 * tokensForChars(9); // 3
 * ```
 *
 * @param chars Number of characters.
 * @returns The token count.
 */
export function tokensForChars(chars: number): number {
  return Math.ceil(chars / 4);
}

/**
 * The default cached part of a prompt: nothing below
 * {@linkcode CACHE_THRESHOLD_TOKENS}, else half the prompt rounded down to a
 * multiple of 128 (OpenAI caches prefixes in 128-token steps).
 *
 * @example
 * ```ts
 * import { defaultCachedTokens } from "./tokens.ts";
 * defaultCachedTokens(3000); // 1408
 * ```
 *
 * @param inputTokens All prompt tokens.
 * @returns The cached part of them.
 */
export function defaultCachedTokens(inputTokens: number): number {
  if (inputTokens < CACHE_THRESHOLD_TOKENS) return 0;
  return Math.floor(inputTokens / 2 / 128) * 128;
}

const WORD_OR_SPACE = /\S+\s*|\s+/g;

/**
 * Splits text into stream deltas of a few words each; joining them gives the text back.
 *
 * @example
 * ```ts
 * import { splitText } from "./tokens.ts";
 * splitText("one two three four", 2); // ["one two ", "three four"]
 * ```
 *
 * @param text The text to split.
 * @param wordsPerDelta How many words go in one delta.
 * @returns The deltas, at least one (an empty string for empty text).
 */
export function splitText(text: string, wordsPerDelta = 3): string[] {
  const words = text.match(WORD_OR_SPACE);
  if (!words) return [text];
  const deltas: string[] = [];
  for (let i = 0; i < words.length; i += wordsPerDelta) {
    deltas.push(words.slice(i, i + wordsPerDelta).join(""));
  }
  return deltas;
}

/**
 * Splits a string into `pieces` parts of near-equal length (fewer for short strings),
 * the way providers stream tool-call arguments in fragments that are not valid JSON alone.
 *
 * @example
 * ```ts
 * import { splitEvenly } from "./tokens.ts";
 * splitEvenly("abcdefgh", 3); // ["abc", "def", "gh"]
 * ```
 *
 * @param value The string to split.
 * @param pieces The wanted number of parts.
 * @returns The parts, joining back to `value`.
 */
export function splitEvenly(value: string, pieces: number): string[] {
  const size = Math.max(1, Math.ceil(value.length / pieces));
  const parts: string[] = [];
  for (let i = 0; i < value.length; i += size) {
    parts.push(value.slice(i, i + size));
  }
  return parts.length > 0 ? parts : [""];
}

/** A JSON schema, loosely: the simulator reads only what it needs. */
type Schema = Record<string, unknown>;

function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Gemini spells types in capitals (`OBJECT`); JSON Schema allows a list of types. */
function schemaType(schema: Schema): string | undefined {
  const type = Array.isArray(schema.type)
    ? schema.type.find((t) => t !== "null")
    : schema.type;
  if (typeof type === "string") return type.toLowerCase();
  if (isSchema(schema.properties)) return "object";
  if (schema.items !== undefined) return "array";
  return undefined;
}

function sampleValue(schema: unknown, name: string, depth: number): unknown {
  if (!isSchema(schema)) return `${name} value`;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    return schema.enum[0];
  }
  if ("const" in schema) return schema.const;
  const variants = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(variants) && variants.length > 0) {
    return sampleValue(variants[0], name, depth);
  }
  switch (schemaType(schema)) {
    case "object":
      return depth > 4 ? {} : sampleObject(schema, depth + 1);
    case "array":
      return depth > 4 ? [] : [
        sampleValue(schema.items, name, depth + 1),
        sampleValue(schema.items, name, depth + 1),
      ];
    // A minimum as low as the safe integers (zod's `int()` writes one) is no bound.
    case "integer":
      return typeof schema.minimum === "number" && schema.minimum > -1e9
        ? Math.ceil(schema.minimum)
        : Math.min(7, maximumOf(schema));
    case "number":
      return typeof schema.minimum === "number" && schema.minimum > -1e9
        ? schema.minimum
        : Math.min(42.5, maximumOf(schema));
    case "boolean":
      return true;
    case "null":
      return null;
    default:
      return schema.format === "date" ? "2026-01-01" : `${name} value`;
  }
}

function maximumOf(schema: Schema): number {
  return typeof schema.maximum === "number" ? schema.maximum : Infinity;
}

function sampleObject(schema: Schema, depth: number): Record<string, unknown> {
  const properties = isSchema(schema.properties) ? schema.properties : {};
  const result: Record<string, unknown> = {};
  for (const [key, propertySchema] of Object.entries(properties)) {
    result[key] = sampleValue(propertySchema, key, depth);
  }
  return result;
}

/**
 * Builds tool-call arguments from a tool's parameter schema: every declared
 * property gets a sample of its type (enum's first value, `"<name> value"` for
 * strings, 7 for integers, two items for arrays). A schema without properties
 * gets `{"input": "simulated input", "count": 2}` so arguments are never trivial.
 *
 * @example
 * ```ts
 * import { argumentsFromSchema } from "./tokens.ts";
 * argumentsFromSchema({ type: "object", properties: { city: { type: "string" } } });
 * // { city: "city value" }
 * ```
 *
 * @param schema The tool's parameter schema (JSON Schema, or Gemini's capitalised variant).
 * @returns A JSON object matching the schema.
 */
export function argumentsFromSchema(schema: unknown): Record<string, unknown> {
  const args = isSchema(schema) ? sampleObject(schema, 0) : {};
  return Object.keys(args).length > 0
    ? args
    : { input: "simulated input", count: 2 };
}

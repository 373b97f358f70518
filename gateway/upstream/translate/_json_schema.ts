/**
 * JSON schemas carried from the chat convention (`response_format.json_schema`,
 * strict tools) to the JSON Schema subsets Anthropic's structured outputs and
 * Gemini's `responseJsonSchema` accept. A keyword the target cannot enforce
 * is refused with a 400 naming it, never dropped: dropping a constraint would
 * let the model answer outside the caller's schema. Only annotations, which
 * constrain nothing, are left out where the target does not take them.
 *
 * Sources: Anthropic's structured-outputs guide ("JSON Schema limitations")
 * and the supported-keyword list of Gemini's `responseJsonSchema`.
 *
 * @module
 */

import { TranslationError } from "./chat_types.ts";
import { checkReferences } from "./_json_schema_refs.ts";

/** The upstream a schema is carried to. */
export type SchemaTarget = "anthropic" | "gemini";

type Schema = Record<string, unknown>;

const TARGET_NAMES: Record<SchemaTarget, string> = {
  anthropic: "Anthropic",
  gemini: "Gemini",
};

/** Keywords that describe a schema but constrain nothing; left out for both targets. */
const ANNOTATIONS = new Set([
  "$schema",
  "$comment",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
]);

/** Annotations one target does not take (the other keeps them). */
const TARGET_ANNOTATIONS: Record<SchemaTarget, Set<string>> = {
  anthropic: new Set(["$id", "propertyOrdering"]),
  gemini: new Set(["default"]),
};

const TYPES = new Set([
  "object",
  "array",
  "string",
  "number",
  "integer",
  "boolean",
  "null",
]);

/** String formats Anthropic's structured outputs enforce. */
const ANTHROPIC_FORMATS = new Set([
  "date-time",
  "time",
  "date",
  "duration",
  "email",
  "hostname",
  "uri",
  "ipv4",
  "ipv6",
  "uuid",
]);

/** Deeper schemas are refused before walking them can exhaust the stack. */
const MAX_DEPTH = 64;

/**
 * Carries a caller's JSON schema to `target`'s structured-output subset.
 *
 * What changes, and why each change lets through only answers the caller's
 * schema accepts:
 * - annotations the target does not take (`$schema`, `$comment`, `examples`,
 *   …) are left out: they constrain nothing;
 * - Anthropic: an object without `additionalProperties` gets `false`, which
 *   Anthropic requires (a tighter schema, never a looser one); integer bounds
 *   at the safe-integer limits (what zod's `.int()` writes) are left out, as
 *   no JSON number a JavaScript caller can read exactly lies beyond them;
 * - Gemini: `const` becomes a one-value `enum`, and `definitions` becomes
 *   `$defs` (with the `$ref`s that point into it).
 *
 * @param schema The caller's schema.
 * @param target The upstream.
 * @param param Where the schema sits in the chat request, for errors.
 * @returns A new schema; the caller's is not changed.
 * @throws {TranslationError} Naming the first keyword the target cannot enforce.
 *
 * @example Carry a schema to Anthropic
 * ```ts
 * import { targetSchema } from "./_json_schema.ts";
 * const schema = targetSchema(
 *   { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
 *   "anthropic",
 *   "response_format.json_schema.schema",
 * );
 * console.log(schema.additionalProperties); // false
 * ```
 */
export function targetSchema(
  schema: Schema,
  target: SchemaTarget,
  param: string,
): Schema {
  const carried = new SchemaCarrier(target, param).node(schema, param, 0);
  checkReferences(carried, target === "anthropic", param);
  return carried;
}

class SchemaCarrier {
  constructor(readonly target: SchemaTarget, readonly rootParam: string) {}

  refuse(keyword: string, param: string, why: string): never {
    throw new TranslationError(
      `Cannot use JSON schema keyword "${keyword}" with this model: ${
        TARGET_NAMES[this.target]
      } structured output ${why}`,
      param,
    );
  }

  node(value: unknown, param: string, depth: number): Schema {
    if (depth > MAX_DEPTH) {
      throw new TranslationError(
        `JSON schema nests deeper than ${MAX_DEPTH} levels`,
        param,
      );
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new TranslationError(
        `JSON schema at "${param}" is not an object schema`,
        param,
      );
    }
    const input = value as Schema;
    const out: Schema = {};
    for (const [key, keywordValue] of Object.entries(input)) {
      if (ANNOTATIONS.has(key) || TARGET_ANNOTATIONS[this.target].has(key)) {
        continue;
      }
      this.keyword(out, key, keywordValue, `${param}.${key}`, depth);
    }
    if (this.target === "anthropic" && isObjectSchema(out)) {
      out.additionalProperties ??= false;
    }
    if (this.target === "gemini" && typeof out.$ref === "string") {
      // Gemini takes nothing beside a $ref but `$`-keywords; annotations go.
      delete out.description;
      delete out.title;
      const beside = Object.keys(out).find((key) => !key.startsWith("$"));
      if (beside) {
        this.refuse(
          beside,
          `${param}.${beside}`,
          'takes no keyword beside "$ref"',
        );
      }
    }
    return out;
  }

  keyword(
    out: Schema,
    key: string,
    value: unknown,
    param: string,
    depth: number,
  ): void {
    const gemini = this.target === "gemini";
    switch (key) {
      case "type":
        for (const type of Array.isArray(value) ? value : [value]) {
          if (typeof type !== "string" || !TYPES.has(type)) {
            throw new TranslationError(
              `JSON schema type ${JSON.stringify(type)} is not a JSON type`,
              param,
            );
          }
        }
        out.type = value;
        return;
      case "description":
      case "title":
        out[key] = stringValue(value, key, param);
        return;
      case "default":
      case "$id":
      case "$anchor":
        if (key === "$anchor" && !gemini) {
          return this.refuse(key, param, "resolves no anchor");
        }
        out[key] = value;
        return;
      case "propertyOrdering":
        out[key] = value;
        return;
      case "properties":
      case "$defs":
      case "definitions": {
        const name = gemini && key === "definitions" ? "$defs" : key;
        if (name in out) {
          throw new TranslationError(
            'JSON schema has both "definitions" and "$defs"',
            param,
          );
        }
        out[name] = this.map(value, param, depth);
        return;
      }
      case "required":
        if (
          !Array.isArray(value) ||
          !value.every((name) => typeof name === "string")
        ) {
          throw new TranslationError(
            'JSON schema "required" is not a list of names',
            param,
          );
        }
        out.required = value;
        return;
      case "additionalProperties":
        if (value === false) {
          out.additionalProperties = false;
        } else if (gemini) {
          out.additionalProperties = value === true
            ? true
            : this.node(value, param, depth + 1);
        } else {
          this.refuse(key, param, "only takes additionalProperties: false");
        }
        return;
      case "items":
        if (Array.isArray(value)) {
          return this.refuse(
            key,
            param,
            "does not take a list of item schemas (use prefixItems)",
          );
        }
        out.items = this.node(value, param, depth + 1);
        return;
      case "prefixItems":
        if (!gemini) return this.refuse(key, param, "does not support it");
        out.prefixItems = this.list(value, param, depth);
        return;
      case "anyOf":
        out.anyOf = this.list(value, param, depth);
        return;
      case "allOf":
        if (gemini) return this.refuse(key, param, "does not support it");
        out.allOf = this.list(value, param, depth);
        return;
      case "oneOf":
        // Both targets would read it as anyOf, which admits answers matching
        // several branches that the caller's schema refuses.
        return this.refuse(
          key,
          param,
          "does not enforce it (anyOf is the nearest it takes)",
        );
      case "$ref":
        out.$ref = this.reference(value, param);
        return;
      case "enum":
        out.enum = this.enumValues(value, param);
        return;
      case "const":
        if (gemini) {
          if (typeof value !== "string" && typeof value !== "number") {
            return this.refuse(
              key,
              param,
              "only takes string and number constants",
            );
          }
          out.enum = [value];
          return;
        }
        if (typeof value === "object" && value !== null) {
          return this.refuse(key, param, "only takes primitive constants");
        }
        out.const = value;
        return;
      case "format":
        if (
          !gemini &&
          (typeof value !== "string" || !ANTHROPIC_FORMATS.has(value))
        ) {
          return this.refuse(
            key,
            param,
            `does not enforce format ${JSON.stringify(value)} (only ${
              [...ANTHROPIC_FORMATS].join(", ")
            })`,
          );
        }
        out.format = value;
        return;
      case "pattern":
        if (gemini) return this.refuse(key, param, "does not support it");
        out.pattern = stringValue(value, key, param);
        return;
      case "minItems":
        if (!gemini && value !== 0 && value !== 1) {
          return this.refuse(key, param, "only takes minItems 0 or 1");
        }
        out.minItems = value;
        return;
      case "maxItems":
        if (!gemini) return this.refuse(key, param, "does not support it");
        out.maxItems = value;
        return;
      case "minimum":
      case "maximum":
        if (gemini) {
          out[key] = value;
          return;
        }
        if (isSafeIntegerBound(key, value)) return;
        return this.refuse(key, param, "does not support numeric bounds");
      default:
        return this.refuse(key, param, "does not support it");
    }
  }

  map(value: unknown, param: string, depth: number): Schema {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new TranslationError(
        `JSON schema at "${param}" is not a map of schemas`,
        param,
      );
    }
    return Object.fromEntries(
      Object.entries(value).map((
        [name, schema],
      ) => [name, this.node(schema, `${param}.${name}`, depth + 1)]),
    );
  }

  list(value: unknown, param: string, depth: number): Schema[] {
    if (!Array.isArray(value) || value.length === 0) {
      throw new TranslationError(
        `JSON schema at "${param}" is not a list of schemas`,
        param,
      );
    }
    return value.map((schema, i) =>
      this.node(schema, `${param}[${i}]`, depth + 1)
    );
  }

  reference(value: unknown, param: string): string {
    if (typeof value !== "string" || !value.startsWith("#")) {
      return this.refuse(
        "$ref",
        param,
        "only resolves references inside the schema (#/…)",
      );
    }
    return this.target === "gemini"
      ? value.replace(/^#\/definitions\//, "#/$defs/")
      : value;
  }

  enumValues(value: unknown, param: string): unknown[] {
    if (!Array.isArray(value) || value.length === 0) {
      throw new TranslationError(
        'JSON schema "enum" is not a list of values',
        param,
      );
    }
    const allowed = this.target === "gemini"
      ? (v: unknown) => typeof v === "string" || typeof v === "number"
      : (v: unknown) => typeof v !== "object" || v === null;
    if (!value.every(allowed)) {
      this.refuse(
        "enum",
        param,
        this.target === "gemini"
          ? "only takes string and number enum values"
          : "only takes primitive enum values",
      );
    }
    return value;
  }
}

/**
 * The format's description, which OpenAI shows the model, carried where
 * the targets show it: the schema's own description, before any it has.
 *
 * @param schema The carried schema.
 * @param description `response_format.json_schema.description`, if any.
 * @returns The schema with the description.
 */
export function withDescription(
  schema: Record<string, unknown>,
  description: string | undefined,
): Record<string, unknown> {
  if (!description) return schema;
  const own = typeof schema.description === "string" ? schema.description : "";
  return {
    ...schema,
    description: own ? `${description}\n\n${own}` : description,
  };
}

function stringValue(value: unknown, key: string, param: string): string {
  if (typeof value !== "string") {
    throw new TranslationError(
      `JSON schema "${key}" is not a string`,
      param,
    );
  }
  return value;
}

function isObjectSchema(schema: Schema): boolean {
  const type = schema.type;
  return type === "object" ||
    (Array.isArray(type) && type.includes("object")) ||
    (type === undefined && "properties" in schema);
}

/** zod's `.int()` bounds: the safe-integer range, which constrains nothing a JSON reader keeps exactly. */
function isSafeIntegerBound(key: string, value: unknown): boolean {
  return key === "minimum"
    ? typeof value === "number" && value <= Number.MIN_SAFE_INTEGER
    : typeof value === "number" && value >= Number.MAX_SAFE_INTEGER;
}

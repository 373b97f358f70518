/**
 * The `$ref`s of a carried JSON schema: each must resolve inside the schema
 * (a local JSON pointer), and Anthropic takes no recursive schema. Private to
 * `_json_schema.ts`.
 *
 * @module
 */
import { TranslationError } from "./chat_types.ts";

type Schema = Record<string, unknown>;

/** The most `$ref`s chained one inside another, each a level of the walk. */
const MAX_REFERENCE_DEPTH = 1000;

/**
 * Every `$ref` must resolve inside the schema; Anthropic also refuses a
 * schema that refers to itself (Gemini unrolls such schemas a few levels,
 * which only narrows what the model may answer).
 *
 * @param root The carried schema.
 * @param refuseRecursion Whether a schema that refers to itself is refused (Anthropic).
 * @param param Where the schema sits in the chat request, for errors.
 * @throws {TranslationError} For a reference that does not resolve, nests too deep, or recurses where refused.
 */
export function checkReferences(
  root: Schema,
  refuseRecursion: boolean,
  param: string,
): void {
  const done = new Set<Schema>();
  const active = new Set<Schema>();
  const visit = (node: Schema, where: string): void => {
    if (done.has(node)) return;
    if (active.has(node)) {
      if (refuseRecursion) {
        throw new TranslationError(
          `Cannot use a recursive JSON schema with this model: Anthropic structured output does not support it ("$ref" at "${where}")`,
          where,
        );
      }
      return;
    }
    if (active.size >= MAX_REFERENCE_DEPTH) {
      throw new TranslationError(
        `JSON schema references nest deeper than ${MAX_REFERENCE_DEPTH} levels`,
        where,
      );
    }
    active.add(node);
    for (const [key, value] of Object.entries(node)) {
      const at = `${where}.${key}`;
      if (key === "$ref" && typeof value === "string") {
        visit(resolvePointer(root, value, at), at);
      } else if (
        key === "properties" || key === "$defs" || key === "definitions"
      ) {
        for (const [name, child] of Object.entries(value as Schema)) {
          visit(child as Schema, `${at}.${name}`);
        }
      } else if (key === "anyOf" || key === "allOf" || key === "prefixItems") {
        (value as Schema[]).forEach((child, i) => visit(child, `${at}[${i}]`));
      } else if (
        (key === "items" || key === "additionalProperties") && isSchema(value)
      ) {
        visit(value, at);
      }
    }
    active.delete(node);
    done.add(node);
  };
  visit(root, param);
}

function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Resolves a local JSON pointer (`#`, `#/$defs/Name`) against the root. */
function resolvePointer(root: Schema, ref: string, param: string): Schema {
  let node: unknown = root;
  const path = ref.slice(1);
  if (path !== "") {
    if (!path.startsWith("/")) {
      throw new TranslationError(
        `Cannot resolve JSON schema reference "${ref.slice(0, 80)}"`,
        param,
      );
    }
    for (const raw of path.slice(1).split("/")) {
      let segment: string;
      try {
        segment = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll(
          "~0",
          "~",
        );
      } catch {
        segment = raw;
      }
      node = isSchema(node) && Object.hasOwn(node, segment)
        ? node[segment]
        : Array.isArray(node) && /^\d+$/.test(segment)
        ? node[Number(segment)]
        : undefined;
    }
  }
  if (!isSchema(node)) {
    throw new TranslationError(
      `Cannot resolve JSON schema reference "${ref.slice(0, 80)}"`,
      param,
    );
  }
  return node;
}

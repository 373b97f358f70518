/** Reading request bodies of unknown shape, shared by the wire formats. */

/** A JSON object. */
export type Json = Record<string, unknown>;

/** Whether `value` is a JSON object (not an array, not null). */
export function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `value` if it is an array, else an empty one. */
export function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** A field the Gemini REST API accepts in camelCase or snake_case. */
export function field(object: Json, camel: string, snake: string): unknown {
  return object[camel] ?? object[snake];
}

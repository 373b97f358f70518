/**
 * What a trace keeps of a call's bodies, when the operator turned that on:
 * credentials scrubbed (fields named like them, key-shaped strings anywhere)
 * and the text bounded so two bodies and the record fit one store value.
 *
 * @module
 */

/**
 * The most bytes of one body a trace may keep (a KV value holds 64 KiB).
 *
 * @example
 * ```ts
 * import { keptBody, MAX_TRACE_BODY_BYTES } from "./trace_bodies.ts";
 *
 * keptBody("x".repeat(20_000), MAX_TRACE_BODY_BYTES).length; // 16_384 kept, then a note of what was cut
 * ```
 */
export const MAX_TRACE_BODY_BYTES = 16_384;

const SECRET_FIELD =
  /^(authorization|proxy-authorization|x-api-key|x-goog-api-key|api[-_]?key|apikey|access[-_]?token|refresh[-_]?token|token|secret|client[-_]?secret|password)$/i;
// Provider and gateway keys wherever they appear in text: OpenAI, Anthropic,
// xAI, OpenRouter, Google, and the gateway's own caller keys.
const SECRET_VALUE =
  /\b(sk-[A-Za-z0-9_-]{16,}|xai-[A-Za-z0-9_-]{16,}|AIza[A-Za-z0-9_-]{30,}|mk-[A-Za-z0-9]{16,})\b/g;

function scrubJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(scrubJson);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [
        key,
        SECRET_FIELD.test(key) ? "[scrubbed]" : scrubJson(inner),
      ]),
    );
  }
  return value;
}

/**
 * A body as a trace keeps it: fields named like credentials (`api_key`,
 * `authorization`, `password`…) replaced, key-shaped strings (`sk-…`,
 * `mk-…`, `AIza…`, `xai-…`) replaced wherever they appear, then cut to
 * `maxBytes` of UTF-8, and to `maxBytes` as stored (text beyond Latin-1 is
 * stored as UTF-16, so half as many characters), with a note of what was cut.
 *
 * @example
 * ```ts
 * import { keptBody } from "./trace_bodies.ts";
 *
 * keptBody('{"model":"m","api_key":"abc"}', 1024); // '{"model":"m","api_key":"[scrubbed]"}'
 * ```
 *
 * @param text The body as sent.
 * @param maxBytes The most bytes to keep, at most {@linkcode MAX_TRACE_BODY_BYTES}.
 * @returns The scrubbed, bounded text.
 */
export function keptBody(text: string, maxBytes: number): string {
  let scrubbed = text;
  try {
    scrubbed = JSON.stringify(scrubJson(JSON.parse(text)));
  } catch {
    // Not JSON: only the key-shaped strings are replaced.
  }
  scrubbed = scrubbed.replace(SECRET_VALUE, "[scrubbed key]");
  const bytes = new TextEncoder().encode(scrubbed);
  const limit = Math.min(maxBytes, MAX_TRACE_BODY_BYTES);
  if (bytes.length <= limit && storedBytes(scrubbed) <= limit) return scrubbed;
  // Cut on a character boundary: drop a partial UTF-8 sequence at the end.
  let kept = new TextDecoder().decode(bytes.subarray(0, limit)).replace(
    /\uFFFD$/,
    "",
  );
  // A store keeps text beyond Latin-1 as UTF-16, two bytes a unit: two
  // bodies of 16 KiB of UTF-8 could then pass a Deno KV value's 64 KiB and
  // lose the charge committed with the trace.
  if (storedBytes(kept) > limit) {
    kept = kept.slice(0, Math.floor(limit / 2)).replace(/[\uD800-\uDBFF]$/, "");
  }
  const cut = bytes.length - new TextEncoder().encode(kept).length;
  // ASCII after the cut, so the note adds no two-byte character.
  return `${kept}... [${cut} more bytes not kept]`;
}

/** The bytes V8 (and so either store) takes for a string: one a unit for Latin-1 text, else two. */
function storedBytes(text: string): number {
  return WIDE_CHARACTER.test(text) ? 2 * text.length : text.length;
}

const WIDE_CHARACTER = /[\u0100-\uffff]/;

/**
 * Keeping a provider key out of what the gateway relays or writes down: a
 * provider may quote the key it was sent, in an error, an answer's body or
 * a stream event.
 *
 * @module
 */
import type { ProviderKey } from "./key_pool.ts";

/**
 * The shortest provider key the gateway scrubs from what it relays. Every
 * real provider's keys are far longer (OpenAI `sk-…` and xAI `xai-…` keys
 * run past 50 characters, Anthropic's past 100, Gemini's are 39, OpenRouter's
 * 73), and a provider echoes only the key it was sent; a shorter key is a
 * simulator's or a test's (the README's is `sim`), and scrubbing it would
 * rewrite ordinary text that happens to contain it ("simple", a tool id).
 */
export const MIN_SCRUBBED_KEY_LENGTH = 20;

/**
 * Names a provider key by its id wherever its secret appears in `text`, for
 * anything relayed to a caller or written down. A key shorter than
 * {@linkcode MIN_SCRUBBED_KEY_LENGTH} cannot be a real provider's and is
 * left alone, so ordinary text is never rewritten.
 *
 * @param text Text from a provider (an error message, a stream event).
 * @param key The key the request was sent with.
 * @returns The text, with the secret replaced by `[key <id>]`.
 *
 * @example Scrub a key
 * ```ts
 * import { scrubKey } from "./scrub.ts";
 *
 * const key = {
 *   provider: "openai" as const,
 *   keyId: "openai:1a2b3c4d",
 *   secret: "sk-proj-0123456789abcdefghij",
 * };
 * scrubKey("bad key sk-proj-0123456789abcdefghij", key); // "bad key [key openai:1a2b3c4d]"
 * scrubKey("a simple answer", { ...key, secret: "sim" }); // unchanged
 * ```
 */
export function scrubKey(text: string, key: ProviderKey): string {
  return scrubsKey(key) && text.includes(key.secret)
    ? text.replaceAll(key.secret, `[key ${key.keyId}]`)
    : text;
}

/**
 * Whether {@linkcode scrubKey} scrubs `key` at all.
 *
 * @param key The key.
 * @returns `true` for a key of at least {@linkcode MIN_SCRUBBED_KEY_LENGTH} characters.
 */
export function scrubsKey(key: ProviderKey): boolean {
  return key.secret.length >= MIN_SCRUBBED_KEY_LENGTH;
}

/**
 * A JSON answer's text with the key scrubbed, however the JSON spells it:
 * as {@linkcode scrubKey} does, and, when the text holds an escape that can
 * spell a key's characters (`\uXXXX`, `\/`), once more on the text written
 * out again without them, so `"sk\u002dproj..."` cannot carry the key past
 * the scrub. Text that is not JSON is scrubbed as it is.
 *
 * @param text A provider's answer.
 * @param key The key the request was sent with.
 * @returns The text, with no spelling of the secret left.
 *
 * @example
 * ```ts
 * import { scrubAnswer } from "./scrub.ts";
 *
 * const key = {
 *   provider: "openai" as const,
 *   keyId: "openai:1a2b3c4d",
 *   secret: "sk-proj-0123456789abcdefghij",
 * };
 * scrubAnswer('{"echo":"sk\\u002dproj-0123456789abcdefghij"}', key); // '{"echo":"[key openai:1a2b3c4d]"}'
 * ```
 */
export function scrubAnswer(text: string, key: ProviderKey): string {
  if (!scrubsKey(key)) return text;
  const scrubbed = scrubKey(text, key);
  if (!scrubbed.includes("\\u") && !scrubbed.includes("\\/")) return scrubbed;
  let decoded: string;
  try {
    decoded = JSON.stringify(JSON.parse(scrubbed));
  } catch {
    return scrubbed;
  }
  return decoded.includes(key.secret) ? scrubKey(decoded, key) : scrubbed;
}

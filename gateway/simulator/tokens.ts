/**
 * Deterministic, cheap token arithmetic for the provider simulator: token
 * counts from character counts, the cached-token rule, and splitting replies into
 * stream deltas.
 *
 * @module
 */

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

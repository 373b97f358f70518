/**
 * How many input tokens a call may bill, estimated before it is sent, so its
 * reservation holds enough. Conservative on purpose: an estimate below the
 * real count becomes a debt at settlement (recorded, never lost), one above
 * it only holds money for the length of the call.
 *
 * - Text: a third of a token per ASCII character (tokenizers give about a
 *   quarter) and half a token per UTF-8 byte of anything else (CJK is about a
 *   token per character, which is three bytes; an emoji up to three tokens in
 *   four bytes).
 * - Media (an image, audio or file part, inline or by reference): a fixed
 *   {@linkcode MEDIA_TOKENS} each, whatever the size of its base64, which
 *   providers do not bill by length.
 * - Context the body only points at (Responses `previous_response_id`, Gemini
 *   `cachedContent`): a fixed {@linkcode REFERENCED_CONTEXT_TOKENS}.
 *
 * @module
 */

/** Tokens held for one image, audio or file part (the largest images bill about 6 000 tokens on the providers served). */
export const MEDIA_TOKENS = 6_000;

/** Tokens held for context a body points at rather than carries. */
export const REFERENCED_CONTEXT_TOKENS = 100_000;

/** Part types that carry media, in the four conventions. */
const MEDIA_TYPES = new Set([
  "image_url",
  "input_audio",
  "file",
  "image",
  "document",
  "input_image",
  "input_file",
  "input_audio",
]);

/** Gemini parts that carry media. */
const MEDIA_KEYS = new Set([
  "inlineData",
  "inline_data",
  "fileData",
  "file_data",
]);

/** Body fields that point at context the provider bills as input. */
const REFERENCE_KEYS = new Set([
  "previous_response_id",
  "cachedContent",
  "cached_content",
]);

/**
 * Tokens a piece of text may bill: a third per ASCII character, a half per
 * UTF-8 byte of anything else.
 *
 * @param text The text.
 * @returns The estimate, rounded up.
 */
export function textTokens(text: string): number {
  let ascii = 0;
  let otherBytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) ascii++;
    else if (code < 0x800) otherBytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      otherBytes += 4;
      i++;
    } else otherBytes += 3;
  }
  return Math.ceil(ascii / 3 + otherBytes / 2);
}

/**
 * Input tokens a parsed request body may bill (see the module doc).
 *
 * @param body The caller's parsed JSON body.
 * @returns The estimate.
 */
export function estimateInputTokens(body: unknown): number {
  let tokens = 0;
  // A stack, not recursion: a hostile body may nest 100 000 levels deep.
  const pending: unknown[] = [body];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === "string") {
      tokens += textTokens(value);
    } else if (Array.isArray(value)) {
      for (const item of value) pending.push(item);
    } else if (typeof value === "object" && value !== null) {
      const record = value as Record<string, unknown>;
      if (typeof record.type === "string" && MEDIA_TYPES.has(record.type)) {
        tokens += MEDIA_TOKENS;
        continue;
      }
      for (const [key, item] of Object.entries(record)) {
        if (MEDIA_KEYS.has(key)) tokens += MEDIA_TOKENS;
        else if (REFERENCE_KEYS.has(key) && item) {
          tokens += REFERENCED_CONTEXT_TOKENS;
        } else {
          tokens += textTokens(key);
          pending.push(item);
        }
      }
    }
  }
  return tokens;
}

/** Keys whose strings are answer text in a streamed event, in the four conventions. */
const OUTPUT_KEYS = new Set([
  "content",
  "text",
  "arguments",
  "partial_json",
  "thinking",
  "reasoning",
  "reasoning_content",
  "refusal",
  "delta",
]);

/** Keys whose strings label the answer rather than being part of it. */
const LABEL_KEYS = new Set(["role", "type", "id", "finish_reason", "index"]);

/**
 * Output tokens one streamed event carried: the answer text in it (content,
 * tool-call arguments, reasoning), counted as {@linkcode textTokens} counts.
 * Bills an abandoned stream for what it relayed.
 *
 * @param event The event's parsed JSON.
 * @returns The estimate.
 */
export function outputTextTokens(event: unknown): number {
  let tokens = 0;
  const pending: [unknown, boolean, string][] = [[event, false, ""]];
  while (pending.length > 0) {
    const [value, isOutput, key] = pending.pop()!;
    if (typeof value === "string") {
      if (isOutput && !LABEL_KEYS.has(key)) tokens += textTokens(value);
    } else if (Array.isArray(value)) {
      for (const item of value) pending.push([item, isOutput, key]);
    } else if (typeof value === "object" && value !== null) {
      for (const [name, item] of Object.entries(value)) {
        pending.push([item, isOutput || OUTPUT_KEYS.has(name), name]);
      }
    }
  }
  return tokens;
}

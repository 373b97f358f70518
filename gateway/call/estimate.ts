/**
 * How many input tokens a call may bill, estimated before it is sent, so its
 * reservation holds enough. Conservative on purpose: an estimate below the
 * real count becomes a debt at settlement (recorded, never lost), one above
 * it only holds money for the length of the call.
 *
 * - Text, wherever it rides (message content, tool definitions and
 *   arguments, an Anthropic `document` whose source is text or a list of
 *   text blocks): a third of a token per ASCII character (tokenizers give
 *   about a quarter) and half a token per UTF-8 byte of anything else (CJK is
 *   about a token per character, which is three bytes; an emoji up to three
 *   tokens in four bytes). ASCII is counted as JSON writes it (a newline or
 *   quote is two characters, another control character six), and the JSON
 *   around the values (keys, quotes, brackets, numbers) at the ASCII rate, so
 *   a body of short values or escapes is never cheaper than its JSON.
 * - Inline data of a text type (`text/*`, JSON, CSV, XML, YAML…: Anthropic
 *   base64 document sources, OpenAI chat `file.file_data`, Responses
 *   `input_file.file_data`, Gemini `inlineData`): held as text at the worst
 *   rate, half a token per decoded byte, from the base64 length (× 3/4)
 *   without decoding it.
 * - PDFs inline: `pdfTokens` of the decoded size. Providers bill a
 *   PDF page as its text plus an image of the page (Anthropic and OpenAI;
 *   Gemini a page image only). A page's image is the model's price for a
 *   letter page rendered at 150 dpi (Anthropic's is its largest, 1,640), and
 *   with a full page of text (3,000) that makes one page
 *   (`PDF_PAGE_TOKENS` on Anthropic). The text and drawing of a
 *   page take bytes in the file: a PDF stores text Flate-compressed, about
 *   3–4× on prose, so its text is at most about one token per stored byte,
 *   and an ordinary page takes more bytes than the 4,640 tokens it can bill.
 *   Hence one token per decoded byte, scaled up where the model bills a page
 *   above 4,640 (gpt-4o-mini's 33× image tokens), and never less than one
 *   page. A crafted PDF (hundreds of empty pages, text compressed far beyond
 *   prose) can bill more; the providers' own caps (100 pages a request on
 *   Anthropic and OpenAI, the context window) then bound it.
 * - Images: priced from their pixel size as each model bills them
 *   (`images.ts`), the size read from the first bytes of the base64; by URL
 *   or file id, the most one image bills. Every carrier is read: chat
 *   `image_url`, Anthropic `image` blocks (inside `tool_result` too),
 *   Responses `input_image` and `computer_screenshot` (the output of a
 *   `computer_call_output`), Gemini `inlineData`/`inline_data` (inside
 *   `functionResponse.parts` too) and `fileData` with an image type.
 * - Other media inline (audio, Office files, undecodable data): the larger
 *   of `MEDIA_TOKENS` and the decoded size as text.
 * - Context the body only points at (Responses `previous_response_id`,
 *   `conversation`, a stored `prompt` by id and `item_reference` input
 *   items, Gemini `cachedContent`, documents and files by URL or file id,
 *   Gemini `fileData` of a non-image type): a fixed
 *   {@linkcode REFERENCED_CONTEXT_TOKENS} each; on a model whose context
 *   window the catalog gives, the hold covers the whole window instead
 *   ({@linkcode namesStoredContext}, `hold.ts`).
 *
 * The media rules are in `estimate_media.ts`.
 *
 * @module
 */
import type { ImageTarget } from "./images.ts";
import { MediaMeter, REFERENCED_CONTEXT_TOKENS } from "./estimate_media.ts";

/** The models an estimate without targets prices images for: the dearest rule of each provider. */
const EVERY_MODEL: readonly ImageTarget[] = [
  { provider: "anthropic", upstream: "claude" },
  { provider: "openai", upstream: "gpt-4o-mini" },
  { provider: "gemini", upstream: "gemini-3" },
];

/** Body fields that point at context the provider bills as input. */
const REFERENCE_KEYS = new Set([
  "previous_response_id",
  "conversation",
  "cachedContent",
  "cached_content",
]);

/**
 * Whether a body names stored context of a size the gateway cannot see: a
 * Responses `previous_response_id`, `conversation`, stored `prompt` or
 * `item_reference` input, or Gemini's `cachedContent`. Such a call is held
 * at its model's whole context window where the catalog gives it.
 *
 * @example
 * ```ts
 * import { namesStoredContext } from "./estimate.ts";
 *
 * namesStoredContext({ model: "gpt-5.1", conversation: "conv_1", input: "hi" }); // true
 * namesStoredContext({ model: "gpt-5.1", input: [{ type: "item_reference", id: "msg_1" }] }); // true
 * namesStoredContext({ model: "gpt-5.1", input: "hi" }); // false
 * ```
 *
 * @param body The caller's parsed body.
 * @returns Whether it names stored context.
 */
export function namesStoredContext(body: Record<string, unknown>): boolean {
  for (const key of REFERENCE_KEYS) {
    if (body[key]) return true;
  }
  if (isStoredPrompt(body.prompt)) return true;
  return Array.isArray(body.input) && body.input.some(isItemReference);
}

/** A Responses `prompt` that names a stored prompt template by id. */
function isStoredPrompt(value: unknown): boolean {
  return typeof value === "object" && value !== null &&
    typeof (value as { id?: unknown }).id === "string";
}

/** A Responses input item that stands for a stored item by id. */
function isItemReference(value: unknown): boolean {
  return typeof value === "object" && value !== null &&
    (value as { type?: unknown }).type === "item_reference";
}

/**
 * Tokens a piece of text may bill: a third per ASCII character, a half per
 * UTF-8 byte of anything else.
 *
 * @example
 * ```ts
 * import { textTokens } from "./estimate.ts";
 * textTokens("hello world!"); // 4
 * ```
 *
 * @param text The text.
 * @returns The estimate, rounded up.
 */
export function textTokens(text: string): number {
  return weightedTextTokens(text, PLAIN_CHARS);
}

/**
 * {@linkcode textTokens} with ASCII counted as JSON writes it: a quote,
 * backslash or one of `\b\f\n\r\t` two characters, another control
 * character six (`\u0001`).
 */
function heldTextTokens(text: string): number {
  return weightedTextTokens(text, JSON_CHARS);
}

/**
 * A third of a token per ASCII character, each weighted by `asciiChars`
 * (how many characters it stands for), and half a token per UTF-8 byte of
 * anything else.
 */
function weightedTextTokens(text: string, asciiChars: Uint8Array): number {
  let ascii = 0;
  let otherBytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) ascii += asciiChars[code];
    else if (code < 0x800) otherBytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      otherBytes += 4;
      i++;
    } else otherBytes += 3;
  }
  return Math.ceil(ascii / 3 + otherBytes / 2);
}

/** Every ASCII character counts once. */
const PLAIN_CHARS = new Uint8Array(128).fill(1);

/** Characters JSON writes for each ASCII character. */
const JSON_CHARS = (() => {
  const chars = new Uint8Array(128).fill(1);
  for (let code = 0; code < 0x20; code++) chars[code] = 6;
  for (const code of [0x08, 0x09, 0x0a, 0x0c, 0x0d, 0x22, 0x5c]) {
    chars[code] = 2;
  }
  return chars;
})();

/**
 * Input tokens a parsed request body may bill on the models that may serve
 * it (see the module doc).
 *
 * @example
 * ```ts
 * import { estimateInputTokens } from "./estimate.ts";
 * estimateInputTokens(
 *   { model: "gpt-4o", messages: [{ role: "user", content: "hi" }] },
 *   [{ provider: "openai", upstream: "gpt-4o" }],
 * ); // 25
 * ```
 *
 * @param body The caller's parsed JSON body.
 * @param targets The models that may serve the call (catalog entries: the
 * call's fallback candidates); images are held at the dearest. Default:
 * the dearest rule of every provider.
 * @returns The estimate.
 */
export function estimateInputTokens(
  body: unknown,
  targets: readonly ImageTarget[] = EVERY_MODEL,
): number {
  const media = new MediaMeter(targets.length > 0 ? targets : EVERY_MODEL);
  let tokens = 0;
  // Characters of JSON around the values, held at the ASCII rate.
  let syntax = 0;
  // A stack, not recursion: a hostile body may nest 100 000 levels deep.
  const pending: unknown[] = [body];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === "string") {
      tokens += heldTextTokens(value);
      syntax += 2;
    } else if (Array.isArray(value)) {
      syntax += 2 + value.length;
      for (const item of value) pending.push(item);
    } else if (typeof value === "object" && value !== null) {
      const record = value as Record<string, unknown>;
      tokens += media.part(record);
      if (isItemReference(record)) tokens += REFERENCED_CONTEXT_TOKENS;
      const priced = media.pricedKey(record);
      syntax += 2;
      for (const key of Object.keys(record)) {
        const item = record[key];
        tokens += heldTextTokens(key);
        syntax += 4;
        if (key === priced) continue;
        if (
          (REFERENCE_KEYS.has(key) && item) ||
          (key === "prompt" && isStoredPrompt(item))
        ) {
          tokens += REFERENCED_CONTEXT_TOKENS;
        }
        pending.push(item);
      }
    } else if (value !== undefined) {
      syntax += String(value).length;
    }
  }
  return tokens + Math.ceil(syntax / 3);
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

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
 * - PDFs inline: {@linkcode pdfTokens} of the decoded size. Providers bill a
 *   PDF page as its text plus an image of the page (Anthropic and OpenAI;
 *   Gemini a page image only). A page's image is the model's price for a
 *   letter page rendered at 150 dpi (Anthropic's is its largest, 1,640), and
 *   with a full page of text (3,000) that makes one page
 *   ({@linkcode PDF_PAGE_TOKENS} on Anthropic). The text and drawing of a
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
 *   of {@linkcode MEDIA_TOKENS} and the decoded size as text.
 * - Context the body only points at (Responses `previous_response_id`,
 *   Gemini `cachedContent`, documents and files by URL or file id, Gemini
 *   `fileData` of a non-image type): a fixed
 *   {@linkcode REFERENCED_CONTEXT_TOKENS} each.
 *
 * @module
 */
import {
  base64Bytes,
  base64Reader,
  type ImageDetail,
  type ImageSize,
  imageSize,
  type ImageTarget,
  imageTokens,
  parseDataUrl,
} from "./images.ts";

/** The least one inline medium of an unknown kind (audio, an Office file) holds. */
export const MEDIA_TOKENS = 6_000;

/** Tokens held for context a body points at rather than carries. */
export const REFERENCED_CONTEXT_TOKENS = 100_000;

/** One PDF page on Anthropic: its image (Anthropic's largest, 1,640) and a full page of text (3,000). */
export const PDF_PAGE_TOKENS = 4_640;

/** Tokens of text on a full PDF page. */
const PAGE_TEXT_TOKENS = 3_000;

/** A letter page rendered at 150 dpi: the image a provider makes of a PDF page. */
const PDF_PAGE_IMAGE = { width: 1275, height: 1650 };

/** The models an estimate without targets prices images for: the dearest rule of each provider. */
const EVERY_MODEL: readonly ImageTarget[] = [
  { provider: "anthropic", upstream: "claude" },
  { provider: "openai", upstream: "gpt-4o-mini" },
  { provider: "gemini", upstream: "gemini-3" },
];

/** Body fields that point at context the provider bills as input. */
const REFERENCE_KEYS = new Set([
  "previous_response_id",
  "cachedContent",
  "cached_content",
]);

/** Media types that are text, besides `text/*`. */
const TEXT_MEDIA_TYPES = new Set([
  "application/json",
  "application/jsonl",
  "application/x-ndjson",
  "application/xml",
  "application/csv",
  "application/yaml",
  "application/x-yaml",
  "application/javascript",
  "application/x-javascript",
  "application/typescript",
  "application/x-python",
  "application/x-sh",
  "application/sql",
  "application/rtf",
  "application/x-tex",
  "application/toml",
  "application/graphql",
]);

/** File name endings that are text, for a file part whose data names no type. */
const TEXT_EXTENSION =
  /\.(txt|md|markdown|csv|tsv|json|jsonl|xml|ya?ml|html?|css|js|mjs|ts|tsx|jsx|py|rb|go|rs|java|c|h|cpp|hpp|cs|sh|sql|toml|ini|log|tex|rtf)$/i;

/**
 * Whether a media type is text (held as text).
 *
 * @param mediaType The type, any case, parameters allowed.
 * @returns Whether it is text.
 */
export function isTextMediaType(mediaType: string): boolean {
  const type = mediaType.split(";")[0].trim().toLowerCase();
  return type.startsWith("text/") || TEXT_MEDIA_TYPES.has(type) ||
    type.endsWith("+json") || type.endsWith("+xml");
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
 * Tokens a PDF of `bytes` decoded bytes holds (see the module doc for why
 * this bounds what providers bill for ordinary PDFs).
 *
 * @example
 * ```ts
 * import { pdfTokens } from "./estimate.ts";
 * pdfTokens(200_000); // 200000
 * pdfTokens(1_000); // 4640
 * pdfTokens(200_000, 28_500); // 1228449
 * ```
 *
 * @param bytes The PDF's size.
 * @param pageTokens What one page bills on the model (default
 * {@linkcode PDF_PAGE_TOKENS}).
 * @returns Tokens.
 */
export function pdfTokens(
  bytes: number,
  pageTokens: number = PDF_PAGE_TOKENS,
): number {
  const perByte = Math.max(1, pageTokens / PDF_PAGE_TOKENS);
  return Math.max(pageTokens, Math.ceil(bytes * perByte));
}

/** Prices the media a body carries for the call's models, and remembers which strings it priced. */
class MediaMeter {
  /** The string, by its container, each priced medium replaces (its base64). */
  readonly #priced = new WeakMap<object, string>();
  readonly #targets: readonly ImageTarget[];
  #unknownImage?: number;

  constructor(targets: readonly ImageTarget[]) {
    this.#targets = targets;
  }

  /** The key of `container` whose string was priced as media, if any. */
  pricedKey(container: object): string | undefined {
    return this.#priced.get(container);
  }

  /** Marks `container[key]` as priced; a second payload in one container stays text. */
  #price(container: Record<string, unknown>, key: string): void {
    if (!this.#priced.has(container)) this.#priced.set(container, key);
  }

  /** The most one image of `size` bills on any of the call's models. */
  image(size: ImageSize | undefined, detail?: unknown): number {
    if (size === undefined && this.#unknownImage !== undefined) {
      return this.#unknownImage;
    }
    const asked = detail === "low" || detail === "high"
      ? detail as ImageDetail
      : undefined;
    let tokens = 0;
    for (const target of this.#targets) {
      tokens = Math.max(tokens, imageTokens(target, size, asked));
    }
    if (size === undefined) this.#unknownImage = tokens;
    return tokens;
  }

  /** An image given as a URL (a `data:` URL is sized from its header). */
  imageUrl(
    container: Record<string, unknown>,
    key: string,
    detail: unknown,
  ): number {
    const url = container[key] as string;
    const data = parseDataUrl(url);
    if (!data?.base64) return this.image(undefined, detail);
    this.#price(container, key);
    return this.image(imageSize(base64Reader(url, data.start)), detail);
  }

  /** Inline base64 data of a media type, from `start` in `container[key]`. */
  inline(
    container: Record<string, unknown>,
    key: string,
    mediaType: string,
    start = 0,
  ): number {
    const data = container[key] as string;
    this.#price(container, key);
    const bytes = base64Bytes(data, start);
    if (isTextMediaType(mediaType)) return Math.ceil(bytes / 2);
    if (mediaType === "application/pdf") {
      return pdfTokens(bytes, PAGE_TEXT_TOKENS + this.image(PDF_PAGE_IMAGE));
    }
    const size = imageSize(base64Reader(data, start));
    if (size || mediaType.startsWith("image/")) return this.image(size);
    return Math.max(MEDIA_TOKENS, Math.ceil(bytes / 2));
  }

  /**
   * A file part's data: a `data:` URL, or bare base64 whose type the file
   * name tells.
   */
  fileData(
    container: Record<string, unknown>,
    key: string,
    filename: unknown,
  ): number {
    const value = container[key] as string;
    const data = parseDataUrl(value);
    if (data && !data.base64) return 0; // percent-encoded: counted as text
    let mediaType = data?.mediaType ?? "";
    if (!mediaType && typeof filename === "string") {
      if (/\.pdf$/i.test(filename)) mediaType = "application/pdf";
      else if (TEXT_EXTENSION.test(filename)) mediaType = "text/plain";
    }
    return this.inline(container, key, mediaType, data?.start ?? 0);
  }

  /**
   * Tokens of the medium `record` is, if it is one; the walk still counts
   * its other fields as text.
   */
  part(record: Record<string, unknown>): number {
    let tokens = 0;
    switch (record.type) {
      case "image_url": {
        const image = record.image_url;
        if (typeof image === "string") {
          tokens += this.imageUrl(record, "image_url", undefined);
        } else if (isRecord(image) && typeof image.url === "string") {
          tokens += this.imageUrl(image, "url", image.detail);
        } else tokens += this.image(undefined);
        break;
      }
      case "input_image":
      case "computer_screenshot":
        tokens += typeof record.image_url === "string"
          ? this.imageUrl(record, "image_url", record.detail)
          : this.image(undefined, record.detail);
        break;
      case "image": {
        const source = record.source;
        if (isRecord(source)) {
          tokens += source.type === "base64" && typeof source.data === "string"
            ? this.inline(source, "data", "image/")
            : this.image(undefined);
        } else if (typeof record.data === "string") {
          tokens += this.inline(record, "data", "image/");
        }
        break;
      }
      case "document": {
        const source = record.source;
        if (!isRecord(source)) break;
        if (source.type === "base64" && typeof source.data === "string") {
          tokens += this.inline(
            source,
            "data",
            typeof source.media_type === "string" ? source.media_type : "",
          );
        } else if (source.type === "url" || source.type === "file") {
          tokens += REFERENCED_CONTEXT_TOKENS;
        }
        break;
      }
      case "file":
        if (isRecord(record.file)) tokens += this.filePart(record.file);
        break;
      case "input_file":
        tokens += this.filePart(record);
        break;
      case "input_audio": {
        const audio = record.input_audio;
        if (isRecord(audio) && typeof audio.data === "string") {
          tokens += this.inline(audio, "data", "audio/");
        }
        break;
      }
    }
    tokens += this.geminiBlob(record.inlineData) +
      this.geminiBlob(record.inline_data) +
      this.geminiFile(record.fileData) + this.geminiFile(record.file_data);
    return tokens;
  }

  /** OpenAI chat `file` / Responses `input_file`. */
  filePart(file: Record<string, unknown>): number {
    if (typeof file.file_data === "string") {
      return this.fileData(file, "file_data", file.filename);
    }
    return file.file_id !== undefined || file.file_url !== undefined
      ? REFERENCED_CONTEXT_TOKENS
      : 0;
  }

  /** Gemini `inlineData`. */
  geminiBlob(blob: unknown): number {
    if (!isRecord(blob) || typeof blob.data !== "string") return 0;
    const mediaType = blob.mimeType ?? blob.mime_type;
    return this.inline(
      blob,
      "data",
      typeof mediaType === "string" ? mediaType.toLowerCase() : "",
    );
  }

  /** Gemini `fileData`: an image by URI is one image; anything else, referenced context. */
  geminiFile(file: unknown): number {
    if (!isRecord(file)) return 0;
    const mediaType = file.mimeType ?? file.mime_type;
    return typeof mediaType === "string" &&
        mediaType.toLowerCase().startsWith("image/")
      ? this.image(undefined)
      : REFERENCED_CONTEXT_TOKENS;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

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
      const priced = media.pricedKey(record);
      syntax += 2;
      for (const key of Object.keys(record)) {
        const item = record[key];
        tokens += heldTextTokens(key);
        syntax += 4;
        if (key === priced) continue;
        if (REFERENCE_KEYS.has(key) && item) {
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

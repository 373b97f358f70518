/**
 * What the media a request body carries may bill, for the input estimate
 * of `estimate.ts` (whose module doc gives the rules): PDFs by their size,
 * images by their pixel size on each model (`images.ts`), text data at the
 * worst text rate, other media and referenced context at fixed amounts.
 * {@linkcode MediaMeter} prices every carrier the four conventions use.
 *
 * @module
 */
import {
  base64Bytes,
  base64Reader,
  type ImageSize,
  imageSize,
  parseDataUrl,
} from "./image_size.ts";
import { type ImageDetail, type ImageTarget, imageTokens } from "./images.ts";

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
 * Tokens a PDF of `bytes` decoded bytes holds (see the module doc for why
 * this bounds what providers bill for ordinary PDFs).
 *
 * @example
 * ```ts
 * import { pdfTokens } from "./estimate_media.ts";
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
export class MediaMeter {
  /** The string, by its container, each priced medium replaces (its base64). */
  readonly #priced = new WeakMap<object, string>();
  readonly #targets: readonly ImageTarget[];
  #unknownImage?: number;

  /**
   * A meter for the models that may serve the call.
   *
   * @param targets The models; an image is held at the dearest of them.
   */
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

/**
 * Image tokens as each provider bills them, from the image's real pixel size
 * when its bytes are inline (PNG, JPEG, GIF or WebP header), so the cost of a
 * screenshot through the gateway is the cost the provider would charge:
 *
 * | Billing | Tokens for a `w × h` image |
 * |---|---|
 * | `anthropic` | scaled (aspect kept) to a long edge ≤ 1568 px and to ≤ 1600 tokens, then `ceil(w·h / 750)` |
 * | `openai` | `detail: "low"`: 85. Otherwise fit in 2048 × 2048, scale the shortest side down to 768 (whole pixels, rounded up, after each step), then 85 + 170 per 512 px tile |
 * | `gemini` | 258 when both sides ≤ 384 px, else 258 per 768 × 768 tile |
 *
 * An image whose size cannot be read (a URL, a file reference, bytes that are
 * no known image) counts {@linkcode IMAGE_TOKENS}.
 *
 * @module
 */

/** Tokens an image counts for when its size cannot be read. */
export const IMAGE_TOKENS = 258;

/** How a provider bills image input. */
export type ImageBilling = "anthropic" | "openai" | "gemini";

/** An image's size in pixels. */
export interface ImageSize {
  /** Width in pixels. */
  width: number;
  /** Height in pixels. */
  height: number;
}

/** Base64 characters decoded to find a header: enough for JPEG files whose EXIF block precedes the frame. */
const HEADER_BASE64_CHARS = 256 * 1024;
/** A side longer than this is no image a provider would take; the header is treated as unreadable. */
const MAX_SIDE = 100_000;

const ANTHROPIC_LONG_EDGE = 1568;
const ANTHROPIC_MAX_TOKENS = 1600;
const ANTHROPIC_PIXELS_PER_TOKEN = 750;

function sized(width: number, height: number): ImageSize | undefined {
  return width > 0 && height > 0 && width <= MAX_SIDE && height <= MAX_SIDE
    ? { width, height }
    : undefined;
}

function pngSize(bytes: Uint8Array, view: DataView): ImageSize | undefined {
  // Signature, then the IHDR chunk: length, "IHDR", width, height (big-endian).
  if (bytes.length < 24 || view.getUint32(12) !== 0x49484452) return undefined;
  return sized(view.getUint32(16), view.getUint32(20));
}

function gifSize(view: DataView): ImageSize | undefined {
  if (view.byteLength < 10) return undefined;
  return sized(view.getUint16(6, true), view.getUint16(8, true));
}

function jpegSize(bytes: Uint8Array, view: DataView): ImageSize | undefined {
  let offset = 2;
  while (offset + 9 <= bytes.length) {
    if (bytes[offset] !== 0xff) return undefined;
    const marker = bytes[offset + 1];
    if (marker === 0xff) {
      offset += 1;
      continue;
    }
    // Start-of-frame markers (baseline, progressive, …), not DHT/JPG/DAC.
    if (
      marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 &&
      marker !== 0xcc
    ) {
      return sized(view.getUint16(offset + 7), view.getUint16(offset + 5));
    }
    if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7)) {
      offset += 2;
      continue;
    }
    offset += 2 + view.getUint16(offset + 2);
  }
  return undefined;
}

function webpSize(bytes: Uint8Array, view: DataView): ImageSize | undefined {
  if (bytes.length < 30) return undefined;
  const chunk = String.fromCharCode(...bytes.subarray(12, 16));
  if (chunk === "VP8X") {
    const width = 1 + (bytes[24] | bytes[25] << 8 | bytes[26] << 16);
    const height = 1 + (bytes[27] | bytes[28] << 8 | bytes[29] << 16);
    return sized(width, height);
  }
  if (chunk === "VP8 ") {
    return sized(
      view.getUint16(26, true) & 0x3fff,
      view.getUint16(28, true) & 0x3fff,
    );
  }
  if (chunk === "VP8L") {
    const bits = view.getUint32(21, true);
    return sized((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1);
  }
  return undefined;
}

/**
 * Reads an image's pixel size from its header (PNG, JPEG, GIF, WebP).
 *
 * @example
 * ```ts
 * import { imageSize } from "./image.ts";
 * imageSize(new Uint8Array([1, 2, 3])); // undefined
 * ```
 *
 * @param bytes The image's first bytes (the whole file is not needed).
 * @returns Its size, or `undefined` when the bytes are no image this reads.
 */
export function imageSize(bytes: Uint8Array): ImageSize | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length >= 8 && view.getUint32(0) === 0x89504e47) {
    return pngSize(bytes, view);
  }
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8) {
    return jpegSize(bytes, view);
  }
  if (
    bytes.length >= 6 && String.fromCharCode(...bytes.subarray(0, 4)) === "GIF8"
  ) {
    return gifSize(view);
  }
  if (
    bytes.length >= 12 &&
    String.fromCharCode(...bytes.subarray(0, 4)) === "RIFF" &&
    String.fromCharCode(...bytes.subarray(8, 12)) === "WEBP"
  ) {
    return webpSize(bytes, view);
  }
  return undefined;
}

/**
 * Reads an image's pixel size from base64 data, decoding only its beginning.
 *
 * @example
 * ```ts
 * import { imageSizeFromBase64 } from "./image.ts";
 * imageSizeFromBase64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==");
 * // { width: 1, height: 1 }
 * ```
 *
 * @param data Base64 (standard or URL-safe alphabet, whitespace allowed).
 * @returns Its size, or `undefined` when it is no image this reads.
 */
export function imageSizeFromBase64(data: unknown): ImageSize | undefined {
  if (typeof data !== "string") return undefined;
  // Most headers sit in the first few dozen bytes; a JPEG's frame header may
  // follow an EXIF block, so longer prefixes are decoded only when needed.
  for (const chars of HEADER_PREFIXES) {
    const size = imageSize(decodePrefix(data, chars));
    if (size || data.length <= chars) return size;
  }
  return undefined;
}

/** Base64 prefixes tried in turn, the last {@linkcode HEADER_BASE64_CHARS}. */
const HEADER_PREFIXES = [64, 8192, HEADER_BASE64_CHARS];

/** The bytes of the first `chars` base64 characters (whitespace and URL-safe letters allowed). */
function decodePrefix(data: string, chars: number): Uint8Array {
  const head = data.slice(0, chars + 64).replace(/\s+/g, "")
    .replaceAll("-", "+").replaceAll("_", "/").slice(0, chars)
    .replace(/=+$/, "");
  const whole = head.slice(0, head.length - (head.length % 4));
  let binary: string;
  try {
    binary = atob(whole);
  } catch {
    return new Uint8Array();
  }
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

/**
 * Reads an image's pixel size from a `data:` URL (`data:image/png;base64,…`).
 *
 * @example
 * ```ts
 * import { imageSizeFromUrl } from "./image.ts";
 * imageSizeFromUrl("https://example.com/cat.png"); // undefined
 * ```
 *
 * @param url The URL.
 * @returns Its size, or `undefined` for other URLs and unreadable data.
 */
export function imageSizeFromUrl(url: unknown): ImageSize | undefined {
  if (typeof url !== "string" || !url.startsWith("data:")) return undefined;
  const comma = url.indexOf(",");
  if (comma === -1 || !url.slice(0, comma).endsWith(";base64")) {
    return undefined;
  }
  return imageSizeFromBase64(url.slice(comma + 1));
}

function anthropicTokens({ width, height }: ImageSize): number {
  const fit = Math.min(1, ANTHROPIC_LONG_EDGE / Math.max(width, height));
  let w = Math.max(1, Math.floor(width * fit));
  let h = Math.max(1, Math.floor(height * fit));
  const limit = ANTHROPIC_MAX_TOKENS * ANTHROPIC_PIXELS_PER_TOKEN;
  if (w * h > limit) {
    const shrink = Math.sqrt(limit / (w * h));
    w = Math.max(1, Math.floor(w * shrink));
    h = Math.max(1, Math.floor(h * shrink));
  }
  return Math.ceil((w * h) / ANTHROPIC_PIXELS_PER_TOKEN);
}

function openaiTokens({ width, height }: ImageSize, detail: string): number {
  if (detail === "low") return 85;
  // Whole pixels after each resize, rounded up: one definite reading, as
  // OpenAI does not say how it rounds. Rounding up is not always the dearer
  // reading (it can shrink the other side in the next step), so the
  // gateway's hold takes the larger of rounding up and truncating.
  const longest = Math.max(width, height);
  let w = longest > 2048 ? Math.ceil((width * 2048) / longest) : width;
  let h = longest > 2048 ? Math.ceil((height * 2048) / longest) : height;
  const shortest = Math.min(w, h);
  if (shortest > 768) {
    w = Math.ceil((w * 768) / shortest);
    h = Math.ceil((h * 768) / shortest);
  }
  return 85 + 170 * Math.ceil(w / 512) * Math.ceil(h / 512);
}

function geminiTokens({ width, height }: ImageSize): number {
  if (width <= 384 && height <= 384) return 258;
  return 258 * Math.ceil(width / 768) * Math.ceil(height / 768);
}

/**
 * Tokens one input image counts for under a provider's billing.
 *
 * @example
 * ```ts
 * import { imageTokens } from "./image.ts";
 * imageTokens({ width: 1280, height: 800 }, "anthropic"); // 1366
 * imageTokens({ width: 1280, height: 800 }, "openai"); // 1105
 * imageTokens({ width: 1280, height: 800 }, "gemini"); // 1032
 * imageTokens(undefined, "openai"); // 258
 * ```
 *
 * @param size The image's size; `undefined` when it could not be read.
 * @param billing Whose billing applies.
 * @param detail OpenAI's `detail` (`low`, `high`, `auto`); ignored by others.
 * @returns The token count.
 */
export function imageTokens(
  size: ImageSize | undefined,
  billing: ImageBilling,
  detail = "auto",
): number {
  if (size === undefined) return IMAGE_TOKENS;
  switch (billing) {
    case "anthropic":
      return anthropicTokens(size);
    case "openai":
      return openaiTokens(size, detail);
    case "gemini":
      return geminiTokens(size);
  }
}

/**
 * An image's pixel size, read from the first bytes of a PNG, JPEG, GIF or
 * WebP, base64 decoded only where the header lies, never whole; and the
 * `data:` URL and base64 arithmetic the credit hold needs to find those
 * bytes and count the rest.
 *
 * @module
 */

/** An image's size in pixels. */
export interface ImageSize {
  /** Width, px. */
  width: number;
  /** Height, px. */
  height: number;
}

/** Segments a JPEG header walk steps over at most before giving up on finding the frame header. */
const JPEG_MAX_SEGMENTS = 256;

/**
 * Reads `count` bytes at `offset` of some encoded data, or `undefined` past
 * its end or where the data cannot be decoded.
 */
export type ByteReader = (
  offset: number,
  count: number,
) => Uint8Array | undefined;

/**
 * A {@linkcode ByteReader} over base64 text (standard or URL-safe alphabet)
 * that decodes only the 4-character groups a read touches, so sizing a
 * 1.5 MB screenshot decodes a few dozen bytes, not 1.5 MB.
 *
 * @example
 * ```ts
 * import { base64Reader } from "./image_size.ts";
 * const read = base64Reader(btoa("GIF89a"));
 * new TextDecoder().decode(read(3, 3)); // "89a"
 * ```
 *
 * @param data The base64 text (no data-URL prefix, no line breaks).
 * @param start Where the base64 begins in `data` (after a data URL's comma).
 * @returns The reader.
 */
export function base64Reader(data: string, start = 0): ByteReader {
  return (offset, count) => {
    if (offset < 0 || count <= 0) return undefined;
    const firstGroup = Math.floor(offset / 3);
    const lastGroup = Math.floor((offset + count - 1) / 3);
    const from = start + firstGroup * 4;
    const to = start + (lastGroup + 1) * 4;
    if (to > data.length) return undefined;
    let chunk = data.slice(from, to);
    if (/[-_]/.test(chunk)) chunk = chunk.replace(/-/g, "+").replace(/_/g, "/");
    let binary: string;
    try {
      binary = atob(chunk);
    } catch {
      return undefined;
    }
    const skip = offset - firstGroup * 3;
    if (binary.length < skip + count) return undefined;
    const bytes = new Uint8Array(count);
    for (let i = 0; i < count; i++) bytes[i] = binary.charCodeAt(skip + i);
    return bytes;
  };
}

/**
 * A {@linkcode ByteReader} over bytes already in memory.
 *
 * @example
 * ```ts
 * import { bytesReader } from "./image_size.ts";
 * bytesReader(new Uint8Array([1, 2, 3]))(1, 2); // Uint8Array [2, 3]
 * ```
 *
 * @param bytes The bytes.
 * @returns The reader.
 */
export function bytesReader(bytes: Uint8Array): ByteReader {
  return (offset, count) =>
    offset >= 0 && count > 0 && offset + count <= bytes.length
      ? bytes.subarray(offset, offset + count)
      : undefined;
}

function matches(
  read: ByteReader,
  offset: number,
  signature: readonly number[],
): boolean {
  const bytes = read(offset, signature.length);
  return bytes !== undefined && signature.every((byte, i) => bytes[i] === byte);
}

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const GIF = [0x47, 0x49, 0x46, 0x38]; // "GIF8"
const RIFF = [0x52, 0x49, 0x46, 0x46];
const WEBP = [0x57, 0x45, 0x42, 0x50];

function size(width: number, height: number): ImageSize | undefined {
  return width > 0 && height > 0 ? { width, height } : undefined;
}

function jpegSize(read: ByteReader): ImageSize | undefined {
  let offset = 2;
  for (let segment = 0; segment < JPEG_MAX_SEGMENTS; segment++) {
    const head = read(offset, 4);
    if (!head || head[0] !== 0xff) return undefined;
    const marker = head[1];
    if (marker === 0xff) { // fill byte before a marker
      offset += 1;
      continue;
    }
    // Markers without a length: TEM, RSTn, SOI.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      offset += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return undefined; // EOI, SOS: no frame header first
    const isFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 &&
      marker !== 0xc8 && marker !== 0xcc;
    if (isFrame) {
      const frame = read(offset + 5, 4);
      return frame &&
        size((frame[2] << 8) | frame[3], (frame[0] << 8) | frame[1]);
    }
    offset += 2 + ((head[2] << 8) | head[3]);
  }
  return undefined;
}

function webpSize(read: ByteReader): ImageSize | undefined {
  const chunk = read(12, 4);
  if (!chunk) return undefined;
  const kind = String.fromCharCode(...chunk);
  if (kind === "VP8 ") {
    const b = read(26, 4);
    return b && size(
      ((b[1] << 8) | b[0]) & 0x3fff,
      ((b[3] << 8) | b[2]) & 0x3fff,
    );
  }
  if (kind === "VP8L") {
    const b = read(21, 4);
    return b && size(
      1 + (((b[1] & 0x3f) << 8) | b[0]),
      1 + (((b[3] & 0x0f) << 10) | (b[2] << 2) | ((b[1] & 0xc0) >> 6)),
    );
  }
  if (kind === "VP8X") {
    const b = read(24, 6);
    return b && size(
      1 + (b[0] | (b[1] << 8) | (b[2] << 16)),
      1 + (b[3] | (b[4] << 8) | (b[5] << 16)),
    );
  }
  return undefined;
}

/**
 * The pixel size of a PNG, JPEG, GIF or WebP image, read from its header.
 *
 * @example
 * ```ts
 * import { base64Reader, imageSize } from "./image_size.ts";
 * // A 1 × 1 PNG.
 * const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
 * imageSize(base64Reader(png)); // { width: 1, height: 1 }
 * ```
 *
 * @param read Reads the image's bytes.
 * @returns The size, or `undefined` for another format or a broken header.
 */
export function imageSize(read: ByteReader): ImageSize | undefined {
  if (matches(read, 0, PNG)) {
    const b = read(16, 8);
    if (!b) return undefined;
    const view = new DataView(b.buffer, b.byteOffset, 8);
    return size(view.getUint32(0), view.getUint32(4));
  }
  if (matches(read, 0, [0xff, 0xd8, 0xff])) return jpegSize(read);
  if (matches(read, 0, GIF)) {
    const b = read(6, 4);
    return b && size(b[0] | (b[1] << 8), b[2] | (b[3] << 8));
  }
  if (matches(read, 0, RIFF) && matches(read, 8, WEBP)) return webpSize(read);
  return undefined;
}

/** A `data:` URL split into its media type and where its base64 starts. */
export interface DataUrl {
  /** The media type, lower case (`image/png`); empty when the URL names none. */
  mediaType: string;
  /** Whether the payload is base64 (`;base64`). */
  base64: boolean;
  /** Index in the URL where the payload starts. */
  start: number;
}

/**
 * Splits a `data:` URL without copying its payload.
 *
 * @example
 * ```ts
 * import { parseDataUrl } from "./image_size.ts";
 * parseDataUrl("data:image/png;base64,iVBOR"); // { mediaType: "image/png", base64: true, start: 22 }
 * ```
 *
 * @param url The URL.
 * @returns Its parts, or `undefined` for anything but a `data:` URL.
 */
export function parseDataUrl(url: string): DataUrl | undefined {
  if (!url.startsWith("data:")) return undefined;
  // The header is short; a comma past 256 characters is not a header's.
  const comma = url.indexOf(",", 5);
  if (comma < 0 || comma > 256) return undefined;
  const header = url.slice(5, comma).toLowerCase();
  const parts = header.split(";");
  return {
    mediaType: parts[0].trim(),
    base64: parts.includes("base64"),
    start: comma + 1,
  };
}

/**
 * Bytes a base64 payload decodes to, from its length alone.
 *
 * @example
 * ```ts
 * import { base64Bytes } from "./image_size.ts";
 * base64Bytes("aGVsbG8=", 0); // 5
 * ```
 *
 * @param data The text holding the payload.
 * @param start Where the payload starts.
 * @returns The decoded length (an upper bound when the text is not clean base64).
 */
export function base64Bytes(data: string, start = 0): number {
  const length = data.length - start;
  let padding = 0;
  if (data.endsWith("==")) padding = 2;
  else if (data.endsWith("=")) padding = 1;
  return Math.max(0, Math.floor((length * 3) / 4) - padding);
}

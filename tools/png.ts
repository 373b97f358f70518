/**
 * A small PNG encoder (8-bit RGB, zlib through `CompressionStream`) and a
 * reader of a PNG's pixel size, for in-process screenshots and checks.
 *
 * @module
 */

/** Width and height in pixels. */
export interface Size {
  /** Pixels across. */
  width: number;
  /** Pixels down. */
  height: number;
}

/** An RGB colour, each channel 0–255. */
export type Rgb = readonly [number, number, number];

/** The eight bytes every PNG file starts with. */
export const PNG_SIGNATURE: Uint8Array = new Uint8Array([
  137,
  80,
  78,
  71,
  13,
  10,
  26,
  10,
]);
const MAX_SIDE = 16_384;

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = CRC_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/**
 * One PNG chunk: length, type, data and CRC.
 *
 * @param type The four-letter chunk type, e.g. `"IHDR"`.
 * @param data The chunk's data.
 * @returns The chunk's bytes.
 */
export function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  out.set(new TextEncoder().encode(type), 4);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

async function deflate(data: Uint8Array): Promise<Uint8Array> {
  // "deflate" is the zlib format (RFC 1950) that PNG's IDAT holds.
  const stream = new Blob([data as Uint8Array<ArrayBuffer>]).stream()
    .pipeThrough(new CompressionStream("deflate"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function checkSize({ width, height }: Size): void {
  for (const [name, value] of [["width", width], ["height", height]] as const) {
    if (!Number.isInteger(value) || value < 1 || value > MAX_SIDE) {
      throw new RangeError(
        `Cannot encode a PNG with ${name} ${value}: expected an integer from 1 to ${MAX_SIDE}`,
      );
    }
  }
}

/**
 * Encodes an image as an 8-bit RGB PNG. `pixel(x, y)` gives each pixel's
 * colour; without it the image is one `fill` colour.
 *
 * @param size The image's width and height (1 to 16 384 each).
 * @param options `fill` (default white) or a `pixel` function.
 * @returns The PNG file's bytes.
 * @example A 4×2 red image
 * ```ts
 * import { encodePng, pngSize } from "./png.ts";
 * const png = await encodePng({ width: 4, height: 2 }, { fill: [255, 0, 0] });
 * pngSize(png); // { width: 4, height: 2 }
 * ```
 */
export async function encodePng(
  size: Size,
  options: { fill?: Rgb; pixel?: (x: number, y: number) => Rgb } = {},
): Promise<Uint8Array> {
  checkSize(size);
  const { width, height } = size;
  const { fill = [255, 255, 255], pixel } = options;
  const stride = 1 + width * 3;
  const raw = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const row = y * stride; // filter byte 0 (None) starts each row
    for (let x = 0; x < width; x++) {
      const [r, g, b] = pixel ? pixel(x, y) : fill;
      const at = row + 1 + x * 3;
      raw[at] = r;
      raw[at + 1] = g;
      raw[at + 2] = b;
    }
  }
  const header = new Uint8Array(13);
  const view = new DataView(header.buffer);
  view.setUint32(0, width);
  view.setUint32(4, height);
  header.set([8, 2, 0, 0, 0], 8); // 8 bits, RGB, deflate, adaptive filters, no interlace
  const parts = [
    PNG_SIGNATURE,
    pngChunk("IHDR", header),
    pngChunk("IDAT", await deflate(raw)),
    pngChunk("IEND", new Uint8Array()),
  ];
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/**
 * Reads a PNG's pixel size from its header.
 *
 * @param bytes The PNG file, or at least its first 24 bytes.
 * @returns The width and height, or `undefined` when the bytes are not a PNG.
 * @example
 * ```ts
 * import { encodePng, pngSize } from "./png.ts";
 * pngSize(await encodePng({ width: 3, height: 5 })); // { width: 3, height: 5 }
 * pngSize(new Uint8Array([1, 2, 3])); // undefined
 * ```
 */
export function pngSize(bytes: Uint8Array): Size | undefined {
  if (bytes.length < 24) return undefined;
  if (!PNG_SIGNATURE.every((byte, i) => bytes[i] === byte)) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (String.fromCharCode(...bytes.subarray(12, 16)) !== "IHDR") {
    return undefined;
  }
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

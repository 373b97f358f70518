import assert from "node:assert/strict";
import { encodePng, pngSize } from "./png.ts";

async function inflate(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream()
    .pipeThrough(new DecompressionStream("deflate"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** The chunks of a PNG: type and data. */
function chunks(png: Uint8Array): { type: string; data: Uint8Array }[] {
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  const found = [];
  for (let at = 8; at < png.length;) {
    const length = view.getUint32(at);
    const type = String.fromCharCode(...png.subarray(at + 4, at + 8));
    found.push({ type, data: png.subarray(at + 8, at + 8 + length) });
    at += 12 + length;
  }
  return found;
}

Deno.test("encodePng() writes IHDR, zlib IDAT rows and IEND that decode to the pixels", async () => {
  const png = await encodePng({ width: 3, height: 2 }, {
    pixel: (x, y) => [x * 10, y * 20, 7],
  });
  assert.deepEqual(pngSize(png), { width: 3, height: 2 });
  const parts = chunks(png);
  assert.deepEqual(parts.map((part) => part.type), ["IHDR", "IDAT", "IEND"]);
  assert.deepEqual([...parts[0].data.subarray(8)], [8, 2, 0, 0, 0]);
  const raw = await inflate(parts[1].data);
  assert.deepEqual([...raw], [
    0,
    0,
    0,
    7,
    10,
    0,
    7,
    20,
    0,
    7,
    0,
    0,
    20,
    7,
    10,
    20,
    7,
    20,
    20,
    7,
  ]);
});

Deno.test("encodePng() checksums every chunk with CRC-32", async () => {
  const png = await encodePng({ width: 1, height: 1 });
  // The IEND chunk's CRC is a well-known constant: AE 42 60 82.
  assert.deepEqual([...png.subarray(-4)], [0xae, 0x42, 0x60, 0x82]);
});

Deno.test("encodePng() handles a full-HD screen", async () => {
  const png = await encodePng({ width: 1920, height: 1080 }, {
    fill: [1, 2, 3],
  });
  assert.deepEqual(pngSize(png), { width: 1920, height: 1080 });
  assert.ok(
    png.length < 100_000,
    `a one-colour screen compresses: ${png.length}`,
  );
});

Deno.test("encodePng() refuses sizes that are not positive integers", async () => {
  await assert.rejects(
    () => encodePng({ width: 0, height: 5 }),
    /width 0: expected an integer from 1 to 16384/,
  );
  await assert.rejects(
    () => encodePng({ width: 2.5, height: 5 }),
    RangeError,
  );
});

Deno.test("pngSize() answers undefined for bytes that are not a PNG", () => {
  assert.equal(pngSize(new Uint8Array(30)), undefined);
  assert.equal(pngSize(new TextEncoder().encode("GIF89a")), undefined);
});

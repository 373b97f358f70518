import assert from "node:assert/strict";
import { encodePng, pngHeader, toBase64 } from "../../tests/fixtures/png.ts";
import { imageTokens as gatewayImageTokens } from "../call/images.ts";
import {
  IMAGE_TOKENS,
  imageSize,
  imageSizeFromBase64,
  imageSizeFromUrl,
  imageTokens,
} from "./image.ts";

function jpegHeader(width: number, height: number): Uint8Array {
  return new Uint8Array([
    0xff,
    0xd8, // SOI
    0xff,
    0xe0,
    0x00,
    0x10,
    0x4a,
    0x46,
    0x49,
    0x46,
    0x00,
    1,
    1,
    0,
    0,
    1,
    0,
    1,
    0,
    0, // APP0
    0xff,
    0xdb,
    0x00,
    0x04,
    0x00,
    0x00, // a short DQT to step over
    0xff,
    0xc2,
    0x00,
    0x11,
    0x08,
    height >> 8,
    height & 0xff,
    width >> 8,
    width & 0xff,
    3,
    1,
    0x22,
    0,
    2,
    0x11,
    1,
    3,
    0x11,
    1,
  ]);
}

function gifHeader(width: number, height: number): Uint8Array {
  return new Uint8Array([
    ...new TextEncoder().encode("GIF89a"),
    width & 0xff,
    width >> 8,
    height & 0xff,
    height >> 8,
    0,
    0,
    0,
  ]);
}

function webpHeader(width: number, height: number): Uint8Array {
  const bytes = new Uint8Array(30);
  bytes.set(new TextEncoder().encode("RIFF"), 0);
  bytes.set(new TextEncoder().encode("WEBPVP8X"), 8);
  bytes[16] = 10;
  const w = width - 1;
  const h = height - 1;
  bytes.set([
    w & 0xff,
    (w >> 8) & 0xff,
    w >> 16,
    h & 0xff,
    (h >> 8) & 0xff,
    h >> 16,
  ], 24);
  return bytes;
}

Deno.test("imageSize() reads PNG, JPEG, GIF and WebP headers", async () => {
  assert.deepEqual(imageSize(await encodePng(64, 40)), {
    width: 64,
    height: 40,
  });
  assert.deepEqual(imageSize(pngHeader(1920, 1080)), {
    width: 1920,
    height: 1080,
  });
  assert.deepEqual(imageSize(jpegHeader(1280, 800)), {
    width: 1280,
    height: 800,
  });
  assert.deepEqual(imageSize(gifHeader(300, 200)), { width: 300, height: 200 });
  assert.deepEqual(imageSize(webpHeader(4000, 3000)), {
    width: 4000,
    height: 3000,
  });
});

Deno.test("imageSize() gives undefined for bytes that are no image or claim absurd sizes", () => {
  assert.equal(imageSize(new Uint8Array()), undefined);
  assert.equal(
    imageSize(new TextEncoder().encode("hello world, not an image")),
    undefined,
  );
  assert.equal(imageSize(pngHeader(0, 10)), undefined);
  assert.equal(imageSize(pngHeader(2 ** 31, 10)), undefined);
  assert.equal(
    imageSize(new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0xff, 0xff])),
    undefined,
  );
});

Deno.test("imageSizeFromBase64() and imageSizeFromUrl() read only the header of a 1.5 MB screenshot", async () => {
  const png = await encodePng(1280, 800, 400);
  assert.ok(png.length > 1_000_000);
  const base64 = toBase64(png);
  const started = performance.now();
  assert.deepEqual(imageSizeFromBase64(base64), { width: 1280, height: 800 });
  assert.deepEqual(imageSizeFromUrl(`data:image/png;base64,${base64}`), {
    width: 1280,
    height: 800,
  });
  assert.ok(performance.now() - started < 500);
  assert.equal(imageSizeFromUrl("https://example.com/a.png"), undefined);
  assert.equal(imageSizeFromUrl("data:image/png,notbase64"), undefined);
  assert.equal(imageSizeFromBase64("%%%not base64%%%"), undefined);
  assert.equal(imageSizeFromBase64(42), undefined);
  assert.deepEqual(
    imageSizeFromBase64(toBase64(pngHeader(10, 20)).replaceAll("+", "-")),
    { width: 10, height: 20 },
  );
});

Deno.test("imageSizeFromBase64() finds a JPEG frame header behind a 40 KB EXIF block", () => {
  const exif = new Uint8Array(40_004);
  exif.set([0xff, 0xe1, 40_002 >> 8, 40_002 & 0xff]);
  const header = jpegHeader(1024, 768);
  const jpeg = new Uint8Array([
    ...header.subarray(0, 2),
    ...exif,
    ...header.subarray(2),
  ]);
  assert.deepEqual(imageSizeFromBase64(toBase64(jpeg)), {
    width: 1024,
    height: 768,
  });
});

Deno.test("imageTokens() bills each provider's rule", () => {
  const screen = { width: 1280, height: 800 };
  assert.equal(imageTokens(screen, "anthropic"), 1366);
  assert.equal(imageTokens(screen, "openai"), 1105);
  assert.equal(imageTokens(screen, "openai", "low"), 85);
  assert.equal(imageTokens(screen, "gemini"), 1032);
  const small = { width: 200, height: 100 };
  assert.equal(imageTokens(small, "anthropic"), 27);
  assert.equal(imageTokens(small, "openai"), 255);
  assert.equal(imageTokens(small, "gemini"), 258);
  const full = { width: 1920, height: 1080 };
  assert.equal(imageTokens(full, "openai"), 1105);
  assert.equal(imageTokens(full, "gemini"), 1548);
  // Past the long edge and the ~1600-token budget Anthropic scales down first.
  const big = imageTokens(full, "anthropic");
  assert.ok(big > 1500 && big <= 1600, `${big}`);
  assert.equal(
    imageTokens({ width: 8000, height: 8000 }, "anthropic") <= 1600,
    true,
  );
  for (const billing of ["anthropic", "openai", "gemini"] as const) {
    assert.equal(imageTokens(undefined, billing), IMAGE_TOKENS);
  }
});

Deno.test("imageTokens() bills OpenAI sizes rounded up, never above the gateway's hold", () => {
  // Rounded up: 1036 × 2073 fits to 1024 × 2048, then 768 × 1536, 6 tiles
  // (truncating would give 8, which the gateway's hold covers).
  assert.equal(
    imageTokens({ width: 1036, height: 2073 }, "openai"),
    85 + 170 * 6,
  );
  let seed = 7;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  for (let i = 0; i < 2_000; i++) {
    const size = {
      width: 1 + Math.floor(random() * 9_000),
      height: 1 + Math.floor(random() * 9_000),
    };
    const billed = imageTokens(size, "openai");
    const held = gatewayImageTokens(
      { provider: "openai", upstream: "gpt-4o" },
      size,
    );
    assert.ok(
      billed <= held,
      `${size.width} × ${size.height}: ${billed} > ${held}`,
    );
  }
});

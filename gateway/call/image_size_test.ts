import assert from "node:assert/strict";
import { encodePng, pngHeader, toBase64 } from "../../tests/fixtures/png.ts";
import {
  base64Bytes,
  base64Reader,
  bytesReader,
  imageSize,
  parseDataUrl,
} from "./image_size.ts";

const HAS_CONVERT = (() => {
  try {
    return new Deno.Command("convert", { args: ["-version"], stdout: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
})();
if (!HAS_CONVERT) {
  console.log(
    "image_size_test: ImageMagick `convert` not found; JPEG/GIF/WebP sizing tests skipped",
  );
}

Deno.test("imageSize() reads a real PNG's size from a few decoded bytes of its base64", async () => {
  const png = await encodePng(1280, 800, 10);
  const base64 = toBase64(png);
  let decoded = 0;
  const reader = base64Reader(base64);
  const counting = (offset: number, count: number) => {
    decoded += count;
    return reader(offset, count);
  };
  assert.deepEqual(imageSize(counting), { width: 1280, height: 800 });
  assert.ok(decoded < 64, `${decoded} bytes decoded`);
  assert.deepEqual(imageSize(bytesReader(png)), { width: 1280, height: 800 });
});

Deno.test(
  "imageSize() reads JPEG (past an EXIF block), GIF and WebP sizes made by ImageMagick",
  {
    ignore: !HAS_CONVERT,
  },
  () => {
    const cases: [string, string[], number, number][] = [
      ["jpg", ["-quality", "80"], 1920, 1080],
      ["jpg", ["-interlace", "Plane"], 333, 777],
      ["gif", [], 640, 480],
      ["webp", ["-quality", "50"], 1366, 768],
      ["webp", ["-define", "webp:lossless=true"], 301, 203],
    ];
    for (const [format, options, width, height] of cases) {
      const output = new Deno.Command("convert", {
        args: [
          "-size",
          `${width}x${height}`,
          "plasma:",
          ...options,
          `${format}:-`,
        ],
        stdout: "piped",
        stderr: "null",
      }).outputSync();
      assert.ok(output.success, format);
      const base64 = toBase64(output.stdout);
      assert.deepEqual(
        imageSize(base64Reader(base64)),
        { width, height },
        `${format} ${options}`,
      );
    }
    // A JPEG whose frame header lies after a 60 kB APP1 segment.
    const jpeg = new Deno.Command("convert", {
      args: ["-size", "640x360", "xc:gray", "jpg:-"],
      stdout: "piped",
    }).outputSync().stdout;
    const app1 = new Uint8Array(4 + 60_000);
    app1.set([0xff, 0xe1, (60_002 >> 8) & 0xff, 60_002 & 0xff]);
    const padded = new Uint8Array(jpeg.length + app1.length);
    padded.set(jpeg.subarray(0, 2));
    padded.set(app1, 2);
    padded.set(jpeg.subarray(2), 2 + app1.length);
    assert.deepEqual(imageSize(base64Reader(toBase64(padded))), {
      width: 640,
      height: 360,
    });
  },
);

Deno.test("imageSize() answers undefined for text, truncated headers and broken base64", () => {
  assert.equal(
    imageSize(base64Reader(btoa("just some text, not an image"))),
    undefined,
  );
  assert.equal(
    imageSize(base64Reader(toBase64(pngHeader(10, 10)).slice(0, 16))),
    undefined,
  );
  assert.equal(imageSize(base64Reader("!!!!not base64!!!!")), undefined);
  assert.equal(
    imageSize(bytesReader(new Uint8Array([0xff, 0xd8, 0xff, 0xd9]))),
    undefined,
  );
  assert.equal(imageSize(bytesReader(pngHeader(0, 10))), undefined);
});

Deno.test("base64Reader() reads the URL-safe alphabet and a data URL's payload in place", () => {
  const url = `data:image/png;base64,${toBase64(pngHeader(77, 55))}`;
  const data = parseDataUrl(url)!;
  assert.deepEqual(data, { mediaType: "image/png", base64: true, start: 22 });
  assert.deepEqual(imageSize(base64Reader(url, data.start)), {
    width: 77,
    height: 55,
  });
  const urlSafe = toBase64(pngHeader(4000, 3000)).replaceAll("+", "-")
    .replaceAll("/", "_");
  assert.deepEqual(imageSize(base64Reader(urlSafe)), {
    width: 4000,
    height: 3000,
  });
  assert.equal(parseDataUrl("https://example.com/a.png"), undefined);
  assert.deepEqual(parseDataUrl("data:text/plain,hello"), {
    mediaType: "text/plain",
    base64: false,
    start: 16,
  });
  assert.equal(base64Bytes(btoa("hello")), 5);
  assert.equal(base64Bytes(url, data.start), pngHeader(77, 55).length);
});

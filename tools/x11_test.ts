import assert from "node:assert/strict";
import { encodePng, pngSize } from "./png.ts";
import { startXvfb, X11Executor } from "./x11.ts";

function installed(program: string): boolean {
  try {
    return new Deno.Command("which", {
      args: [program],
      stdout: "null",
      stderr: "null",
    })
      .outputSync().success;
  } catch {
    return false;
  }
}

const missing = ["Xvfb", "xdotool", "import"].filter((p) => !installed(p));
if (missing.length > 0) {
  console.log(
    `tools/x11_test.ts: skipped, ${
      missing.join(", ")
    } not installed (apt-get install xvfb xdotool imagemagick)`,
  );
}

Deno.test({
  name:
    "startXvfb() picks free display numbers, so two servers run side by side, and close() stops them",
  ignore: missing.length > 0,
  async fn() {
    const a = await startXvfb({ width: 640, height: 480 });
    const b = await startXvfb({ width: 800, height: 600 });
    try {
      assert.notEqual(a.display, b.display);
      assert.deepEqual(
        await new X11Executor({ display: a.display }).screenSize(),
        {
          width: 640,
          height: 480,
        },
      );
      assert.deepEqual(
        await new X11Executor({ display: b.display }).screenSize(),
        {
          width: 800,
          height: 600,
        },
      );
    } finally {
      await a.close();
      await b.close();
      await a.close();
    }
    await assert.rejects(
      () =>
        new X11Executor({ display: a.display, timeoutMs: 5_000 }).move({
          x: 1,
          y: 1,
        }),
      /"xdotool mousemove" failed/,
    );
  },
});

Deno.test({
  name:
    "X11Executor moves, clicks, drags and scrolls the real pointer, and screenshots at any size",
  ignore: missing.length > 0,
  async fn() {
    await using xvfb = await startXvfb({ width: 1024, height: 768 });
    const screen = new X11Executor({ display: xvfb.display });
    await screen.move({ x: 100, y: 200 });
    assert.deepEqual(await screen.cursorPosition(), { x: 100, y: 200 });
    await screen.click({ x: 500, y: 300 }, "left", 2);
    assert.deepEqual(await screen.cursorPosition(), { x: 500, y: 300 });
    await screen.drag([{ x: 10, y: 10 }, { x: 20, y: 30 }, {
      x: 1000,
      y: 700,
    }]);
    assert.deepEqual(await screen.cursorPosition(), { x: 1000, y: 700 });
    await screen.scroll({ x: 7, y: 8 }, 1, -2);
    assert.deepEqual(await screen.cursorPosition(), { x: 7, y: 8 });
    await screen.type("-x");
    await screen.key(["ctrl", "a"]);
    await screen.holdKey(["shift"], 50);
    await screen.keysDown(["ctrl", "shift"]);
    await screen.click({ x: 5, y: 5 }, "left", 1);
    await screen.keysUp(["ctrl", "shift"]);
    assert.deepEqual(
      pngSize(await screen.screenshot({ width: 1024, height: 768 })),
      { width: 1024, height: 768 },
    );
    assert.deepEqual(
      pngSize(await screen.screenshot({ width: 1920, height: 1080 })),
      { width: 1920, height: 1080 },
    );
    assert.deepEqual(
      pngSize(await screen.screenshot({ width: 333, height: 222 })),
      { width: 333, height: 222 },
    );
  },
});

Deno.test("X11Executor needs a display", () => {
  const saved = Deno.env.get("DISPLAY");
  Deno.env.delete("DISPLAY");
  try {
    assert.throws(
      () => new X11Executor(),
      /no display given and DISPLAY is not set/,
    );
  } finally {
    if (saved !== undefined) Deno.env.set("DISPLAY", saved);
  }
});

/** The colour of a PNG's pixel, as ImageMagick names it. */
async function pixelOf(png: Uint8Array, x: number, y: number): Promise<string> {
  const child = new Deno.Command("convert", {
    args: ["png:-", "-format", `%[pixel:p{${x},${y}}]`, "info:"],
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(png);
  await writer.close();
  return new TextDecoder().decode((await child.output()).stdout).trim();
}

Deno.test({
  name:
    "X11Executor screenshotRegion crops the real screen to the region and scales it to the size asked for",
  ignore: missing.length > 0 || !installed("display") ||
    !installed("convert"),
  async fn() {
    await using xvfb = await startXvfb({ width: 640, height: 400 });
    // The root window shows red on the left half, blue on the right.
    const dir = await Deno.makeTempDir({ prefix: "mcpkit-x11-zoom-" });
    try {
      const file = `${dir}/halves.png`;
      await Deno.writeFile(
        file,
        await encodePng({ width: 640, height: 400 }, {
          pixel: (x) => x < 320 ? [255, 0, 0] : [0, 0, 255],
        }),
      );
      // `display -window root` paints and exits with 1 (it has no window of its own to wait on).
      await new Deno.Command("display", {
        args: ["-window", "root", file],
        env: { DISPLAY: xvfb.display },
        stdout: "null",
        stderr: "null",
      }).output();
      const screen = new X11Executor({ display: xvfb.display });
      const right = await screen.screenshotRegion(
        { x: 400, y: 100, width: 200, height: 100 },
        { width: 640, height: 320 },
      );
      assert.deepEqual(pngSize(right), { width: 640, height: 320 });
      assert.match(await pixelOf(right, 0, 0), /\(0,0,255\)/);
      assert.match(await pixelOf(right, 639, 319), /\(0,0,255\)/);
      const left = await screen.screenshotRegion(
        { x: 0, y: 0, width: 100, height: 100 },
        { width: 400, height: 400 },
      );
      assert.match(await pixelOf(left, 399, 399), /\(255,0,0\)/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

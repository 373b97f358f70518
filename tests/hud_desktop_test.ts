/**
 * The computer-use example served over HUD v6's control channel
 * (`examples/desktop/main.ts hud`): `hello` advertises `tools` (mcp),
 * `screen` (rfb: x11vnc on the Xvfb display) and `browser` (cdp: Chromium's
 * DevTools port), every daemon on loopback and reached only through
 * `tunnel.open` on the control port. A real VNC client (Debian's
 * `vncsnapshot`) takes a screenshot through the tunnel; Playwright's
 * `connectOverCDP` reads the page through it; our own RFB client
 * (`mcp/hud/rfb.ts`) takes the screen and types into the page through it;
 * the runner's HUD client sizes the environment's `computer` tool with its
 * `--display`, as over MCP.
 *
 * Skips, saying why, when Xvfb, xdotool, Chromium or x11vnc is missing; the
 * VNC test also when `vncsnapshot` is (`apt-get install vncsnapshot`).
 *
 * @module
 */
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { CapabilityForwarder, openTunnel } from "../mcp/hud/tunnel.ts";
import { RfbClient } from "../mcp/hud/rfb.ts";
import { RfbExecutor } from "../mcp/hud/rfb_executor.ts";
import { pngSize } from "../tools/mod.ts";
import { HudEnvironment } from "../eval/environments/hud_environment.ts";
import { missingDesktopPrograms } from "./_desktop.ts";
import { startHudServeProcess } from "./_example_process.ts";

const MAIN = new URL("../examples/desktop/main.ts", import.meta.url).pathname;

function installed(program: string): boolean {
  try {
    return new Deno.Command("which", {
      args: [program],
      stdout: "null",
      stderr: "null",
    }).outputSync().success;
  } catch {
    return false;
  }
}

const missing = missingDesktopPrograms("hud_desktop_test");
if (missing.length === 0 && !installed("x11vnc")) {
  console.log(
    "hud_desktop_test: skipped, x11vnc not installed (apt-get install x11vnc)",
  );
  missing.push("x11vnc");
}
const noSnapshot = !installed("vncsnapshot");
if (missing.length === 0 && noSnapshot) {
  console.log(
    "hud_desktop_test: the rfb test is skipped, vncsnapshot not installed (apt-get install vncsnapshot)",
  );
}

/** The desktop example serving the control channel on a free port. */
async function startHudDesktop() {
  const desktop = await startHudServeProcess(MAIN, "desktop", 60_000);
  return {
    port: desktop.port,
    stderr: desktop.stderr,
    [Symbol.asyncDispose]: async () => {
      const status = await desktop.stop();
      assert.equal(
        status.code,
        0,
        `the desktop stopped badly: ${desktop.stderr()}`,
      );
    },
  };
}

/** `hello` over a raw connection: the bindings. */
async function bindings(port: number) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(
      new TextEncoder().encode('{"jsonrpc":"2.0","id":1,"method":"hello"}\n'),
    );
    let text = "";
    const buffer = new Uint8Array(65536);
    while (!text.includes("\n")) {
      const n = await conn.read(buffer);
      if (n === null) break;
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
    return JSON.parse(text).result.bindings as {
      name: string;
      protocol: string;
      url: string;
      params: Record<string, unknown>;
    }[];
  } finally {
    conn.close();
  }
}

/** Width and height from a JPEG's start-of-frame marker. */
function jpegSize(bytes: Uint8Array): { width: number; height: number } {
  assert.ok(bytes[0] === 0xff && bytes[1] === 0xd8, "not a JPEG");
  let offset = 2;
  while (offset + 9 < bytes.length) {
    assert.equal(bytes[offset], 0xff, "bad JPEG marker");
    const marker = bytes[offset + 1];
    const length = (bytes[offset + 2] << 8) | bytes[offset + 3];
    if (marker >= 0xc0 && marker <= 0xc3) {
      return {
        height: (bytes[offset + 5] << 8) | bytes[offset + 6],
        width: (bytes[offset + 7] << 8) | bytes[offset + 8],
      };
    }
    offset += 2 + length;
  }
  throw new Error("no JPEG frame header");
}

Deno.test({
  name:
    "examples/desktop hud: hello advertises mcp, rfb and cdp on loopback; vncsnapshot takes a screenshot through the rfb tunnel",
  ignore: missing.length > 0 || noSnapshot,
}, async () => {
  await using desktop = await startHudDesktop();
  const advertised = await bindings(desktop.port);
  assert.deepEqual(
    advertised.map((b) => [b.name, b.protocol]),
    [["tools", "mcp/2025-11-25"], ["screen", "rfb/3.8"], [
      "browser",
      "cdp/1.3",
    ]],
  );
  for (const binding of advertised) {
    assert.match(
      binding.url,
      /^\w+:\/\/127\.0\.0\.1:\d+/,
      `${binding.name} is on loopback`,
    );
  }
  const forwarder = CapabilityForwarder.start({
    hostname: "127.0.0.1",
    port: desktop.port,
  }, "screen");
  const dir = await Deno.makeTempDir({ prefix: "hud-vnc-" });
  try {
    const shot = `${dir}/screen.jpg`;
    const output = await new Deno.Command("vncsnapshot", {
      args: ["-quiet", `127.0.0.1::${forwarder.port}`, shot],
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(30_000),
    }).output();
    assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
    const bytes = await Deno.readFile(shot);
    assert.deepEqual(jpegSize(bytes), { width: 1280, height: 800 });
    // The page is on screen: a blank 1280x800 JPEG is a few KiB.
    assert.ok(
      bytes.length > 20_000,
      `a ${bytes.length}-byte screenshot looks blank`,
    );
  } finally {
    await forwarder.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "examples/desktop hud: Playwright's connectOverCDP reads the page through the cdp tunnel",
  ignore: missing.length > 0,
}, async () => {
  await using desktop = await startHudDesktop();
  const forwarder = CapabilityForwarder.start({
    hostname: "127.0.0.1",
    port: desktop.port,
  }, "cdp");
  try {
    const browser = await chromium.connectOverCDP(
      `http://127.0.0.1:${forwarder.port}`,
      {
        timeout: 20_000,
      },
    );
    try {
      const pages = browser.contexts().flatMap((context) => context.pages());
      assert.ok(pages.length > 0, "Chromium shows a page");
      const text = await pages[0].innerText("body");
      assert.match(text, /Guest book/);
    } finally {
      await browser.close();
    }
  } finally {
    await forwarder.close();
  }
});

Deno.test({
  name:
    "examples/desktop hud: our RFB client takes the screen and types into the page through the rfb tunnel (checked over cdp)",
  ignore: missing.length > 0,
}, async () => {
  await using desktop = await startHudDesktop();
  const control = { hostname: "127.0.0.1", port: desktop.port };
  const tunnel = await openTunnel(control, "rfb");
  const rfb = await RfbClient.connect(tunnel.conn, tunnel.early);
  const forwarder = CapabilityForwarder.start(control, "cdp");
  try {
    assert.deepEqual([rfb.width, rfb.height], [1280, 800]);
    const screen = new RfbExecutor(rfb);
    const png = await screen.screenshot({ width: 640, height: 400 });
    assert.deepEqual(pngSize(png), { width: 640, height: 400 });
    const colours = new Set<number>();
    for (let i = 0; i < rfb.pixels.length; i += 4 * 997) {
      colours.add(
        (rfb.pixels[i] << 16) | (rfb.pixels[i + 1] << 8) | rfb.pixels[i + 2],
      );
    }
    assert.ok(colours.size > 3, "the screen shows the page, not one colour");

    const browser = await chromium.connectOverCDP(
      `http://127.0.0.1:${forwarder.port}`,
      {
        timeout: 20_000,
      },
    );
    try {
      const page = browser.contexts().flatMap((context) => context.pages())[0];
      const box = await page.locator("input").first().boundingBox();
      assert.ok(box, "the page has an input");
      await screen.click(
        { x: box.x + box.width / 2, y: box.y + box.height / 2 },
        "left",
        1,
      );
      await screen.type("lantern");
      let value = "";
      for (let i = 0; i < 50 && value !== "lantern"; i++) {
        value = await page.locator("input").first().inputValue();
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(value, "lantern");
    } finally {
      await browser.close();
    }
  } finally {
    rfb.close();
    await forwarder.close();
  }
});

Deno.test({
  name:
    "examples/desktop hud: with --display 1024x640 the environment's computer tool answers 1024x640 screenshots and a click lands where the model aimed",
  ignore: missing.length > 0,
}, async () => {
  await using desktop = await startHudDesktop();
  const control = { hostname: "127.0.0.1", port: desktop.port };
  const env = await HudEnvironment.open(`127.0.0.1:${desktop.port}`, {
    display: { width: 1024, height: 640 },
  });
  const forwarder = CapabilityForwarder.start(control, "cdp");
  try {
    const shot = await env.callTool("computer", { action: "screenshot" });
    assert.equal(shot.isError, false, shot.text);
    const png = Uint8Array.from(
      atob(shot.images[0].data),
      (c) => c.charCodeAt(0),
    );
    assert.deepEqual(pngSize(png), { width: 1024, height: 640 });
    const browser = await chromium.connectOverCDP(
      `http://127.0.0.1:${forwarder.port}`,
      { timeout: 20_000 },
    );
    try {
      const page = browser.contexts().flatMap((context) => context.pages())[0];
      const box = await page.locator("input").first().boundingBox();
      assert.ok(box, "the page has an input");
      // The model, told the screen is 1024x640, aims at the box's centre
      // in that screen's pixels (the real screen is 1280x800).
      const aim = {
        x: Math.round((box.x + box.width / 2) * 1024 / 1280),
        y: Math.round((box.y + box.height / 2) * 640 / 800),
      };
      const click = await env.callTool("computer", { action: "click", ...aim });
      assert.equal(click.isError, false, click.text);
      await env.callTool("computer", { action: "type", text: "kestrel" });
      let value = "";
      for (let i = 0; i < 50 && value !== "kestrel"; i++) {
        value = await page.locator("input").first().inputValue();
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(value, "kestrel", "the click focused the box it aimed at");
    } finally {
      await browser.close();
    }
  } finally {
    await forwarder.close();
    await env.close();
  }
});

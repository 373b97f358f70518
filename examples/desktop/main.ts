/**
 * Runs the desktop environment:
 * `deno run -A examples/desktop/main.ts [stdio|http|sse|hud] [port]`
 * (default stdio; port default `MCP_PORT` or 8765, host `MCP_HOST` or 127.0.0.1).
 * `hud` serves HUD v6's control channel: the tools as the `mcp` capability,
 * the screen as `rfb` (x11vnc on the Xvfb display) and the browser as `cdp`
 * (Chromium's DevTools port), all on loopback, reached through the one port.
 *
 * `DESKTOP_SCREEN` sets the real screen (default `1280x800`),
 * `DESKTOP_WORKSPACE` the directory of `bash` and `edit` (default: a new
 * temporary one, removed on exit), `CHROMIUM_PATH` the browser
 * (default `/usr/bin/chromium`). The desktop comes up before the server
 * answers; Chromium and Xvfb stop with the process (stdin closed, SIGTERM,
 * SIGINT).
 *
 * @module
 */
import { parseScreenSize, startDesktop } from "./desktop.ts";
import { createDesktopServer } from "./server.ts";
import { cdpCapability, rfbCapability } from "../../mcp/mod.ts";

function fail(message: string): never {
  console.error(`desktop: ${message}`);
  Deno.exit(1);
}

const hud = Deno.args[0] === "hud";
let size;
try {
  size = parseScreenSize(Deno.env.get("DESKTOP_SCREEN") ?? "1280x800");
} catch (error) {
  fail((error as Error).message);
}
let desktop;
try {
  desktop = await startDesktop({ size, vnc: hud, devtools: hud });
} catch (error) {
  fail(`cannot start the desktop: ${(error as Error).message}`);
}
const ownWorkspace = !Deno.env.get("DESKTOP_WORKSPACE");
const workspace = Deno.env.get("DESKTOP_WORKSPACE") ??
  await Deno.makeTempDir({ prefix: "desktop-workspace-" });
// Deno.exit (SIGINT, a SIGTERM whose hooks time out) skips `finally`:
// kill the browser and the X server synchronously then.
const started = desktop;
globalThis.addEventListener("unload", () => {
  started.killNow();
  if (ownWorkspace) {
    try {
      Deno.removeSync(workspace, { recursive: true });
    } catch {
      // removed already by the normal path
    }
  }
});

const { mcp, bash } = createDesktopServer({ desktop, workspace });
if (desktop.vncPort !== undefined) {
  mcp.addCapability(
    rfbCapability(`rfb://127.0.0.1:${desktop.vncPort}`, {
      display: Number(desktop.xvfb.display.replace(/^:/, "")),
    }),
  );
}
if (desktop.devtoolsPort !== undefined) {
  mcp.addCapability(cdpCapability(`http://127.0.0.1:${desktop.devtoolsPort}`));
}
try {
  await mcp.run({
    transport: Deno.args[0] ?? "stdio",
    port: Deno.args[1] === undefined ? undefined : Number(Deno.args[1]),
    // The agent drives Chromium on this host: no page it opens may call /mcp.
    refuseBrowsers: true,
  });
} finally {
  await bash.close();
  await desktop.close();
  if (ownWorkspace) await Deno.remove(workspace, { recursive: true });
}

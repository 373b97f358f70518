/**
 * The desktop the environment runs in: a virtual X screen (Xvfb), the page's
 * own server on loopback, and Chromium showing the page full screen. Every
 * piece picks free resources (display number, port, profile directory), so
 * several desktops run side by side, and {@linkcode Desktop.close} stops them
 * all.
 *
 * @module
 */
import { startXvfb, type Xvfb } from "../../tools/mod.ts";
import type { Size } from "../../tools/mod.ts";
import { type PageServer, startPageServer } from "./page_server.ts";

/** Options of {@linkcode startDesktop}. */
export interface DesktopOptions {
  /** The real screen's size (default 1280×800). */
  size?: Size;
  /** The Chromium binary (default `CHROMIUM_PATH` or `/usr/bin/chromium`). */
  chromium?: string;
  /** How long everything may take to come up (ms, default 45 000). */
  timeoutMs?: number;
  /** Also serve the screen over VNC: x11vnc on the display, loopback only (for HUD's `rfb` capability). */
  vnc?: boolean;
  /** Open Chromium's DevTools port on loopback (for HUD's `cdp` capability). */
  devtools?: boolean;
}

/** A running desktop. */
export interface Desktop extends AsyncDisposable {
  /** The X server. */
  xvfb: Xvfb;
  /** The page's server. */
  page: PageServer;
  /** Chromium's process id (the leader of its process group). */
  chromiumPid: number;
  /** x11vnc's loopback port, when started with `vnc`. */
  vncPort?: number;
  /** Chromium's DevTools loopback port, when started with `devtools`. */
  devtoolsPort?: number;
  /** Whether Chromium still runs (an agent may have closed it). */
  readonly chromiumRunning: boolean;
  /** Settles once Chromium's process has ended (an agent may close it at any time). */
  readonly chromiumEnded: Promise<void>;
  /** Stops Chromium, the page's server and Xvfb. Safe to call more than once. */
  close(): Promise<void>;
  /** Kills Chromium and Xvfb at once and removes the browser profile, synchronously (for `unload`); nothing once `close()` finished. */
  killNow(): void;
}

/**
 * Reads a screen size such as `1280x800`.
 *
 * @param text The size, `WxH`.
 * @returns The size.
 * @throws {RangeError} When it is not two integers from 16 to 8192.
 */
export function parseScreenSize(text: string): Size {
  const match = /^\s*(\d+)\s*[x×]\s*(\d+)\s*$/i.exec(text);
  const width = Number(match?.[1]);
  const height = Number(match?.[2]);
  if (!match || width < 16 || height < 16 || width > 8192 || height > 8192) {
    throw new RangeError(
      `Cannot use screen size "${text}": expected WIDTHxHEIGHT, e.g. 1280x800`,
    );
  }
  return { width, height };
}

function killGroup(pid: number, signal: Deno.Signal): void {
  try {
    Deno.kill(-pid, signal);
  } catch {
    // the group is gone
  }
}

function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  what: string,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${what} did not happen within ${ms} ms`)),
        ms,
      );
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Starts Xvfb, the page's server and Chromium (kiosk, full screen, no
 * first-run UI, its own profile), and resolves once the page reported its
 * layout, full screen. On any failure everything started so far is stopped.
 *
 * @param options Size, Chromium binary and start time limit.
 * @returns The running desktop.
 * @throws {Error} When a piece is missing or does not come up in time.
 */
export async function startDesktop(
  options: DesktopOptions = {},
): Promise<Desktop> {
  const size = options.size ?? { width: 1280, height: 800 };
  const chromium = options.chromium ?? Deno.env.get("CHROMIUM_PATH") ??
    "/usr/bin/chromium";
  const timeoutMs = options.timeoutMs ?? 45_000;
  const deadline = Date.now() + timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());

  const stack = new AsyncDisposableStack();
  try {
    const xvfb = stack.use(
      await startXvfb({ ...size, timeoutMs: Math.min(left(), 15_000) }),
    );
    const page = stack.use(await startPageServer());
    const profile = await Deno.makeTempDir({ prefix: "desktop-chromium-" });
    stack.defer(() =>
      Deno.remove(profile, { recursive: true }).catch(() => {})
    );
    if (!(await Deno.stat(chromium).then((info) => info.isFile, () => false))) {
      throw new Error(
        `Cannot run Chromium: "${chromium}" does not exist (set CHROMIUM_PATH, or apt-get install chromium)`,
      );
    }
    let child: Deno.ChildProcess;
    try {
      // setsid: Chromium and its helpers in a process group of their own,
      // stopped together.
      child = new Deno.Command("setsid", {
        args: [
          chromium,
          "--no-sandbox",
          "--test-type",
          "--disable-gpu",
          "--disable-dev-shm-usage",
          "--no-first-run",
          "--no-default-browser-check",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
          "--disable-extensions",
          "--disable-translate",
          "--disable-features=Translate,MediaRouter,OptimizationHints",
          "--disable-session-crashed-bubble",
          "--noerrdialogs",
          "--password-store=basic",
          "--force-device-scale-factor=1",
          `--user-data-dir=${profile}`,
          // Port 0: Chromium picks one and writes it to DevToolsActivePort.
          ...(options.devtools
            ? [
              "--remote-debugging-address=127.0.0.1",
              "--remote-debugging-port=0",
            ]
            : []),
          "--window-position=0,0",
          // Without a window manager Chromium shrinks a window the size of
          // the screen by one pixel each way; one pixel more covers it.
          `--window-size=${size.width + 1},${size.height + 1}`,
          "--kiosk",
          page.url,
        ],
        env: { DISPLAY: xvfb.display },
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).spawn();
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) {
        throw new Error(
          `Cannot run Chromium: "${chromium}" or setsid is missing`,
        );
      }
      throw error;
    }
    const pid = child.pid;
    let running = true;
    const exited = child.status.then((status) => {
      running = false;
      throw new Error(
        `Chromium ("${chromium}") exited with code ${status.code} before the page was ready`,
      );
    });
    exited.catch(() => {});
    const chromiumEnded = exited.then(() => {}, () => {});
    stack.defer(async () => {
      killGroup(pid, "SIGTERM");
      const killer = setTimeout(() => killGroup(pid, "SIGKILL"), 2_000);
      await child.status;
      clearTimeout(killer);
      killGroup(pid, "SIGKILL"); // helpers that outlived the browser
    });

    // Ready: the page reported a layout that fills the screen (a window
    // manager-less kiosk window may report once before it is full size).
    while (true) {
      const layout = await Promise.race([
        withTimeout(page.layout(left()), left(), "The page's layout report"),
        exited,
      ]);
      if (
        layout.window.innerWidth >= size.width &&
        layout.window.innerHeight >= size.height
      ) break;
      if (Date.now() >= deadline) {
        throw new Error(
          `Chromium's window is ${layout.window.innerWidth}x${layout.window.innerHeight}, not the screen's ${size.width}x${size.height}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const devtoolsPort = options.devtools
      ? await devtoolsActivePort(profile, left())
      : undefined;
    const vncPort = options.vnc
      ? await startVnc(stack, xvfb.display, left())
      : undefined;

    const owned = stack.move();
    let closed: Promise<void> | undefined;
    let finished = false;
    const close = () =>
      closed ??= owned.disposeAsync().finally(() => finished = true);
    // Once close() finished, the process ids may belong to someone else.
    return {
      xvfb,
      page,
      chromiumPid: pid,
      vncPort,
      devtoolsPort,
      get chromiumRunning() {
        return running;
      },
      chromiumEnded,
      close,
      killNow: () => {
        if (finished) return;
        killGroup(pid, "SIGKILL");
        try {
          Deno.kill(xvfb.pid, "SIGKILL");
        } catch {
          // gone
        }
        // Killed helpers may still be writing for a moment: a few tries.
        const pause = new Int32Array(new SharedArrayBuffer(4));
        for (let attempt = 0; attempt < 10; attempt++) {
          try {
            Deno.removeSync(profile, { recursive: true });
            return;
          } catch (error) {
            if (error instanceof Deno.errors.NotFound) return;
            Atomics.wait(pause, 0, 0, 30);
          }
        }
      },
      [Symbol.asyncDispose]: close,
    };
  } catch (error) {
    await stack.disposeAsync();
    throw error;
  }
}

/** The port Chromium's DevTools listens on, from `DevToolsActivePort` in its profile. */
async function devtoolsActivePort(
  profile: string,
  timeoutMs: number,
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const text = await Deno.readTextFile(`${profile}/DevToolsActivePort`)
      .catch(() => "");
    const port = Number(text.split("\n")[0]);
    if (Number.isInteger(port) && port > 0) return port;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("Chromium did not open its DevTools port");
}

/**
 * Starts x11vnc on the display, bound to loopback, no password (only the
 * control port's tunnel reaches it), and waits until it accepts connections.
 */
async function startVnc(
  stack: AsyncDisposableStack,
  display: string,
  timeoutMs: number,
): Promise<number> {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command("x11vnc", {
      args: [
        "-display",
        display,
        "-rfbport",
        String(port),
        "-localhost",
        "-forever",
        "-shared",
        "-nopw",
        "-quiet",
      ],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Error("Cannot serve the screen over VNC: x11vnc is missing");
    }
    throw error;
  }
  stack.defer(async () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // exited
    }
    await child.status;
  });
  const deadline = Date.now() + Math.min(timeoutMs, 15_000);
  while (Date.now() < deadline) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return port;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`x11vnc did not listen on port ${port}`);
}

/**
 * A real X display: {@linkcode X11Executor} drives one with xdotool and takes
 * screenshots with ImageMagick's `import`; {@linkcode startXvfb} starts a
 * virtual one on a free display number. Every program runs as a subprocess
 * with an argument list (never a shell line) and a time limit.
 *
 * @module
 */
import type { Executor, MouseButton, Point, Region, Size } from "./executor.ts";

const BUTTONS: Record<MouseButton, string> = {
  left: "1",
  middle: "2",
  right: "3",
};

const INSTALL_HINT: Record<string, string> = {
  xdotool: "xdotool",
  import: "imagemagick",
  Xvfb: "xvfb",
};

/**
 * Runs a program to completion with a time limit.
 *
 * @returns Its standard output.
 * @throws {Error} When it is missing, fails or runs past the limit: one line naming it.
 */
async function runProgram(
  program: string,
  args: string[],
  options: { env?: Record<string, string>; timeoutMs: number },
): Promise<Uint8Array> {
  let output: Deno.CommandOutput | undefined;
  const signal = AbortSignal.timeout(options.timeoutMs);
  try {
    output = await new Deno.Command(program, {
      args,
      env: options.env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal,
    }).output();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Error(
        `Cannot run "${program}": it is not installed (Debian package ${
          INSTALL_HINT[program] ?? program
        })`,
      );
    }
    if (!signal.aborted) throw error;
  }
  if (signal.aborted) {
    throw new Error(
      `"${program} ${
        args[0] ?? ""
      }" did not finish within ${options.timeoutMs} ms`,
    );
  }
  if (!output?.success) {
    const reason = new TextDecoder().decode(output?.stderr).trim().split("\n")
      .at(-1);
    throw new Error(
      `"${program} ${args[0] ?? ""}" failed with exit code ${output?.code}${
        reason ? `: ${reason}` : ""
      }`,
    );
  }
  return output.stdout;
}

/** Options of {@linkcode X11Executor}. */
export interface X11ExecutorOptions {
  /** The X display, e.g. `":99"` (default: `DISPLAY`). */
  display?: string;
  /** Time limit of one xdotool or import run, beside typing and holds (ms, default 15 000). */
  timeoutMs?: number;
  /** Delay between typed keystrokes (ms, default 12, xdotool's default). */
  typeDelayMs?: number;
  /** Delay between the clicks of a double or triple click (ms, default 80). */
  clickDelayMs?: number;
}

/**
 * Drives an X display with xdotool (Debian `xdotool`) and screenshots it with
 * ImageMagick's `import -window root` (Debian `imagemagick`), resized to the
 * size asked for.
 *
 * @example
 * ```ts ignore
 * import { startXvfb, X11Executor } from "./x11.ts";
 * await using xvfb = await startXvfb({ width: 1280, height: 800 });
 * const screen = new X11Executor({ display: xvfb.display });
 * await screen.click({ x: 100, y: 100 }, "left", 1);
 * const png = await screen.screenshot({ width: 640, height: 400 });
 * ```
 */
export class X11Executor implements Executor {
  /** The X display this executor drives. */
  readonly display: string;
  readonly #timeoutMs: number;
  readonly #typeDelayMs: number;
  readonly #clickDelayMs: number;
  #size: Size | undefined;

  /**
   * Creates the executor; nothing runs until the first action.
   *
   * @param options Display, time limit and delays.
   */
  constructor(options: X11ExecutorOptions = {}) {
    const display = options.display ?? Deno.env.get("DISPLAY");
    if (!display) {
      throw new Error(
        "Cannot drive X11: no display given and DISPLAY is not set",
      );
    }
    this.display = display;
    this.#timeoutMs = options.timeoutMs ?? 15_000;
    this.#typeDelayMs = options.typeDelayMs ?? 12;
    this.#clickDelayMs = options.clickDelayMs ?? 80;
  }

  #run(program: string, args: string[], extraMs = 0): Promise<Uint8Array> {
    return runProgram(program, args, {
      env: { DISPLAY: this.display },
      timeoutMs: this.#timeoutMs + extraMs,
    });
  }

  #xdotool(args: string[], extraMs = 0): Promise<Uint8Array> {
    return this.#run("xdotool", args, extraMs);
  }

  /**
   * The display's size, from `xdotool getdisplaygeometry` (asked once).
   *
   * @returns Width and height.
   */
  async screenSize(): Promise<Size> {
    if (!this.#size) {
      const text = new TextDecoder().decode(
        await this.#xdotool(["getdisplaygeometry"]),
      );
      const [width, height] = text.trim().split(/\s+/).map(Number);
      if (!(width > 0 && height > 0)) {
        throw new Error(`Cannot read the display's size from "${text.trim()}"`);
      }
      this.#size = { width, height };
    }
    return { ...this.#size };
  }

  /** Moves the pointer and clicks `count` times. */
  async click(at: Point, button: MouseButton, count: number): Promise<void> {
    await this.#xdotool([
      "mousemove",
      String(at.x),
      String(at.y),
      "click",
      "--repeat",
      String(count),
      "--delay",
      String(this.#clickDelayMs),
      BUTTONS[button],
    ], count * this.#clickDelayMs);
  }

  /** Moves the pointer. */
  async move(to: Point): Promise<void> {
    await this.#xdotool(["mousemove", String(to.x), String(to.y)]);
  }

  /** Presses the left button at the first point, moves along the path, releases at the last. */
  async drag(path: readonly Point[]): Promise<void> {
    const [first, ...rest] = path;
    const args = [
      "mousemove",
      String(first.x),
      String(first.y),
      "mousedown",
      "1",
    ];
    for (const point of rest) {
      args.push("sleep", "0.05", "mousemove", String(point.x), String(point.y));
    }
    args.push("sleep", "0.05", "mouseup", "1");
    await this.#xdotool(args, rest.length * 100);
  }

  /** Wheel clicks: buttons 4/5 (up/down) and 6/7 (left/right). */
  async scroll(at: Point | undefined, dx: number, dy: number): Promise<void> {
    const args = at ? ["mousemove", String(at.x), String(at.y)] : [];
    if (dy !== 0) {
      args.push("click", "--repeat", String(Math.abs(dy)), dy > 0 ? "5" : "4");
    }
    if (dx !== 0) {
      args.push("click", "--repeat", String(Math.abs(dx)), dx > 0 ? "7" : "6");
    }
    if (args.length > 0) await this.#xdotool(args);
  }

  /** Types the text; `--` keeps text that starts with `-` from reading as an option. */
  async type(text: string): Promise<void> {
    await this.#xdotool(
      ["type", "--delay", String(this.#typeDelayMs), "--", text],
      text.length * (this.#typeDelayMs + 5),
    );
  }

  /** Presses a combination, e.g. `["ctrl", "a"]` → `xdotool key -- ctrl+a`. */
  async key(keys: readonly string[]): Promise<void> {
    await this.#xdotool(["key", "--", keys.join("+")]);
  }

  /** Presses the keys and keeps them down: `xdotool keydown -- ctrl+shift`. */
  async keysDown(keys: readonly string[]): Promise<void> {
    await this.#xdotool(["keydown", "--", keys.join("+")]);
  }

  /** Releases held keys: `xdotool keyup -- ctrl+shift`. */
  async keysUp(keys: readonly string[]): Promise<void> {
    await this.#xdotool(["keyup", "--", keys.join("+")]);
  }

  /** Holds the keys for `durationMs`, releasing them even when the wait fails. */
  async holdKey(keys: readonly string[], durationMs: number): Promise<void> {
    const combination = keys.join("+");
    await this.#xdotool(["keydown", "--", combination]);
    try {
      await new Promise((resolve) => setTimeout(resolve, durationMs));
    } finally {
      await this.#xdotool(["keyup", "--", combination]);
    }
  }

  /**
   * The pointer's position, from `xdotool getmouselocation --shell`.
   *
   * @returns The point.
   */
  async cursorPosition(): Promise<Point> {
    const text = new TextDecoder().decode(
      await this.#xdotool(["getmouselocation", "--shell"]),
    );
    const x = Number(/^X=(\d+)$/m.exec(text)?.[1]);
    const y = Number(/^Y=(\d+)$/m.exec(text)?.[1]);
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      throw new Error(
        `Cannot read the pointer's position from "${text.trim()}"`,
      );
    }
    return { x, y };
  }

  /**
   * A screenshot: `import -window root` as PNG, resized (exactly, `!`) to
   * `size` when it differs from the display's.
   *
   * @param size The picture's size.
   * @returns PNG bytes.
   */
  async screenshot(size: Size): Promise<Uint8Array> {
    const real = await this.screenSize();
    const resize = real.width === size.width && real.height === size.height
      ? []
      : ["-resize", `${size.width}x${size.height}!`];
    return await this.#run("import", [
      "-window",
      "root",
      ...resize,
      "-depth",
      "8",
      "png:-",
    ]);
  }

  /**
   * A region of the screen: `import -window root -crop`, resized (exactly)
   * to `size`.
   *
   * @param region The region, real pixels.
   * @param size The picture's size.
   * @returns PNG bytes.
   */
  async screenshotRegion(region: Region, size: Size): Promise<Uint8Array> {
    return await this.#run("import", [
      "-window",
      "root",
      "-crop",
      `${region.width}x${region.height}+${region.x}+${region.y}`,
      "+repage",
      "-resize",
      `${size.width}x${size.height}!`,
      "-depth",
      "8",
      "png:-",
    ]);
  }
}

/** Options of {@linkcode startXvfb}. */
export interface XvfbOptions {
  /** Screen width in pixels (default 1280). */
  width?: number;
  /** Screen height in pixels (default 800). */
  height?: number;
  /** Colour depth (default 24). */
  depth?: number;
  /** How long to wait for the server to be ready (ms, default 10 000). */
  timeoutMs?: number;
}

/** A running Xvfb. */
export interface Xvfb extends AsyncDisposable {
  /** Its display, e.g. `":3"`: set `DISPLAY` to it for programs that should draw there. */
  display: string;
  /** Its screen size. */
  size: Size;
  /** Its process id. */
  pid: number;
  /**
   * Stops the server (SIGTERM, SIGKILL after 2 s) and waits for it to exit.
   * Safe to call more than once.
   */
  close(): Promise<void>;
}

/**
 * Starts Xvfb on a display number it picks itself (`-displayfd`), so any
 * number of servers can run side by side, and resolves once it accepts
 * clients. `-noreset` keeps the pointer where it was when the last client
 * disconnects; `-nolisten tcp` keeps it off the network.
 *
 * @param options Size, depth and start time limit.
 * @returns The running server.
 * @throws {Error} When Xvfb is missing, exits, or is not ready in time.
 * @example
 * ```ts ignore
 * import { startXvfb } from "./x11.ts";
 * const xvfb = await startXvfb({ width: 1024, height: 768 });
 * console.log(xvfb.display); // e.g. ":0"
 * await xvfb.close();
 * ```
 */
export async function startXvfb(options: XvfbOptions = {}): Promise<Xvfb> {
  const { width = 1280, height = 800, depth = 24, timeoutMs = 10_000 } =
    options;
  for (const [name, value] of [["width", width], ["height", height]] as const) {
    if (!Number.isInteger(value) || value < 16 || value > 8192) {
      throw new RangeError(
        `Cannot start Xvfb with ${name} ${value}: expected an integer from 16 to 8192`,
      );
    }
  }
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command("Xvfb", {
      args: [
        "-displayfd",
        "1",
        "-screen",
        "0",
        `${width}x${height}x${depth}`,
        "-nolisten",
        "tcp",
        "-noreset",
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Error(
        'Cannot run "Xvfb": it is not installed (Debian package xvfb)',
      );
    }
    throw error;
  }
  let log = "";
  const drainStderr = (async () => {
    const decoder = new TextDecoder();
    for await (const bytes of child.stderr) {
      log = (log + decoder.decode(bytes, { stream: true })).slice(-2000);
    }
  })();
  let closed: Promise<void> | undefined;
  const close = () =>
    closed ??= (async () => {
      try {
        child.kill("SIGTERM");
      } catch {
        // already gone
      }
      const killer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch {
          // exited meanwhile
        }
      }, 2_000);
      await child.status;
      clearTimeout(killer);
      await drainStderr;
    })();
  // Xvfb writes the display number on the -displayfd descriptor once ready.
  const reader = child.stdout.getReader();
  const ready = (async () => {
    let text = "";
    const decoder = new TextDecoder();
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) {
        throw new Error(`Xvfb exited before it was ready: ${log.trim()}`);
      }
      text += decoder.decode(value, { stream: true });
    }
    return text.trim();
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`Xvfb was not ready within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    const number = await Promise.race([ready, timeout]);
    if (!/^\d+$/.test(number)) {
      throw new Error(`Xvfb reported a display number "${number}"`);
    }
    reader.releaseLock();
    child.stdout.cancel().catch(() => {});
    return {
      display: `:${number}`,
      size: { width, height },
      pid: child.pid,
      close,
      [Symbol.asyncDispose]: close,
    };
  } catch (error) {
    ready.catch(() => {});
    await close();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Process signals for container runs: SIGTERM runs the shutdown hooks once,
 * SIGINT does not, and neither does a `deno run --watch` reload.
 *
 * @module
 */

/** A function run on SIGTERM. */
export type ShutdownHook = () => void | Promise<void>;

/**
 * Runs the shutdown hooks in order, each error logged to stderr, the whole
 * run cut off after `timeoutMs`.
 *
 * @param hooks The hooks, in registration order.
 * @param timeoutMs How long the hooks may take together.
 * @param budgetMs The shutdown budget named in the log line when they do not
 * finish (the hooks may get less than all of it after draining calls).
 * @returns Whether the hooks finished in time.
 */
export async function runShutdownHooks(
  hooks: readonly ShutdownHook[],
  timeoutMs: number,
  budgetMs: number = timeoutMs,
): Promise<boolean> {
  const all = (async () => {
    for (const hook of hooks) {
      try {
        await hook();
      } catch (error) {
        console.error("Shutdown hook failed:", error);
      }
    }
    return true;
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  const finished = await Promise.race([all, timeout]);
  clearTimeout(timer);
  if (!finished) {
    console.error(
      `Shutdown hooks did not finish within ${budgetMs} ms; exiting anyway`,
    );
  }
  return finished;
}

/** What to do on each signal. */
export interface SignalHandlers {
  /** On SIGTERM (`docker stop`): run shutdown hooks, close, exit 0. */
  terminate(): Promise<void>;
  /** On SIGINT (Ctrl-C): close and exit without shutdown hooks. */
  interrupt(): Promise<void>;
}

/**
 * Installs SIGTERM and SIGINT listeners. Each handler runs at most once, and
 * a second signal while one runs is ignored, so hooks run exactly once.
 *
 * @param handlers What to do on each signal.
 * @returns A function that removes the listeners.
 */
export function installSignalHandlers(handlers: SignalHandlers): () => void {
  let handling = false;
  const once = (handler: () => Promise<void>) => () => {
    if (handling) return;
    handling = true;
    handler().catch((error) => console.error("Signal handling failed:", error));
  };
  const onTerm = once(() => handlers.terminate());
  const onInt = once(() => handlers.interrupt());
  const installed: Array<[Deno.Signal, () => void]> = [];
  for (
    const [signal, listener] of [["SIGTERM", onTerm], [
      "SIGINT",
      onInt,
    ]] as const
  ) {
    try {
      Deno.addSignalListener(signal, listener);
      installed.push([signal, listener]);
    } catch {
      // SIGTERM cannot be listened to on Windows; the other signal still works.
    }
  }
  return () => {
    for (const [signal, listener] of installed) {
      Deno.removeSignalListener(signal, listener);
    }
  };
}

/** How recent a source change must be for a SIGTERM to count as a `--watch` reload, ms. */
const RELOAD_WINDOW_MS = 3_000;

/** Files whose change makes `deno run --watch` restart the program. */
const SOURCE_FILE = /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs|json|jsonc)$/;
const IGNORED_PATH = /[\\/](node_modules|\.git)[\\/]/;

/** Whether this process runs under `deno run --watch` (Linux: read from `/proc/self/cmdline`). */
export function underWatch(): boolean {
  try {
    const args = Deno.readTextFileSync("/proc/self/cmdline").split("\0");
    return args.some((arg) => /^--watch(-hmr)?(=|$)/.test(arg));
  } catch {
    return false;
  }
}

/**
 * Tells a `deno run --watch` reload from a SIGTERM sent from outside. Deno's
 * watcher stops the running program on a reload by dispatching SIGTERM to it,
 * in the same process, so the signal alone cannot tell the two apart; a
 * source file that changed an instant before can. This watches the main
 * module's directory and the working directory for changed source files
 * (not `node_modules`), only when the process runs under `--watch`.
 */
export class ReloadDetector {
  readonly #watcher: Deno.FsWatcher;
  #lastChange = -Infinity;

  private constructor(watcher: Deno.FsWatcher) {
    this.#watcher = watcher;
    this.#listen();
  }

  /**
   * Starts watching when the process runs under `--watch`.
   *
   * @returns The detector, or `undefined` outside `--watch` (or without read permission).
   */
  static start(): ReloadDetector | undefined {
    if (!underWatch()) return undefined;
    const roots = new Set([Deno.cwd()]);
    if (Deno.mainModule.startsWith("file:")) {
      roots.add(new URL(".", Deno.mainModule).pathname.replace(/\/$/, ""));
    }
    try {
      return new ReloadDetector(Deno.watchFs([...roots], { recursive: true }));
    } catch {
      return undefined;
    }
  }

  async #listen(): Promise<void> {
    try {
      for await (const event of this.#watcher) {
        if (event.kind === "access" || event.kind === "other") continue;
        const source = event.paths.some((path) =>
          SOURCE_FILE.test(path) && !IGNORED_PATH.test(path)
        );
        if (source) this.#lastChange = Date.now();
      }
    } catch {
      // closed
    }
  }

  /** Whether a SIGTERM now is Deno's watcher restarting the program. */
  reloading(): boolean {
    return Date.now() - this.#lastChange < RELOAD_WINDOW_MS;
  }

  /** Stops watching. */
  close(): void {
    try {
      this.#watcher.close();
    } catch {
      // already closed
    }
  }
}

/**
 * Process signals for container runs: SIGTERM runs the shutdown hooks once,
 * SIGINT does not.
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

/**
 * Waiting for work that may never answer (a VNC screen, a tunnel): a time
 * limit that cuts the work off, and closing what may be closed already.
 *
 * @module
 */

/** A piece of work that ran past its time limit. */
export class TimeLimitError extends Error {
  /**
   * Creates the error.
   *
   * @param message Why, in one line.
   */
  constructor(message: string) {
    super(message);
    this.name = "TimeLimitError";
  }
}

/**
 * The work's value, or a {@linkcode TimeLimitError} after `ms` (then
 * `onTimeout` runs, to cut the work off) or the signal's reason when it
 * aborts first.
 *
 * @param work The work.
 * @param ms Its time limit.
 * @param onTimeout Cuts the work off; runs on the time limit and on abort.
 * @param message The time-limit error's message.
 * @param signal Stops waiting with its reason.
 * @returns The work's value.
 */
export function withTimeLimit<T>(
  work: Promise<T>,
  ms: number,
  onTimeout: () => void,
  message: string,
  signal?: AbortSignal,
): Promise<T> {
  work.catch(() => {}); // settled after the limit: nobody waits for it then
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", abort);
      onTimeout();
      reject(new TimeLimitError(message));
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      onTimeout();
      reject(signal!.reason);
    };
    if (signal?.aborted) return abort();
    signal?.addEventListener("abort", abort, { once: true });
    work.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", abort);
    });
  });
}

/** Closes a connection or client that may be closed already. */
export function closeQuietly(resource: { close(): void } | undefined): void {
  try {
    resource?.close();
  } catch {
    // closed already
  }
}

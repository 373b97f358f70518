/**
 * Bounded retry of optimistic Deno KV transactions. Private to the gateway.
 *
 * @module
 */

/** How many times a conflicting transaction is attempted before giving up. */
export const MAX_COMMIT_ATTEMPTS = 24;

/**
 * Runs `attempt` until it commits, at most {@linkcode MAX_COMMIT_ATTEMPTS}
 * times. `attempt` reads what it needs, builds one `atomic()` with `check()`
 * on what it read and commits it; it returns `null` when the commit lost to a
 * concurrent writer, else its result. A local KV file shared by several
 * processes also fails a read or commit with SQLite's "database is locked"
 * while another process writes; nothing was written, so that attempt is
 * lost the same way. Between attempts it waits a jittered, growing delay so
 * writers in other processes stop colliding.
 *
 * @param what Names the operation in the error, e.g. `reserve for "ck_1"`.
 * @param attempt One read-check-commit round.
 * @returns The first non-null result.
 * @throws {Error} When every attempt conflicted.
 */
export async function commitWithRetry<T>(
  what: string,
  attempt: () => Promise<T | null>,
): Promise<T> {
  for (let i = 0; i < MAX_COMMIT_ATTEMPTS; i++) {
    const result = await attempt().catch((error: unknown) => {
      if (isBusy(error)) return null;
      throw error;
    });
    if (result !== null) return result;
    const ceiling = Math.min(50, 2 ** i);
    await new Promise((resolve) =>
      setTimeout(resolve, Math.random() * ceiling)
    );
  }
  throw new Error(
    `Could not commit ${what}: still conflicting after ${MAX_COMMIT_ATTEMPTS} attempts`,
  );
}

/**
 * Whether `error` is SQLite's busy error, raised by a local KV file while
 * another process holds the write lock.
 *
 * @param error What a KV call threw.
 * @returns `true` for the busy error.
 */
export function isBusy(error: unknown): boolean {
  return error instanceof Error &&
    /database is (locked|busy)/i.test(error.message);
}

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
 * concurrent writer, else its result. Between attempts it waits a jittered,
 * growing delay so writers in other processes stop colliding.
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
    const result = await attempt();
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

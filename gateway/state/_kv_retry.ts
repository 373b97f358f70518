/**
 * Bounded retry of optimistic Deno KV transactions, on the package's one
 * retry helper (`_retry.ts`). Private to the gateway.
 *
 * @module
 */
import { retry, RetryError } from "../../_retry.ts";

/** How many times a conflicting transaction is attempted before giving up. */
export const MAX_COMMIT_ATTEMPTS = 24;

/** Delay ceilings between attempts, ms: 1, 2, 4… up to 50, fully jittered. */
const COMMIT_RETRY = {
  maxAttempts: MAX_COMMIT_ATTEMPTS,
  minTimeout: 1,
  maxTimeout: 50,
  multiplier: 2,
  jitter: 1,
} as const;

/** An attempt whose commit lost to a concurrent writer. */
class LostCommit extends Error {
  constructor() {
    super("The commit lost to a concurrent writer");
    this.name = "LostCommit";
  }
}

/**
 * Runs `attempt` until it commits, at most {@linkcode MAX_COMMIT_ATTEMPTS}
 * times. `attempt` reads what it needs, builds one `atomic()` with `check()`
 * on what it read and commits it; it returns `null` when the commit lost to a
 * concurrent writer, else its result. A local KV file shared by several
 * processes also fails a read or commit with SQLite's "database is locked"
 * while another process writes; nothing was written, so that attempt is
 * lost the same way. Between attempts it waits a jittered, growing delay so
 * writers in other processes stop colliding. Any other error is thrown as
 * it is, without another attempt.
 *
 * @param what Names the operation in the error, e.g. `reserve for "ck_1"`.
 * @param attempt One read-check-commit round.
 * @returns The first non-null result.
 * @throws {RetryError} When every attempt conflicted (`cause`: the last conflict).
 */
export async function commitWithRetry<T>(
  what: string,
  attempt: () => Promise<T | null>,
): Promise<T> {
  try {
    return await retry(async () => {
      const result = await attempt();
      if (result === null) throw new LostCommit();
      return result;
    }, {
      ...COMMIT_RETRY,
      isRetriable: (error) => error instanceof LostCommit || isBusy(error),
    });
  } catch (error) {
    if (!(error instanceof RetryError)) throw error;
    throw new RetryError(
      `Could not commit ${what}: still conflicting after ${MAX_COMMIT_ATTEMPTS} attempts`,
      error.attempts,
      error.cause,
    );
  }
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

/**
 * A run's tries: what kind of failure an error is (only the environment's
 * and the gateway's are tried again), the wait before another try, and the
 * earlier tries' tokens and cost, which the run's result keeps (a try that
 * failed may still have been charged).
 *
 * @module
 */
import { SdkError } from "@modelcontextprotocol/client";
import type { EarlierAttempt, EvalErrorKind, EvalResult } from "./result.ts";
import { EnvironmentError } from "../environments/target.ts";

/** A failed try as the next try's result keeps it. */
export function earlierAttempt(result: EvalResult): EarlierAttempt {
  return {
    error: result.error ?? "",
    ...(result.error_kind && { error_kind: result.error_kind }),
    steps: num(result.steps),
    tokens: {
      input: num(result.tokens?.input),
      output: num(result.tokens?.output),
    },
    cost_usd: num(result.cost_usd),
  };
}

function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

/** The last try's result with the earlier tries' cost and tokens added. */
export function withEarlierAttempts(
  result: EvalResult,
  earlier: EarlierAttempt[],
): EvalResult {
  const tries = [...earlier, result];
  const micros = tries.reduce(
    (sum, t) => sum + Math.round(t.cost_usd * 1_000_000),
    0,
  );
  return {
    ...result,
    attempts: earlier.length + 1,
    earlier_attempts: earlier,
    tokens: {
      input: tries.reduce((sum, t) => sum + t.tokens.input, 0),
      output: tries.reduce((sum, t) => sum + t.tokens.output, 0),
    },
    cost_usd: micros / 1_000_000,
  };
}

/** How long to wait before trying a run again, ms: 1 s, doubling, at most 30 s. */
function retryDelayMs(attempt: number): number {
  return Math.min(30_000, 1000 * 2 ** (attempt - 1));
}

/** Waits before another try, or less when the eval is stopped meanwhile. */
export async function backOff(
  attempt: number,
  signal?: AbortSignal,
): Promise<void> {
  const { promise, resolve } = Promise.withResolvers<void>();
  const timer = setTimeout(resolve, retryDelayMs(attempt));
  const stop = () => resolve();
  signal?.addEventListener("abort", stop, { once: true });
  await promise;
  clearTimeout(timer);
  signal?.removeEventListener("abort", stop);
}

/**
 * What kind of failure an error is: the environment's (the connection or a
 * tool failed), the gateway's (unreachable, rate-limited or failing, not a
 * refusal of the request), or the task's own.
 */
export function errorKind(error: unknown): EvalErrorKind {
  if (error instanceof EnvironmentError || error instanceof SdkError) {
    return "environment";
  }
  if (
    error instanceof TypeError && /fetch|connect|network/i.test(error.message)
  ) {
    return "gateway";
  }
  const failed = /^The model call failed \((\d{3})\)/.exec(
    error instanceof Error ? error.message : "",
  );
  if (failed && (failed[1] === "429" || failed[1] >= "500")) return "gateway";
  return "task";
}

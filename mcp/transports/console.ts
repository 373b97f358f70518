/**
 * Sends `console.log/info/debug` to stderr while protocol messages own stdout.
 *
 * @module
 */

type Method = "log" | "info" | "debug";
const METHODS: readonly Method[] = ["log", "info", "debug"];

let depth = 0;
let saved: Record<Method, (...data: unknown[]) => void> | undefined;

/**
 * Redirects `console.log`, `console.info` and `console.debug` to stderr until
 * the returned function is called. Calls nest: the console is restored when
 * the last redirection ends, so overlapping hooks and a stdio run compose.
 *
 * @returns A function that ends this redirection (idempotent).
 * @example
 * ```ts
 * import { redirectConsoleToStderr } from "./console.ts";
 * const restore = redirectConsoleToStderr();
 * console.log("goes to stderr");
 * restore();
 * ```
 */
export function redirectConsoleToStderr(): () => void {
  if (depth === 0) {
    saved = { log: console.log, info: console.info, debug: console.debug };
    for (const method of METHODS) {
      console[method] = (...data: unknown[]) => console.error(...data);
    }
  }
  depth++;
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    depth--;
    if (depth === 0 && saved) {
      for (const method of METHODS) console[method] = saved[method];
      saved = undefined;
    }
  };
}

import { deepStrictEqual, ok, rejects } from "node:assert/strict";
import { retry, RetryError } from "./_retry.ts";

Deno.test("retry returns the first success and counts attempts from 1", async () => {
  const seen: number[] = [];
  const value = await retry((attempt) => {
    seen.push(attempt);
    if (attempt < 3) return Promise.reject(new Error("busy"));
    return Promise.resolve("done");
  }, { minTimeout: 0 });
  deepStrictEqual([value, seen], ["done", [1, 2, 3]]);
});

Deno.test("retry gives up after maxAttempts with a RetryError that keeps the last error", async () => {
  const last = new Error("still busy");
  let calls = 0;
  const error = await retry(() => {
    calls++;
    return Promise.reject(last);
  }, { maxAttempts: 4, minTimeout: 0 }).catch((error) => error);
  ok(error instanceof RetryError);
  deepStrictEqual([error.attempts, error.cause, calls], [4, last, 4]);
  ok(error.message.includes("still busy"));
});

Deno.test("retry throws an error isRetriable refuses at once, unwrapped", async () => {
  let calls = 0;
  const fatal = new TypeError("bad input");
  await rejects(
    retry(() => {
      calls++;
      return Promise.reject(fatal);
    }, { isRetriable: (error) => !(error instanceof TypeError) }),
    (error) => error === fatal,
  );
  deepStrictEqual(calls, 1);
});

Deno.test("retry stops waiting when its signal aborts", async () => {
  const controller = new AbortController();
  const pending = retry(() => Promise.reject(new Error("busy")), {
    minTimeout: 10_000,
    maxAttempts: 3,
    signal: controller.signal,
  });
  controller.abort(new Error("stopped"));
  await rejects(pending, /stopped/);
});

import assert from "node:assert/strict";
import { RetryError } from "../../_retry.ts";
import { commitWithRetry, isBusy, MAX_COMMIT_ATTEMPTS } from "./_kv_retry.ts";

Deno.test("commitWithRetry() runs the attempt again while it loses, and returns the first result", async () => {
  let attempts = 0;
  const value = await commitWithRetry("a test commit", () => {
    attempts++;
    return Promise.resolve(attempts < 4 ? null : "committed");
  });
  assert.equal(value, "committed");
  assert.equal(attempts, 4);
});

Deno.test("commitWithRetry() gives up after MAX_COMMIT_ATTEMPTS lost attempts with a RetryError naming the operation", async () => {
  let attempts = 0;
  const error = await commitWithRetry('top-up for caller "ck_1"', () => {
    attempts++;
    return Promise.resolve(null);
  }).catch((error: unknown) => error);
  assert.equal(attempts, MAX_COMMIT_ATTEMPTS);
  assert.ok(error instanceof RetryError);
  assert.equal(
    error.message,
    `Could not commit top-up for caller "ck_1": still conflicting after ${MAX_COMMIT_ATTEMPTS} attempts`,
  );
  assert.equal(error.attempts, MAX_COMMIT_ATTEMPTS);
  assert.ok(error.cause instanceof Error);
});

Deno.test("commitWithRetry() counts SQLite's busy error as a lost attempt, and throws any other error at once", async () => {
  let attempts = 0;
  const value = await commitWithRetry("a busy commit", () => {
    attempts++;
    if (attempts === 1) throw new Error("database is locked");
    return Promise.resolve(attempts);
  });
  assert.equal(value, 2);

  attempts = 0;
  const refused = new RangeError("Invalid amount");
  await assert.rejects(
    commitWithRetry("a refused commit", () => {
      attempts++;
      throw refused;
    }),
    (error: unknown) => error === refused,
  );
  assert.equal(attempts, 1);
});

Deno.test("isBusy() recognises SQLite's locked and busy errors only", () => {
  assert.ok(isBusy(new Error("database is locked")));
  assert.ok(isBusy(new Error("Database is busy")));
  assert.ok(!isBusy(new Error("connection reset")));
  assert.ok(!isBusy("database is locked"));
});

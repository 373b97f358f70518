import assert from "node:assert/strict";
import { normalUsage, tokenCount, UnreadableUsageError } from "./usage.ts";

Deno.test("tokenCount() reads numbers and numeric strings, rounds up, and treats absence as 0", () => {
  assert.equal(tokenCount(12, "f"), 12);
  assert.equal(tokenCount("12", "f"), 12);
  assert.equal(tokenCount(3.2, "f"), 4);
  assert.equal(tokenCount(undefined, "f"), 0);
  assert.equal(tokenCount(null, "f"), 0);
});

Deno.test("tokenCount() refuses what cannot be a token count, naming the field", () => {
  for (
    const bad of [-1, "abc", "", Number.NaN, Infinity, {}, [], true, 2 ** 60]
  ) {
    assert.throws(
      () => tokenCount(bad, "usage.completion_tokens"),
      (error: unknown) =>
        error instanceof UnreadableUsageError &&
        error.message.includes("usage.completion_tokens"),
      String(bad),
    );
  }
});

Deno.test("normalUsage() caps cached, cache-write and reasoning parts at their whole", () => {
  assert.deepEqual(
    normalUsage({
      inputTokens: 100,
      outputTokens: 10,
      cachedInputTokens: 150,
      cacheWriteTokens: 5,
      reasoningTokens: 20,
    }),
    {
      inputTokens: 100,
      outputTokens: 10,
      cachedInputTokens: 100,
      reasoningTokens: 10,
    },
  );
  assert.deepEqual(
    normalUsage({
      inputTokens: 100,
      outputTokens: 10,
      cachedInputTokens: 20,
      cacheWriteTokens: 50,
      cacheWrite1hTokens: 50,
    }),
    {
      inputTokens: 100,
      outputTokens: 10,
      cachedInputTokens: 20,
      cacheWriteTokens: 50,
      cacheWrite1hTokens: 30,
    },
  );
});

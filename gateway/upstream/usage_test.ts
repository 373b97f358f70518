import assert from "node:assert/strict";
import {
  coveringTotal,
  mergeUsageCounts,
  normalUsage,
  tokenCount,
  UnreadableUsageError,
} from "./usage.ts";

Deno.test("tokenCount() reads numbers and numeric strings, rounds up, and treats absence as 0", () => {
  assert.equal(tokenCount(12, "f"), 12);
  assert.equal(tokenCount("12", "f"), 12);
  assert.equal(tokenCount(3.2, "f"), 4);
  assert.equal(tokenCount(undefined, "f"), 0);
  assert.equal(tokenCount(null, "f"), 0);
  assert.equal(tokenCount(1e12, "f"), 1e12);
});

Deno.test("tokenCount() refuses what cannot be a token count, naming the field", () => {
  for (
    const bad of [
      -1,
      "abc",
      "",
      Number.NaN,
      Infinity,
      {},
      [],
      true,
      2 ** 60,
      1e12 + 1,
    ]
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

Deno.test("mergeUsageCounts() keeps the larger reading of each count and the detail an earlier event gave", () => {
  const start = {
    input_tokens: 9,
    cache_creation_input_tokens: 3_068,
    cache_creation: {
      ephemeral_5m_input_tokens: 3_068,
      ephemeral_1h_input_tokens: 0,
    },
    output_tokens: 3,
  };
  const delta = {
    input_tokens: 1_218,
    cache_creation_input_tokens: 3_337,
    cache_read_input_tokens: null,
    output_tokens: 734,
  };
  assert.deepEqual(mergeUsageCounts(mergeUsageCounts({}, start), delta), {
    input_tokens: 1_218,
    cache_creation_input_tokens: 3_337,
    cache_creation: {
      ephemeral_5m_input_tokens: 3_068,
      ephemeral_1h_input_tokens: 0,
    },
    output_tokens: 734,
  });
  // A smaller later reading does not lower a count; details fold field by field.
  assert.deepEqual(
    mergeUsageCounts(
      { prompt_tokens: 20, prompt_tokens_details: { cached_tokens: 16 } },
      {
        prompt_tokens: "12",
        prompt_tokens_details: { audio_tokens: 2, cached_tokens: null },
      },
    ),
    {
      prompt_tokens: 20,
      prompt_tokens_details: { cached_tokens: 16, audio_tokens: 2 },
    },
  );
});

Deno.test("mergeUsageCounts() lets the reader see a count that cannot be read, and ignores what is not an object", () => {
  assert.deepEqual(
    mergeUsageCounts({ output_tokens: 5 }, { output_tokens: -1 }),
    {
      output_tokens: -1,
    },
  );
  assert.deepEqual(
    mergeUsageCounts({ output_tokens: "x" }, { output_tokens: 3 }),
    {
      output_tokens: 3,
    },
  );
  for (const junk of [null, "usage", 7, [1, 2]]) {
    assert.deepEqual(mergeUsageCounts({ a: 1 }, junk), { a: 1 });
  }
});

Deno.test("mergeUsageCounts() keeps a __proto__ field a plain field and replaces deep nesting whole", () => {
  const merged = mergeUsageCounts(
    {},
    JSON.parse('{"__proto__": {"polluted": 1}, "a": {"b": {"c": 1}}}'),
  );
  assert.equal(Object.getPrototypeOf(merged), Object.prototype);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  const again = mergeUsageCounts(merged, { a: { b: { d: 2 } } });
  assert.deepEqual(again.a, { b: { d: 2 } });
});

Deno.test("coveringTotal() bills a total above the classes as output, and ignores one below", () => {
  const usage = { inputTokens: 10, outputTokens: 5, cachedInputTokens: 4 };
  assert.deepEqual(coveringTotal(usage, 40), { ...usage, outputTokens: 30 });
  assert.deepEqual(coveringTotal(usage, 15), usage);
  assert.deepEqual(coveringTotal(usage, 0), usage);
});

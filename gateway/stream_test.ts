import assert from "node:assert/strict";
import { billableUsage } from "./stream.ts";

const NONE = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 };

Deno.test("billableUsage() bills a complete stream as the provider reported it", () => {
  const usage = { inputTokens: 100, outputTokens: 7, cachedInputTokens: 0 };
  assert.deepEqual(billableUsage(usage, 200, 500, 30), {
    usage,
    estimated: [],
  });
});

Deno.test("billableUsage() bills an abandoned stream the prompt's estimate and the output relayed", () => {
  assert.deepEqual(billableUsage(NONE, 499, 500, 30), {
    usage: { inputTokens: 500, outputTokens: 30, cachedInputTokens: 0 },
    estimated: ["input", "output"],
  });
  // The provider's own prompt count wins over the estimate.
  assert.deepEqual(
    billableUsage({ ...NONE, inputTokens: 120, outputTokens: 1 }, 499, 500, 30),
    {
      usage: { inputTokens: 120, outputTokens: 30, cachedInputTokens: 0 },
      estimated: ["output"],
    },
  );
});

Deno.test("billableUsage() charges an upstream that failed before any content only what it reported", () => {
  assert.deepEqual(billableUsage(NONE, 502, 500, 0), {
    usage: NONE,
    estimated: [],
  });
  assert.deepEqual(billableUsage(NONE, 502, 500, 12), {
    usage: { inputTokens: 500, outputTokens: 12, cachedInputTokens: 0 },
    estimated: ["input", "output"],
  });
});

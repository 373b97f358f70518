import assert from "node:assert/strict";
import { geminiUsage } from "./gemini.ts";

Deno.test("geminiUsage() bills thinking and tool-use prompt tokens, and a total above the counts as output", () => {
  assert.deepEqual(
    geminiUsage({
      promptTokenCount: 1_300,
      cachedContentTokenCount: 1_000,
      toolUsePromptTokenCount: 50,
      candidatesTokenCount: 200,
      thoughtsTokenCount: 500,
      totalTokenCount: 2_050,
    }),
    {
      inputTokens: 1_350,
      outputTokens: 700,
      cachedInputTokens: 1_000,
      reasoningTokens: 500,
    },
  );
  assert.deepEqual(
    geminiUsage({
      promptTokenCount: 20,
      candidatesTokenCount: 68,
      totalTokenCount: 909,
    }),
    { inputTokens: 20, outputTokens: 889, cachedInputTokens: 0 },
  );
});

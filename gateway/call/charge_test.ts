import assert from "node:assert/strict";
import { chargeMicros, ratesFor } from "./charge.ts";

const PRICING = {
  input: 1.25,
  output: 10,
  cachedInput: 0.125,
  webSearch: 10,
  tiers: { priority: { input: 2.5, output: 20, cachedInput: 0.25 } },
  longContext: { aboveInputTokens: 200_000, input: 2.5, output: 15 },
};

Deno.test("ratesFor() takes the tier asked for, else the long-context rate above its threshold", () => {
  assert.equal(ratesFor(PRICING, 1_000, "priority").input, 2.5);
  assert.equal(ratesFor(PRICING, 200_000).input, 1.25);
  assert.equal(ratesFor(PRICING, 200_001).output, 15);
  assert.throws(() => ratesFor(PRICING, 1, "flex"), /"flex"/);
});

Deno.test("chargeMicros() adds web searches per 1,000 and never charges below a reported cost", () => {
  const usage = { inputTokens: 1_000, outputTokens: 100, cachedInputTokens: 0 };
  assert.equal(chargeMicros(usage, PRICING), 2_250);
  assert.equal(chargeMicros({ ...usage, webSearches: 3 }, PRICING), 32_250);
  assert.equal(
    chargeMicros({ ...usage, reportedCostUsd: 0.05 }, PRICING),
    50_000,
  );
  assert.equal(
    chargeMicros({ ...usage, reportedCostUsd: 0.000001 }, PRICING),
    2_250,
  );
  // A model without a search price had the tool refused: reports add nothing.
  assert.equal(
    chargeMicros({ ...usage, webSearches: 3 }, { input: 1.25, output: 10 }),
    2_250,
  );
});

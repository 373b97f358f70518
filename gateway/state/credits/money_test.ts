import assert from "node:assert/strict";
import {
  costMicros,
  formatUsd,
  MAX_BALANCE_MICROS,
  maxCostMicros,
  microsToUsd,
  usdToMicros,
} from "./money.ts";

Deno.test("usdToMicros() and microsToUsd() convert between USD and integer micro-USD", () => {
  assert.equal(usdToMicros(10), 10_000_000);
  assert.equal(usdToMicros(0.1), 100_000);
  assert.equal(usdToMicros(-2.5), -2_500_000);
  assert.equal(usdToMicros(0.0000004), 0);
  assert.equal(microsToUsd(1_500_000), 1.5);
  assert.throws(() => usdToMicros(Number.NaN), RangeError);
  assert.throws(() => usdToMicros(Infinity), RangeError);
});

Deno.test("costMicros() rounds the whole call up to the next micro-USD, once", () => {
  // 3 tokens at 0.1 USD/M are 0.3 micro-USD: one micro-USD, not one per token.
  assert.equal(
    costMicros({ inputTokens: 3, outputTokens: 0, cachedInputTokens: 0 }, {
      input: 0.1,
      output: 0,
    }),
    1,
  );
  // 1.1 * 10 is 11.000000000000002 in floating point; the cost stays exactly 11.
  assert.equal(
    costMicros({ inputTokens: 10, outputTokens: 0, cachedInputTokens: 0 }, {
      input: 1.1,
      output: 0,
    }),
    11,
  );
  assert.equal(
    costMicros({ inputTokens: 1, outputTokens: 1, cachedInputTokens: 0 }, {
      input: 0.15,
      output: 0.6,
    }),
    1,
  );
  assert.equal(
    costMicros({ inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 }, {
      input: 3,
      output: 15,
    }),
    0,
  );
  assert.equal(
    costMicros({
      inputTokens: 1_000_000,
      outputTokens: 1_000_000,
      cachedInputTokens: 0,
    }, { input: 3, output: 15 }),
    18_000_000,
  );
});

Deno.test("costMicros() bills cached tokens at the cached price, else at the input price", () => {
  const usage = {
    inputTokens: 1000,
    outputTokens: 100,
    cachedInputTokens: 800,
  };
  assert.equal(
    costMicros(usage, { input: 3, output: 15, cachedInput: 0.3 }),
    200 * 3 + 800 * 0.3 + 100 * 15,
  );
  assert.equal(
    costMicros(usage, { input: 3, output: 15 }),
    1000 * 3 + 100 * 15,
  );
  assert.throws(
    () =>
      costMicros({ inputTokens: 1, outputTokens: 0, cachedInputTokens: 2 }, {
        input: 1,
        output: 1,
      }),
    RangeError,
  );
  assert.throws(
    () =>
      costMicros({ inputTokens: -1, outputTokens: 0, cachedInputTokens: 0 }, {
        input: 1,
        output: 1,
      }),
    RangeError,
  );
});

Deno.test("maxCostMicros() prices the input estimate and every possible output token", () => {
  assert.equal(
    maxCostMicros({ input: 2.5, output: 10, cachedInput: 1.25 }, 400, 1000),
    400 * 2.5 + 1000 * 10,
  );
  assert.equal(maxCostMicros({ input: 0.1, output: 0.1 }, 1.2, 0), 1);
});

Deno.test("formatUsd() prints six decimals and MAX_BALANCE_MICROS stays exact when doubled", () => {
  assert.equal(formatUsd(123), "0.000123");
  assert.equal(formatUsd(-2_500_000), "-2.500000");
  assert.ok(Number.isSafeInteger(2 * MAX_BALANCE_MICROS));
});

Deno.test("costMicros() bills cache writes at the 5-minute and 1-hour write prices, else at the input price", () => {
  const usage = {
    inputTokens: 1_000,
    outputTokens: 0,
    cachedInputTokens: 100,
    cacheWriteTokens: 200,
    cacheWrite1hTokens: 300,
  };
  assert.equal(
    costMicros(usage, {
      input: 1,
      output: 5,
      cachedInput: 0.1,
      cacheWrite: 1.25,
      cacheWrite1h: 2,
    }),
    400 * 1 + 100 * 0.1 + 200 * 1.25 + 300 * 2,
  );
  assert.equal(
    costMicros(usage, { input: 1, output: 5, cachedInput: 0.1 }),
    900 * 1 + 100 * 0.1,
  );
  assert.throws(
    () =>
      costMicros({ ...usage, cacheWrite1hTokens: 901 }, {
        input: 1,
        output: 1,
      }),
    RangeError,
  );
});

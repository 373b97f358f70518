import assert from "node:assert/strict";
import fc from "fast-check";
import {
  cheapestRates,
  floorHoldMicros,
  StructureCounter,
} from "./hold_floor.ts";
import { estimateInputTokens } from "./estimate.ts";
import { DEFAULT_CATALOG } from "../state/catalog.ts";

const encoder = new TextEncoder();

/** The counter fed `text` cut at `cuts` (byte offsets). */
function counted(text: string, cuts: readonly number[] = []): number {
  const bytes = encoder.encode(text);
  const counter = new StructureCounter();
  let from = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    counter.feed(bytes.subarray(from, Math.max(from, cut)));
    from = Math.max(from, cut);
  }
  counter.feed(bytes.subarray(from));
  return counter.structural;
}

Deno.test("StructureCounter counts { } [ ] : , outside strings only, however the bytes are cut", () => {
  const text = String.raw`{"a\"{[":["x,\\",{"é中😀":"}]"}], "b" : 12.5e3}`;
  // Outside strings: { : [ , { : } ] , : }
  assert.equal(counted(text), 11);
  const length = encoder.encode(text).length;
  for (let cut = 0; cut <= length; cut++) {
    assert.equal(counted(text, [cut]), 11, `cut at ${cut}`);
  }
  // An escaped backslash ends before the quote; the quote then closes.
  assert.equal(counted(String.raw`["\\",1]`, [3, 4]), 3);
});

Deno.test("property: the floor of a JSON text, however written and cut, is never above its input estimate", () => {
  fc.assert(
    fc.property(
      fc.jsonValue(),
      fc.constantFrom(undefined, 2, "\t"),
      fc.array(fc.nat(), { maxLength: 4 }),
      (value, indent, cuts) => {
        const text = JSON.stringify(value, null, indent);
        const floor = Math.ceil(counted(text, cuts) / 3);
        assert.ok(
          floor <= estimateInputTokens(value),
          `floor ${floor} above the estimate of ${text}`,
        );
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("cheapestRates() takes the lowest input and output of every rate a route's models are held at", () => {
  const entries = [
    {
      routes: ["chat" as const],
      pricing: {
        input: 3,
        output: 15,
        cacheWrite: 2,
        tiers: { flex: { input: 1.5, output: 7.5 } },
        longContext: { aboveInputTokens: 1, input: 6, output: 5 },
      },
    },
    { routes: ["messages" as const], pricing: { input: 0.1, output: 0.2 } },
  ];
  assert.deepEqual(cheapestRates(entries, "chat"), { input: 1.5, output: 5 });
  assert.deepEqual(cheapestRates(entries), { input: 0.1, output: 0.2 });
  assert.deepEqual(cheapestRates(entries, "gemini"), { input: 0, output: 0 });
  // Every model of the shipped catalog on the route is at or above it.
  const chat = cheapestRates(DEFAULT_CATALOG, "chat");
  for (
    const entry of DEFAULT_CATALOG.filter((e) => e.routes.includes("chat"))
  ) {
    assert.ok(entry.pricing.input >= chat.input, entry.id);
    assert.ok(entry.pricing.output >= chat.output, entry.id);
  }
});

Deno.test("floorHoldMicros() prices the floor's input and one output token, rounded up", () => {
  assert.equal(floorHoldMicros(0, { input: 0.15, output: 0.6 }), 1);
  assert.equal(
    floorHoldMicros(1_000_000, { input: 0.15, output: 0.6 }),
    150_001,
  );
  assert.equal(floorHoldMicros(1_000_000, { input: 0, output: 0 }), 0);
});

import assert from "node:assert/strict";
import fc from "fast-check";
import {
  defaultCachedTokens,
  splitEvenly,
  splitText,
  tokensForChars,
} from "./tokens.ts";

Deno.test("splitText() deltas always join back into the text", () => {
  fc.assert(
    fc.property(fc.string(), fc.integer({ min: 1, max: 5 }), (text, words) => {
      assert.equal(splitText(text, words).join(""), text);
    }),
  );
});

Deno.test("splitEvenly() parts join back and never exceed the wanted count", () => {
  fc.assert(
    fc.property(
      fc.string({ minLength: 1 }),
      fc.integer({ min: 1, max: 8 }),
      (value, pieces) => {
        const parts = splitEvenly(value, pieces);
        assert.equal(parts.join(""), value);
        assert.ok(parts.length <= pieces);
      },
    ),
  );
});

Deno.test("tokensForChars() rounds a quarter of the characters up", () => {
  assert.equal(tokensForChars(0), 0);
  assert.equal(tokensForChars(1), 1);
  assert.equal(tokensForChars(8), 2);
  assert.equal(tokensForChars(9), 3);
});

Deno.test("defaultCachedTokens() caches half of long prompts in 128-token steps", () => {
  assert.equal(defaultCachedTokens(1023), 0);
  assert.equal(defaultCachedTokens(1024), 512);
  assert.equal(defaultCachedTokens(3000), 1408);
});

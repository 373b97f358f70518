import assert from "node:assert/strict";
import fc from "fast-check";
import {
  argumentsFromSchema,
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

Deno.test("argumentsFromSchema() fills every property with a value of its type", () => {
  const args = argumentsFromSchema({
    type: "object",
    properties: {
      name: { type: "string" },
      count: { type: "integer", minimum: 3 },
      ratio: { type: "number" },
      on: { type: "boolean" },
      mode: { enum: ["fast", "slow"] },
      tags: { type: "array", items: { type: "string" } },
      nested: {
        type: "OBJECT",
        properties: { when: { type: "STRING", format: "date" } },
      },
      either: { anyOf: [{ type: "integer" }, { type: "null" }] },
      maybe: { type: ["null", "string"] },
    },
  });
  assert.deepEqual(args, {
    name: "name value",
    count: 3,
    ratio: 42.5,
    on: true,
    mode: "fast",
    tags: ["tags value", "tags value"],
    nested: { when: "2026-01-01" },
    either: 7,
    maybe: "maybe value",
  });
});

Deno.test("argumentsFromSchema() gives a non-trivial object when the schema has no properties", () => {
  assert.deepEqual(argumentsFromSchema(undefined), {
    input: "simulated input",
    count: 2,
  });
  assert.deepEqual(argumentsFromSchema({ type: "object" }), {
    input: "simulated input",
    count: 2,
  });
});

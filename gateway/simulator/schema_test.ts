import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import fc from "fast-check";
import { z } from "zod";
import { argumentsFromSchema, valueFromSchema } from "./schema.ts";

const ajv = new Ajv2020({ strict: false, validateFormats: true });
addFormats.default(ajv);

function assertValid(schema: object, value: unknown): void {
  const validate = ajv.compile(schema);
  assert.ok(
    validate(value),
    `${JSON.stringify(value)} fails: ${ajv.errorsText(validate.errors)}`,
  );
}

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

Deno.test("valueFromSchema() satisfies a strict OpenAI schema with nesting, enums and formats", () => {
  const schema = {
    type: "object",
    properties: {
      title: { type: "string", minLength: 20, maxLength: 40 },
      when: { type: "string", format: "date-time" },
      contact: { type: "string", format: "email" },
      site: { type: "string", format: "uri" },
      id: { type: "string", format: "uuid" },
      size: { type: "string", enum: ["S", "M", "L"] },
      attendees: {
        type: "array",
        minItems: 3,
        items: {
          type: "object",
          properties: {
            name: { type: "string" },
            age: { type: "integer", exclusiveMinimum: 17, maximum: 120 },
            score: { type: "number", minimum: 0, maximum: 1, multipleOf: 0.25 },
          },
          required: ["name", "age", "score"],
          additionalProperties: false,
        },
      },
      note: { anyOf: [{ type: "string" }, { type: "null" }] },
      code: { type: "string", pattern: "^[A-Z]{3}$" },
    },
    required: [
      "title",
      "when",
      "contact",
      "site",
      "id",
      "size",
      "attendees",
      "note",
      "code",
    ],
    additionalProperties: false,
  };
  const value = valueFromSchema(schema) as Record<string, unknown>;
  assertValid(schema, value);
  assert.equal(value.size, "S");
  assert.equal(value.code, "AAA");
  assert.equal((value.attendees as unknown[]).length, 3);
});

Deno.test("valueFromSchema() follows $ref into $defs and ends recursive schemas", () => {
  const schema = {
    $defs: {
      node: {
        type: "object",
        properties: {
          label: { type: "string" },
          children: { type: "array", items: { $ref: "#/$defs/node" } },
        },
        required: ["label", "children"],
        additionalProperties: false,
      },
    },
    $ref: "#/$defs/node",
  };
  const value = valueFromSchema(schema);
  assertValid(schema, value);
  assert.ok(JSON.stringify(value).length < 10_000);
});

Deno.test("valueFromSchema() reads Gemini's OpenAPI subset: capital types, nullable, numeric strings", () => {
  const value = valueFromSchema({
    type: "OBJECT",
    properties: {
      recipe: { type: "STRING" },
      steps: { type: "ARRAY", items: { type: "STRING" }, minItems: "3" },
      rating: { type: "INTEGER", format: "int32", minimum: 1, maximum: 5 },
      mood: { type: "STRING", format: "enum", enum: ["happy", "sad"] },
      extra: { type: "STRING", nullable: true },
    },
    required: ["recipe", "steps"],
    propertyOrdering: ["recipe", "steps", "rating", "mood", "extra"],
  });
  assert.deepEqual(value, {
    recipe: "recipe value",
    steps: ["steps value", "steps value", "steps value"],
    rating: 1,
    mood: "happy",
    extra: "extra value",
  });
});

Deno.test("valueFromSchema() honours allOf, const, tuples, unique items and minProperties", () => {
  const schema = {
    type: "object",
    allOf: [
      { properties: { a: { const: "fixed" } }, required: ["a"] },
      { properties: { b: { type: "boolean" } }, required: ["b"] },
    ],
    properties: {
      pair: {
        type: "array",
        prefixItems: [{ type: "string" }, { type: "integer" }],
        items: false,
      },
      tags: {
        type: "array",
        uniqueItems: true,
        minItems: 3,
        items: { type: "string", enum: ["x", "y", "z"] },
      },
      names: { type: "array", uniqueItems: true, items: { type: "string" } },
      map: {
        type: "object",
        minProperties: 2,
        additionalProperties: { type: "number" },
      },
    },
    required: ["pair", "tags", "names", "map"],
  };
  const value = valueFromSchema(schema) as Record<string, unknown>;
  assertValid(schema, value);
  assert.equal(value.a, "fixed");
  assert.deepEqual(value.tags, ["x", "y", "z"]);
});

Deno.test("valueFromSchema() answers hostile patterns quickly", () => {
  const started = performance.now();
  for (
    const pattern of [
      "^(a+)+$",
      "^(x+x+)+y$",
      "^(a{1000}){1000}$",
      "(((a{99}){99}){99})",
    ]
  ) {
    const value = valueFromSchema({ type: "string", pattern, minLength: 40 });
    assert.equal(typeof value, "string");
  }
  assert.ok(performance.now() - started < 1000);
});

Deno.test("valueFromSchema() satisfies zod's string checks, so a zod schema parses the value back", () => {
  const Checks = z.object({
    time: z.iso.time(),
    datetime: z.iso.datetime(),
    code: z.string().regex(/^[a-z]{2}-\d{3}$/),
    prefixed: z.string().startsWith("pre"),
    suffixed: z.string().endsWith("fix"),
    middle: z.string().includes("mid"),
    ids: z.tuple([
      z.uuid(),
      z.cuid(),
      z.cuid2(),
      z.ulid(),
      z.nanoid(),
      z.ksuid(),
      z.xid(),
    ]),
    net: z.tuple([
      z.ipv4(),
      z.ipv6(),
      z.cidrv4(),
      z.cidrv6(),
      z.mac(),
      z.hostname(),
    ]),
    encoded: z.tuple([z.base64(), z.base64url(), z.jwt(), z.emoji(), z.e164()]),
    cased: z.tuple([z.string().lowercase(), z.string().uppercase()]),
    sized: z.string().min(3).max(4).regex(/^[a-z]+$/),
  });
  const value = valueFromSchema(z.toJSONSchema(Checks));
  const parsed = Checks.safeParse(value);
  assert.ok(parsed.success, JSON.stringify(parsed.error?.issues));
  assert.equal(parsed.data.code, "aa-000");
  assert.equal(parsed.data.sized, "size");
});

const leafSchema = fc.oneof(
  fc.constant({ type: "string" }),
  fc.record({ type: fc.constant("string"), minLength: fc.nat(30) }),
  fc.record({
    type: fc.constant("string"),
    format: fc.constantFrom(
      "date",
      "date-time",
      "time",
      "email",
      "uri",
      "uuid",
      "ipv4",
      "ipv6",
      "hostname",
      "duration",
    ),
  }),
  fc.record({
    type: fc.constantFrom("integer", "number"),
    minimum: fc.integer({ min: -50, max: 50 }),
  }),
  fc.record({
    type: fc.constantFrom("integer", "number"),
    maximum: fc.integer({ min: -50, max: 50 }),
  }),
  fc.record({
    type: fc.constant("string"),
    pattern: fc.constantFrom(
      "^[a-z]{2}-\\d{3}$",
      "^\\d+$",
      "^[A-Z][a-z]*$",
      "^(foo|bar)-?[0-9a-f]{4}$",
      "@",
    ),
  }),
  fc.constant({ type: "boolean" }),
  fc.constant({ type: "null" }),
  fc.record({
    enum: fc.uniqueArray(fc.string(), { minLength: 1, maxLength: 4 }),
  }),
);

const anySchema = fc.letrec<{ schema: object }>((tie) => ({
  schema: fc.oneof(
    { depthSize: "small" },
    leafSchema,
    fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), tie("schema"), {
      maxKeys: 4,
    }).chain((properties) =>
      fc.record({
        type: fc.constant("object"),
        properties: fc.constant(properties),
        required: fc.subarray(Object.keys(properties)),
        additionalProperties: fc.boolean(),
      })
    ),
    fc.record({
      type: fc.constant("array"),
      items: tie("schema"),
      minItems: fc.nat(3),
    }),
    fc.record({
      anyOf: fc.array(tie("schema"), { minLength: 1, maxLength: 3 }),
    }),
  ),
}));

Deno.test("valueFromSchema() always produces a value its schema accepts", () => {
  fc.assert(
    fc.property(anySchema.schema, (schema) => {
      assertValid(schema, valueFromSchema(schema));
    }),
    { numRuns: 300 },
  );
});

Deno.test("valueFromSchema() honours bounds the Anthropic SDK writes into a description", () => {
  assert.deepEqual(
    valueFromSchema({
      type: "object",
      properties: {
        age: {
          type: "integer",
          description: "{minimum: 18, maximum: 9007199254740991}",
        },
        code: { type: "string", description: "{minLength: 12, maxLength: 20}" },
        list: {
          type: "array",
          items: { type: "string" },
          description: "{minItems: 3}",
        },
      },
    }),
    {
      age: 18,
      code: "code valuexx",
      list: ["list value", "list value", "list value"],
    },
  );
});

import assert from "node:assert/strict";
import fc from "fast-check";
import { type SchemaTarget, targetSchema } from "./_json_schema.ts";
import { TranslationError } from "./chat_types.ts";

const PARAM = "response_format.json_schema.schema";

/** What zod (through openai's `zodResponseFormat`) writes for a typical object. */
const ZOD_SCHEMA = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: {
    name: { type: "string", description: "Full name" },
    kind: { type: "string", enum: ["a", "b"] },
    tag: { type: "string", const: "x" },
    maybe: { type: ["string", "null"] },
    count: {
      type: "integer",
      minimum: -9007199254740991,
      maximum: 9007199254740991,
    },
    steps: {
      type: "array",
      items: {
        type: "object",
        properties: { output: { type: "string" } },
        required: ["output"],
        additionalProperties: false,
      },
    },
    either: {
      anyOf: [
        {
          type: "object",
          properties: { a: { type: "string" } },
          required: ["a"],
          additionalProperties: false,
        },
        { type: "null" },
      ],
    },
  },
  required: ["name", "kind", "tag", "maybe", "count", "steps", "either"],
  additionalProperties: false,
};

function refusal(
  schema: unknown,
  target: SchemaTarget,
): TranslationError {
  try {
    targetSchema(schema as Record<string, unknown>, target, PARAM);
  } catch (error) {
    assert.ok(error instanceof TranslationError, String(error));
    return error;
  }
  assert.fail(`expected ${JSON.stringify(schema)} to be refused`);
}

Deno.test("targetSchema() carries a zod schema to Anthropic, leaving out $schema and zod's safe-integer bounds only", () => {
  const carried = targetSchema(ZOD_SCHEMA, "anthropic", PARAM);
  const { $schema: _, ...expected } = structuredClone(ZOD_SCHEMA);
  expected.properties.count = {
    type: "integer",
  } as typeof expected.properties.count;
  assert.deepEqual(carried, expected);
  // The caller's schema is not changed.
  assert.equal(ZOD_SCHEMA.$schema, "http://json-schema.org/draft-07/schema#");
});

Deno.test("targetSchema() carries a zod schema to Gemini, const becoming a one-value enum", () => {
  const carried = targetSchema(ZOD_SCHEMA, "gemini", PARAM);
  const properties = carried.properties as Record<string, unknown>;
  assert.equal(carried.$schema, undefined);
  assert.deepEqual(properties.tag, { type: "string", enum: ["x"] });
  assert.deepEqual(properties.count, ZOD_SCHEMA.properties.count);
  assert.deepEqual(properties.steps, ZOD_SCHEMA.properties.steps);
});

Deno.test("targetSchema() closes Anthropic objects that leave additionalProperties unset, and refuses open ones", () => {
  const carried = targetSchema(
    {
      type: "object",
      properties: { inner: { type: "object", properties: {} } },
    },
    "anthropic",
    PARAM,
  );
  assert.deepEqual(carried, {
    type: "object",
    properties: {
      inner: { type: "object", properties: {}, additionalProperties: false },
    },
    additionalProperties: false,
  });
  const open = refusal(
    { type: "object", additionalProperties: { type: "string" } },
    "anthropic",
  );
  assert.equal(open.param, `${PARAM}.additionalProperties`);
  // Gemini takes open objects as they are.
  assert.deepEqual(
    targetSchema(
      { type: "object", additionalProperties: true },
      "gemini",
      PARAM,
    ),
    { type: "object", additionalProperties: true },
  );
});

Deno.test("targetSchema() refuses each keyword a target cannot enforce, naming it and where it is", () => {
  const cases: [SchemaTarget, unknown, string, RegExp][] = [
    [
      "anthropic",
      { type: "object", properties: { age: { type: "integer", minimum: 0 } } },
      `${PARAM}.properties.age.minimum`,
      /"minimum".*Anthropic/,
    ],
    [
      "anthropic",
      { type: "string", maxLength: 5 },
      `${PARAM}.maxLength`,
      /"maxLength"/,
    ],
    [
      "anthropic",
      { type: "array", minItems: 2 },
      `${PARAM}.minItems`,
      /0 or 1/,
    ],
    [
      "anthropic",
      { type: "array", maxItems: 2 },
      `${PARAM}.maxItems`,
      /maxItems/,
    ],
    [
      "anthropic",
      { type: "string", format: "ipv5" },
      `${PARAM}.format`,
      /format "ipv5"/,
    ],
    ["anthropic", { enum: [{ a: 1 }] }, `${PARAM}.enum`, /primitive/],
    [
      "anthropic",
      { type: "array", prefixItems: [{ type: "string" }] },
      `${PARAM}.prefixItems`,
      /prefixItems/,
    ],
    ["gemini", { type: "string", pattern: "^a" }, `${PARAM}.pattern`, /Gemini/],
    ["gemini", { allOf: [{ type: "string" }] }, `${PARAM}.allOf`, /allOf/],
    ["gemini", { enum: [true, false] }, `${PARAM}.enum`, /string and number/],
    ["gemini", { const: null }, `${PARAM}.const`, /const/],
    [
      "gemini",
      { type: "number", exclusiveMinimum: 0 },
      `${PARAM}.exclusiveMinimum`,
      /exclusiveMinimum/,
    ],
    ["anthropic", { oneOf: [{ type: "string" }] }, `${PARAM}.oneOf`, /anyOf/],
    ["gemini", { oneOf: [{ type: "string" }] }, `${PARAM}.oneOf`, /anyOf/],
    [
      "gemini",
      { type: "string", not: { const: "a" } },
      `${PARAM}.not`,
      /"not"/,
    ],
    [
      "anthropic",
      { type: "array", items: [{ type: "string" }] },
      `${PARAM}.items`,
      /prefixItems/,
    ],
    [
      "anthropic",
      { $ref: "https://example.com/s.json" },
      `${PARAM}.$ref`,
      /inside the schema/,
    ],
  ];
  for (const [target, schema, param, message] of cases) {
    const error = refusal(schema, target);
    assert.equal(error.param, param, JSON.stringify(schema));
    assert.match(error.message, message);
    assert.equal(error.status, 400);
  }
});

Deno.test("targetSchema() resolves local references, refusing Anthropic recursion and dangling references", () => {
  const shared = {
    type: "object",
    properties: { a: { $ref: "#/$defs/leaf" }, b: { $ref: "#/$defs/leaf" } },
    required: ["a", "b"],
    $defs: { leaf: { type: "string" } },
  };
  assert.deepEqual(
    targetSchema(shared, "anthropic", PARAM).properties,
    shared.properties,
  );
  const recursive = {
    type: "object",
    properties: { child: { anyOf: [{ $ref: "#" }, { type: "null" }] } },
  };
  assert.match(refusal(recursive, "anthropic").message, /recursive/);
  // Gemini unrolls recursion itself (narrowing, never loosening).
  assert.ok(targetSchema(recursive, "gemini", PARAM));
  const dangling = refusal({ $ref: "#/$defs/missing" }, "gemini");
  assert.match(dangling.message, /Cannot resolve/);
  const legacy = targetSchema(
    { $ref: "#/definitions/x", definitions: { x: { type: "string" } } },
    "gemini",
    PARAM,
  );
  assert.deepEqual(legacy, {
    $ref: "#/$defs/x",
    $defs: { x: { type: "string" } },
  });
});

Deno.test("targetSchema() refuses a schema nested past its depth limit instead of exhausting the stack", () => {
  let schema: Record<string, unknown> = { type: "string" };
  for (let i = 0; i < 5000; i++) schema = { type: "array", items: schema };
  assert.match(refusal(schema, "gemini").message, /nests deeper/);
  const chain: Record<string, unknown> = { n0: { type: "string" } };
  for (let i = 1; i < 20000; i++) {
    chain[`n${i}`] = { $ref: `#/$defs/n${i - 1}` };
  }
  const references = refusal(
    { $ref: "#/$defs/n19999", $defs: chain },
    "gemini",
  );
  assert.match(references.message, /references nest deeper/);
});

const CONSTRAINTS = [
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "minLength",
  "maxLength",
  "pattern",
  "minItems",
  "maxItems",
  "uniqueItems",
  "multipleOf",
  "format",
  "enum",
  "const",
  "required",
  "additionalProperties",
  "oneOf",
  "allOf",
  "not",
  "patternProperties",
  "minProperties",
] as const;

const constraintValue: Record<string, fc.Arbitrary<unknown>> = {
  minimum: fc.integer({ min: -5, max: 5 }),
  maximum: fc.integer({ min: -5, max: 5 }),
  exclusiveMinimum: fc.integer(),
  minLength: fc.nat(5),
  maxLength: fc.nat(5),
  pattern: fc.constant("^[a-z]+$"),
  minItems: fc.nat(3),
  maxItems: fc.nat(3),
  uniqueItems: fc.boolean(),
  multipleOf: fc.constant(2),
  format: fc.constantFrom("date", "email", "uuid", "int32", "color"),
  enum: fc.array(fc.oneof(fc.string(), fc.integer(), fc.boolean()), {
    minLength: 1,
    maxLength: 3,
  }),
  const: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
  required: fc.constant(["a"]),
  additionalProperties: fc.oneof(fc.boolean(), fc.constant({ type: "string" })),
  oneOf: fc.constant([{ type: "string" }, { type: "integer" }]),
  allOf: fc.constant([{ type: "string" }]),
  not: fc.constant({ type: "null" }),
  patternProperties: fc.constant({ "^x": { type: "string" } }),
  minProperties: fc.nat(2),
};

const randomSchema = fc.letrec<{ schema: Record<string, unknown> }>((tie) => ({
  schema: fc.record({
    type: fc.constantFrom("object", "array", "string", "integer", "number"),
    description: fc.option(fc.string(), { nil: undefined }),
    constraint: fc.option(
      fc.constantFrom(...CONSTRAINTS).chain((key) =>
        constraintValue[key].map((value) => [key, value] as const)
      ),
      { nil: undefined },
    ),
    children: fc.array(tie("schema"), { maxLength: 2 }),
  }, { requiredKeys: ["type", "children"] }).map(
    ({ type, description, constraint, children }) => {
      const node: Record<string, unknown> = { type };
      if (description !== undefined) node.description = description;
      if (constraint) node[constraint[0]] = constraint[1];
      if (type === "object") {
        node.properties = Object.fromEntries(
          children.map((child, i) => [`p${i}`, child]),
        );
      } else if (type === "array" && children[0]) {
        node.items = children[0];
      }
      return node;
    },
  ),
}));

/** Every constraint of `input` is in `output` (as the documented rewrites say). */
function assertKeepsConstraints(
  input: Record<string, unknown>,
  output: Record<string, unknown>,
  target: SchemaTarget,
): void {
  for (const key of CONSTRAINTS) {
    if (!(key in input)) continue;
    if (key === "const" && target === "gemini") {
      assert.deepEqual(output.enum, [input.const]);
    } else {
      assert.deepEqual(output[key], input[key], `${key} kept`);
    }
  }
  const inputProperties = input.properties as
    | Record<string, Record<string, unknown>>
    | undefined;
  for (const [name, child] of Object.entries(inputProperties ?? {})) {
    const carried = (output.properties as Record<string, unknown>)[name];
    assertKeepsConstraints(child, carried as Record<string, unknown>, target);
  }
  if (input.items) {
    assertKeepsConstraints(
      input.items as Record<string, unknown>,
      output.items as Record<string, unknown>,
      target,
    );
  }
}

Deno.test("targetSchema() never loosens a random schema: it keeps every constraint or refuses with a 400", () => {
  for (const target of ["anthropic", "gemini"] as const) {
    fc.assert(
      fc.property(randomSchema.schema, (schema) => {
        let carried: Record<string, unknown>;
        try {
          carried = targetSchema(schema, target, PARAM);
        } catch (error) {
          assert.ok(error instanceof TranslationError, String(error));
          assert.ok(error.param?.startsWith(PARAM));
          return;
        }
        assertKeepsConstraints(schema, carried, target);
      }),
      { numRuns: 300, seed: 2211 },
    );
  }
});

import assert from "node:assert/strict";
import { z } from "zod";
import {
  coerceArguments,
  globMatch,
  promptMessages,
  scenarioResult,
} from "./scenario.ts";

Deno.test("coerceArguments turns prompt strings into the shape's types and names a field that fails", () => {
  const shape = {
    n: z.number(),
    flag: z.boolean(),
    obj: z.object({ a: z.number() }),
    list: z.array(z.string()),
    text: z.string(),
    maybe: z.number().optional(),
  };
  assert.deepEqual(
    coerceArguments(shape, {
      n: "7",
      flag: "true",
      obj: '{"a": 1}',
      list: '["x"]',
      text: "42", // a string field keeps its string
    }),
    {
      ok: true,
      value: { n: 7, flag: true, obj: { a: 1 }, list: ["x"], text: "42" },
    },
  );
  const bad = coerceArguments(shape, {
    n: "seven",
    flag: "true",
    obj: "{}",
    list: "[]",
    text: "t",
  });
  assert.equal(bad.ok, false);
  assert.match((bad as { error: string }).error, /^n: .*number.*obj\.a: /);
});

Deno.test("the prompt and the result take every documented shape", () => {
  assert.deepEqual(promptMessages("hi"), [{
    role: "user",
    content: { type: "text", text: "hi" },
  }]);
  assert.deepEqual(promptMessages({ type: "text", text: "x" }), [{
    role: "user",
    content: { type: "text", text: "x" },
  }]);
  assert.throws(() => promptMessages(42), /first yield must be the prompt/);
  assert.deepEqual(scenarioResult(undefined), { reward: 1, done: true });
  assert.deepEqual(scenarioResult(0.5), { reward: 0.5, done: true });
  assert.deepEqual(scenarioResult({ reward: 0, done: false }), {
    reward: 0,
    done: false,
  });
  assert.throws(() => scenarioResult("good"), /second yield must be/);
});

Deno.test("globMatch matches tool names with * and ?", () => {
  assert.ok(globMatch("debug_dump", "debug_*"));
  assert.ok(globMatch("look", "lo?k"));
  assert.ok(!globMatch("guess", "debug_*"));
  assert.ok(!globMatch("a.b", "a?c"));
});

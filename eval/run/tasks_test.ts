import assert from "node:assert/strict";
import { runIdentity } from "./tasks.ts";

Deno.test("runIdentity names a run by task, repeat, scenario and arguments, whatever their key order", () => {
  assert.equal(
    runIdentity({
      task: 1,
      repeat: 2,
      scenario: "s",
      args: { a: 1, b: { c: 2, d: 3 } },
    }),
    runIdentity({
      task: 1,
      repeat: 2,
      scenario: "s",
      args: { b: { d: 3, c: 2 }, a: 1 },
    }),
  );
  assert.equal(
    runIdentity({ task: 1, scenario: "s" }),
    runIdentity({ task: 1, repeat: 0, scenario: "s", args: {} }),
  );
  for (
    const other of [
      { task: 2, repeat: 2, scenario: "s", args: { a: 1 } },
      { task: 1, repeat: 1, scenario: "s", args: { a: 1 } },
      { task: 1, repeat: 2, scenario: "t", args: { a: 1 } },
      { task: 1, repeat: 2, scenario: "s", args: { a: "1" } },
    ]
  ) {
    assert.notEqual(
      runIdentity(other),
      runIdentity({ task: 1, repeat: 2, scenario: "s", args: { a: 1 } }),
    );
  }
});

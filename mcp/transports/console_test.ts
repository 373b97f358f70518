import assert from "node:assert/strict";
import { redirectConsoleToStderr } from "./console.ts";

Deno.test("redirectConsoleToStderr() sends log, info and debug to console.error until restored", () => {
  const original = { log: console.log, error: console.error };
  const captured: unknown[][] = [];
  console.error = (...data: unknown[]) => void captured.push(data);
  try {
    const restore = redirectConsoleToStderr();
    console.log("a");
    console.info("b");
    console.debug("c");
    restore();
    assert.deepEqual(captured, [["a"], ["b"], ["c"]]);
    assert.equal(console.log, original.log);
  } finally {
    console.error = original.error;
  }
});

Deno.test("redirectConsoleToStderr() nests: the console returns after the last restore", () => {
  const original = console.log;
  const outer = redirectConsoleToStderr();
  const inner = redirectConsoleToStderr();
  inner();
  inner();
  assert.notEqual(console.log, original);
  outer();
  assert.equal(console.log, original);
});

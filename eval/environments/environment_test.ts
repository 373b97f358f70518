import assert from "node:assert/strict";
import { OutputTail } from "./target.ts";

Deno.test("OutputTail keeps the last bytes written, within its limit, and the last lines of them", () => {
  const tail = new OutputTail(16);
  assert.equal(tail.text(), "");
  tail.push("first line\n");
  tail.push(new TextEncoder().encode("second\nthird\n"));
  assert.equal(tail.text(), "ne\nsecond\nthird");
  tail.push("x".repeat(100));
  assert.equal(tail.text(), "x".repeat(16));
  const lines = new OutputTail(1000);
  for (let i = 0; i < 30; i++) lines.push(`line ${i}\n`);
  assert.equal(lines.text(2), "line 28\nline 29");
  assert.equal(lines.text().split("\n").length, 20);
});

Deno.test("OutputTail drops a multi-byte character cut at the start", () => {
  const tail = new OutputTail(5);
  tail.push("aé€");
  // "é" is 2 bytes, "€" 3: the last 5 bytes hold half of nothing cut.
  assert.equal(tail.text(), "é€");
  tail.push("b");
  assert.equal(tail.text(), "€b");
});

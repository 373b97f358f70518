import assert from "node:assert/strict";
import { FrameBudget } from "./frame_budget.ts";

Deno.test("FrameBudget lends up to its total, makes the rest wait in arrival order, and drops a waiter whose signal aborts", async () => {
  const budget = new FrameBudget(10);
  await budget.acquire(6);
  const order: string[] = [];
  const second = budget.acquire(6).then(() => order.push("second"));
  const aborted = new AbortController();
  const third = budget.acquire(4, aborted.signal).then(
    () => order.push("third"),
    (error) => order.push(`third refused: ${(error as Error).message}`),
  );
  const fourth = budget.acquire(4).then(() => order.push("fourth"));
  assert.equal(budget.lent, 6, "a later small request does not jump the line");
  aborted.abort();
  await third;
  budget.release(6);
  await Promise.all([second, fourth]);
  assert.deepEqual(order, [
    "third refused: The connection closed while its frame waited",
    "second",
    "fourth",
  ]);
  assert.equal(budget.lent, 10);
});

import assert from "node:assert/strict";
import { deadlines } from "./deadlines.ts";

function waiter() {
  const state = { expired: 0, deadline: Infinity, expire: () => {} };
  state.expire = () => state.expired++;
  return state;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("deadlines expire a waiter past its deadline once, and forget the others", async () => {
  const late = waiter();
  const answered = waiter();
  deadlines.watch(late, 20);
  deadlines.watch(answered, 20);
  deadlines.forget(answered);
  assert.equal(answered.deadline, Infinity);
  await sleep(80);
  assert.equal(late.expired, 1);
  assert.equal(answered.expired, 0);
  assert.equal(deadlines.size, 0);
});

Deno.test("deadlines never expire a waiter between its reads", async () => {
  // A stream stays in the set between reads with no deadline.
  const stream = waiter();
  deadlines.watch(stream, 20);
  stream.deadline = Infinity;
  await sleep(60);
  assert.equal(stream.expired, 0);
  deadlines.watch(stream, 20);
  await sleep(80);
  assert.equal(stream.expired, 1);
});

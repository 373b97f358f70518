import assert from "node:assert/strict";
import fc from "fast-check";
import {
  aheadMicros,
  type LaneOperation,
  type LaneView,
  planBatch,
} from "./lease.ts";

const SIZING = { aheadCalls: 4, aheadShare: 0.25 };

const views = fc.record({
  unleased: fc.integer({ min: -5_000, max: 100_000 }),
  leased: fc.integer({ min: 0, max: 50_000 }),
  held: fc.integer({ min: 0, max: 50_000 }),
  callMicros: fc.integer({ min: 0, max: 5_000 }),
}).map((view): LaneView => ({
  ...view,
  held: Math.min(view.held, view.leased),
}));

const operations = fc.array(
  fc.oneof(
    fc.record({
      kind: fc.constant("reserve" as const),
      amountMicros: fc.integer({ min: 0, max: 20_000 }),
    }),
    fc.record({
      kind: fc.constant("settle" as const),
      costMicros: fc.integer({ min: 0, max: 20_000 }),
      earmarkMicros: fc.integer({ min: 0, max: 20_000 }),
    }),
    fc.constant({ kind: "grow" as const }),
    fc.constant({ kind: "return" as const }),
  ),
  { maxLength: 12 },
);

/** Settles may only free what was held before the batch, and an earmark never exceeds its cost. */
function feasible(view: LaneView, ops: LaneOperation[]): LaneOperation[] {
  let held = view.held;
  return ops.flatMap((op): LaneOperation[] => {
    if (op.kind !== "settle") return [op];
    const earmarkMicros = Math.min(op.earmarkMicros, op.costMicros, held);
    held -= earmarkMicros;
    return [{ ...op, earmarkMicros }];
  });
}

Deno.test("planBatch() moves unleased + leased only by the costs it settles", () => {
  fc.assert(
    fc.property(views, operations, (view, raw) => {
      const ops = feasible(view, raw);
      const { next, outcomes } = planBatch(view, ops, SIZING);
      const charged = ops.reduce(
        (sum, op) => sum + (op.kind === "settle" ? op.costMicros : 0),
        0,
      );
      assert.equal(
        next.unleased + next.leased,
        view.unleased + view.leased - charged,
      );
      outcomes.forEach((outcome, i) => {
        const op = ops[i];
        if (outcome.kind === "settle" && op.kind === "settle") {
          assert.equal(
            outcome.fromLeaseMicros + outcome.fromUnleasedMicros,
            op.costMicros,
          );
        }
      });
    }),
    { seed: 1, numRuns: 500 },
  );
});

Deno.test("planBatch() never lets reservations hold more than the lease, nor a lease go negative", () => {
  fc.assert(
    fc.property(views, operations, (view, raw) => {
      const { next, outflowMicros } = planBatch(
        view,
        feasible(view, raw),
        SIZING,
      );
      assert.ok(
        next.held >= 0 && next.held <= next.leased,
        "0 <= held <= leased",
      );
      assert.ok(outflowMicros >= 0);
      assert.ok(
        outflowMicros <= Math.max(0, view.leased - view.held),
        "a batch moves out at most the free part it started with",
      );
    }),
    { seed: 2, numRuns: 500 },
  );
});

Deno.test("planBatch() grants a reserve only when the lease's free part and the unleased credits cover it", () => {
  fc.assert(
    fc.property(views, fc.integer({ min: 1, max: 200_000 }), (view, amount) => {
      const { outcomes, next } = planBatch(
        view,
        [{ kind: "reserve", amountMicros: amount }],
        SIZING,
      );
      const [outcome] = outcomes;
      assert.equal(outcome.kind, "reserve");
      const covered =
        amount <= view.leased - view.held + Math.max(0, view.unleased);
      assert.equal(outcome.kind === "reserve" && outcome.granted, covered);
      if (!covered) assert.equal(next.held, view.held);
    }),
    { seed: 3, numRuns: 500 },
  );
});

Deno.test("planBatch() charges a cost above its hold to the free part, then the unleased credits, into debt", () => {
  const { next, outcomes } = planBatch(
    { unleased: 1_000, leased: 3_000, held: 2_500, callMicros: 0 },
    [{ kind: "settle", costMicros: 5_000, earmarkMicros: 2_500 }],
    { aheadCalls: 0, aheadShare: 0.25 },
  );
  assert.deepEqual(outcomes, [{
    kind: "settle",
    fromLeaseMicros: 3_000,
    fromUnleasedMicros: 2_000,
  }]);
  assert.deepEqual(next, {
    unleased: -1_000,
    leased: 0,
    held: 0,
    callMicros: 0,
  });
});

Deno.test("planBatch() returns the free part on return and grows ahead after a short reserve", () => {
  const returned = planBatch(
    { unleased: 0, leased: 10_000, held: 4_000, callMicros: 1_000 },
    [{ kind: "return" }],
    SIZING,
  );
  assert.deepEqual(returned.next, {
    unleased: 6_000,
    leased: 4_000,
    held: 4_000,
    callMicros: 1_000,
  });
  assert.equal(returned.outflowMicros, 6_000);
  const grown = planBatch(
    { unleased: 100_000, leased: 0, held: 0, callMicros: 0 },
    [{ kind: "reserve", amountMicros: 1_000 }],
    SIZING,
  );
  // The call's 1 000 plus four calls ahead.
  assert.equal(grown.next.leased, 5_000);
  assert.equal(grown.next.unleased, 95_000);
  assert.equal(aheadMicros(SIZING, 1_000, 3_000), 0);
});

import assert from "node:assert/strict";
import {
  declaresRunIsolation,
  runIsolation,
  RunState,
  RunTable,
} from "./runs.ts";

function generator(closed: string[], name: string) {
  return (async function* () {
    try {
      yield "prompt";
    } finally {
      closed.push(name);
    }
  })();
}

Deno.test("the run table drops runs idle past their time and the oldest past its cap, closing their generators", async () => {
  const closed: string[] = [];
  const table = new RunTable(50, 2);
  for (const name of ["a", "b"]) {
    const run = generator(closed, name);
    await run.next();
    table.start(name, { generator: run, touched: Date.now() });
  }
  const c = generator(closed, "c");
  await c.next();
  table.start("c", { generator: c, touched: Date.now() }); // past the cap: "a" goes
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(closed, ["a"]);
  assert.equal(table.size, 2);
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.equal(table.get("b"), undefined, "idle past its time");
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(closed.sort(), ["a", "b", "c"]);
  assert.equal(table.size, 0);
});

Deno.test("RunState keeps each run's state apart, keyed as runs are, and forgets what goes untouched", () => {
  const states = new RunState<{ n: number }>({ ttlMs: 60_000, maxRuns: 2 });
  const extra = (runId?: string, sessionId?: string) =>
    ({ _meta: runId ? { run_id: runId } : {}, sessionId }) as never;
  states.set(extra("a"), { n: 1 });
  states.set({ run: "run:b" } as never, { n: 2 });
  assert.deepEqual(states.get(extra("a")), { n: 1 });
  assert.deepEqual(
    states.get(extra("b")),
    { n: 2 },
    "a tool finds the scenario's state",
  );
  assert.equal(states.get(extra("c")), undefined);
  assert.equal(states.get(extra(undefined, "s1")), undefined);
  assert.throws(() => states.require(extra("c")), /No run in progress/);
  assert.throws(() => states.require("x", "No game"), /^Error: No game$/);
  // Past maxRuns the state touched longest ago goes first: b was read last.
  states.get(extra("b"));
  states.set("session:s1", { n: 3 });
  assert.equal(states.size, 2);
  assert.equal(states.get(extra("a")), undefined);
  assert.deepEqual(states.get(extra(undefined, "s1")), { n: 3 });
  states.delete(extra("b"));
  assert.equal(states.get("run:b"), undefined);
});

Deno.test("RunState drops a run's state after ttlMs untouched", async () => {
  const states = new RunState<number>({ ttlMs: 20 });
  states.set("run:a", 1);
  await new Promise((resolve) => setTimeout(resolve, 40));
  states.set("run:b", 2);
  assert.equal(states.get("run:a"), undefined);
  assert.equal(states.get("run:b"), 2);
});

Deno.test("runIsolation declares isolated runs as an experimental capability that declaresRunIsolation reads back", () => {
  assert.deepEqual(runIsolation(true), {
    experimental: { "mcpkit/runs": { isolated: true } },
  });
  assert.equal(declaresRunIsolation(runIsolation(true)), true);
  assert.equal(declaresRunIsolation(runIsolation(false)), false);
  assert.equal(declaresRunIsolation({}), undefined);
  assert.equal(declaresRunIsolation(undefined), undefined);
  assert.equal(
    declaresRunIsolation({
      experimental: { "mcpkit/runs": { isolated: "yes" } },
    }),
    undefined,
  );
});

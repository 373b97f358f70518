import assert from "node:assert/strict";
import { runShutdownHooks } from "./signals.ts";

function quietConsoleError(): { lines: string[]; restore(): void } {
  const original = console.error;
  const lines: string[] = [];
  console.error = (...data: unknown[]) =>
    lines.push(data.map(String).join(" "));
  return { lines, restore: () => console.error = original };
}

Deno.test("runShutdownHooks() runs every hook in order and reports completion", async () => {
  const order: number[] = [];
  const finished = await runShutdownHooks([
    () => void order.push(1),
    () => Promise.resolve(void order.push(2)),
  ], 1_000);
  assert.equal(finished, true);
  assert.deepEqual(order, [1, 2]);
});

Deno.test("runShutdownHooks() logs a throwing hook and still runs the next one", async () => {
  const console = quietConsoleError();
  const order: string[] = [];
  try {
    const finished = await runShutdownHooks([() => {
      throw new Error("Cleanup broke");
    }, () => void order.push("after")], 1_000);
    assert.equal(finished, true);
  } finally {
    console.restore();
  }
  assert.deepEqual(order, ["after"]);
  assert.match(
    console.lines.join("\n"),
    /Shutdown hook failed: Error: Cleanup broke/,
  );
});

Deno.test("runShutdownHooks() cuts off a hanging hook after the timeout", async () => {
  const console = quietConsoleError();
  const hang = Promise.withResolvers<void>();
  const started = performance.now();
  try {
    const finished = await runShutdownHooks([() => hang.promise], 50);
    assert.equal(finished, false);
  } finally {
    console.restore();
    hang.resolve();
  }
  assert.ok(performance.now() - started < 1_000);
  assert.match(console.lines.join("\n"), /did not finish within 50 ms/);
});

import assert from "node:assert/strict";
import { ControlChannel } from "./channel.ts";
import { MAX_TASKS, PARKED_TTL_MS } from "./session_tasks.ts";
import type { TaskDefinition } from "./task_run.ts";
import { encodeFrame, FrameReader } from "./framing.ts";

/** A task that yields its prompt, then a score of 1. */
const TASK: TaskDefinition = {
  options: { name: "echo" },
  fn: async function* () {
    yield "Say something";
    yield 1;
  },
};

function channel(): ControlChannel {
  return new ControlChannel({
    info: { name: "test", version: "0" },
    tasks: () => new Map([["echo", TASK]]),
    bindings: () => [],
  });
}

/**
 * Serves one connection that sends `frames` (built from the replies so
 * far) and hangs up; returns the replies.
 */
async function connection(
  control: ControlChannel,
  frames: ((replies: Record<string, unknown>[]) => unknown)[],
): Promise<Record<string, unknown>[]> {
  const replies: Record<string, unknown>[] = [];
  let pending: Uint8Array = new Uint8Array(0);
  let sent = 0;
  const source = {
    read(p: Uint8Array): Promise<number | null> {
      if (pending.length === 0) {
        if (sent === frames.length) return Promise.resolve(null);
        pending = encodeFrame({
          jsonrpc: "2.0",
          id: sent + 1,
          ...frames[sent++](replies) as Record<string, unknown>,
        });
      }
      const n = Math.min(p.length, pending.length);
      p.set(pending.subarray(0, n));
      pending = pending.slice(n);
      return Promise.resolve(n);
    },
  };
  const conn = {
    write(p: Uint8Array): Promise<number> {
      for (const line of new TextDecoder().decode(p).split("\n")) {
        if (line) replies.push(JSON.parse(line));
      }
      return Promise.resolve(p.length);
    },
    close() {},
  } as unknown as Deno.Conn;
  const reader = new FrameReader(source);
  const first = await reader.read();
  assert.equal(first.kind, "frame");
  await control.session(conn, reader, {
    frame: (first as { value: unknown }).value,
  });
  return replies;
}

const sessionOf = (reply: Record<string, unknown>) =>
  (reply.result as { session_id: string }).session_id;

Deno.test("ControlChannel: a task left behind by a hello that resumes another session is parked, so it expires like any parked task", async () => {
  const control = channel();
  const [helloA] = await connection(control, [
    () => ({ method: "hello" }),
    () => ({ method: "tasks.start", params: { id: "echo" } }),
  ]);
  const a = sessionOf(helloA);
  const replies = await connection(control, [
    () => ({ method: "hello" }),
    () => ({ method: "tasks.start", params: { id: "echo" } }),
    () => ({ method: "hello", params: { session_id: a } }),
  ]);
  assert.equal(sessionOf(replies[2]), a, "the connection resumed A");
  assert.equal(control.tasks, 2);
  control.sweep(Date.now() + PARKED_TTL_MS + 1000);
  assert.equal(control.tasks, 0, "no task is held past the parked time");
});

Deno.test("ControlChannel: tasks whose setups are still running count toward the cap, so concurrent starts cannot pass it", async () => {
  let entered = 0;
  const gate = Promise.withResolvers<void>();
  const slow: TaskDefinition = {
    options: { name: "slow" },
    fn: async function* () {
      entered++;
      await gate.promise;
      yield "Go";
      yield 1;
    },
  };
  const control = new ControlChannel({
    info: { name: "test", version: "0" },
    tasks: () => new Map([["slow", slow]]),
    bindings: () => [],
  });
  const starts = Array.from(
    { length: MAX_TASKS + 1 },
    () =>
      connection(control, [
        () => ({ method: "tasks.start", params: { id: "slow" } }),
      ]),
  );
  const deadline = Date.now() + 5_000;
  while (entered < MAX_TASKS && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(entered, MAX_TASKS, "one setup too many ran");
  gate.resolve();
  const replies = (await Promise.all(starts)).flat();
  const refused = replies.filter((r) => r.error);
  assert.equal(refused.length, 1);
  assert.match(
    (refused[0].error as { message: string }).message,
    /Too many tasks in progress/,
  );
  assert.ok(control.tasks <= MAX_TASKS);
  control.cancelAll();
});

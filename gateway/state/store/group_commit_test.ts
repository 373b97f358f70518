import assert from "node:assert/strict";
import { GroupCommit } from "./group_commit.ts";

Deno.test("GroupCommit commits the jobs of one tick together, a lane at a time, in the order insertAt gives", async () => {
  const commits: [string, string[]][] = [];
  let release: () => void = () => {};
  const engine = new GroupCommit<string>({
    takeBatch: (jobs) => jobs.splice(0, 3),
    run: async (lane, batch) => {
      commits.push([lane, [...batch]]);
      if (batch.includes("slow")) {
        await new Promise<void>((resolve) => release = resolve);
      }
    },
    // Jobs starting with "!" go ahead of the others.
    insertAt: (jobs, job) => {
      if (!job.startsWith("!")) return jobs.length;
      const at = jobs.findIndex((other) => !other.startsWith("!"));
      return at === -1 ? jobs.length : at;
    },
  });
  engine.submit("a", "slow");
  engine.submit("b", "b1");
  await new Promise((resolve) => setTimeout(resolve, 0));
  // Queued while "a" commits: they wait for the next commit, demand first.
  engine.submit("a", "s1");
  engine.submit("a", "s2");
  engine.submit("a", "!r1");
  engine.submit("a", "s3");
  assert.equal(engine.queued("a"), 4);
  const drained = engine.drained("a");
  release();
  await drained;
  await engine.idle();
  assert.deepEqual(commits, [
    ["a", ["slow"]],
    ["b", ["b1"]],
    ["a", ["!r1", "s1", "s2"]],
    ["a", ["s3"]],
  ]);
  assert.equal(engine.queued("a"), 0);
});

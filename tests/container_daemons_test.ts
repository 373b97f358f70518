/**
 * The runner's container runtime over two real Docker daemons on one
 * machine (a second `dockerd` with its own socket and data root): `deno task
 * eval docker://IMAGE --concurrency 4 --repeat 2 --retries 1` sends runs to
 * both; the second stopped mid-run, its runs are run again on the first and
 * no result is lost, and no container is left.
 *
 * The image is the small fixture environment (`tests/fixtures/
 * container_env.ts`, its `wait` scenario holding each run a few seconds so
 * the stop lands mid-run), not the desktop: what is proved is where runs go
 * and what a lost daemon costs, and the second daemon loads a third of the
 * bytes (`docker save | docker load`; about 38 s against 68 s on a shared
 * two-core machine).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { RUNNER_LABEL } from "../eval/environments/docker.ts";
import type { EvalResult } from "../eval/mod.ts";
import {
  buildContainerEnv,
  containersLabelled,
  copyImage,
  DOCKER_MISSING,
  reportSkip,
  ROOT,
  startExtraDaemon,
  untilCount,
} from "./_docker.ts";

reportSkip();
const ignore = DOCKER_MISSING !== undefined;

/** Two tasks, each run twice: four runs of about 8 s, four at a time. */
const TASKS = [{ ms: 8_000 }, { ms: 8_500 }]
  .map((args) => JSON.stringify({ scenario: "wait", args })).join("\n");

Deno.test({
  name:
    "runs spread over two Docker daemons; the second stopped mid-run, --retries 1 loses no result",
  ignore,
  sanitizeResources: false,
  async fn() {
    const image = await buildContainerEnv();
    const extra = await startExtraDaemon();
    const dir = await Deno.makeTempDir({ prefix: "container-daemons-" });
    try {
      await Deno.writeTextFile(join(dir, "tasks.jsonl"), TASKS);
      await copyImage(image, extra.host);
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          join(ROOT, "eval/main.ts"),
          `docker://${image}`,
          "--model",
          "gpt-4o",
          "--concurrency",
          "4",
          "--repeat",
          "2",
          "--tasks",
          join(dir, "tasks.jsonl"),
          "--out",
          join(dir, "results.jsonl"),
          "--timeout",
          "120",
          "--docker-host",
          "unix:///var/run/docker.sock",
          "--docker-host",
          extra.host,
          "--retries",
          "1",
        ],
        cwd: dir,
        env: { NO_COLOR: "1" },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const output = child.output();
      // Both get runs (free capacity ties, then the less loaded one).
      await untilCount(
        "runs on both daemons",
        async () =>
          Math.min(
            (await containersLabelled(RUNNER_LABEL)).length,
            (await containersLabelled(RUNNER_LABEL, extra.host)).length,
          ),
        1,
        120_000,
      );
      // The daemon fails (killed, not stopped: a graceful stop waits for its
      // containers, and an 8 s run could finish inside that wait).
      extra.kill();
      const out = await output;
      const stderr = new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 0, stderr);
      const results: EvalResult[] = (await Deno.readTextFile(
        join(dir, "results.jsonl"),
      )).split("\n").filter((line) => line.trim()).map((line) =>
        JSON.parse(line)
      );
      assert.equal(results.length, 4);
      for (const result of results) {
        assert.equal(result.reward, 1, JSON.stringify(result.error));
      }
      assert.ok(
        results.some((result) => (result.attempts ?? 1) > 1),
        `the stopped daemon's runs were run again: ${
          JSON.stringify(
            results.map((r) => [r.attempts, r.error, r.earlier_attempts]),
          )
        }`,
      );
      assert.deepEqual(
        await containersLabelled(RUNNER_LABEL),
        [],
        "no container is left",
      );
    } finally {
      await extra.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

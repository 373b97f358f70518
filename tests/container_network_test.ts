/**
 * A scenario that asks for the host's network (`network: "host"`, the
 * fixture `tests/fixtures/container_env.ts` in an image of its own) under
 * `deno task eval docker://IMAGE`, against a real Docker daemon:
 *
 * - without the operator's `--docker-network-allow host` the run fails in
 *   one line that says what to add, is not tried again, and leaves no
 *   container;
 * - with it, the run's container has the host's network: the scenario
 *   reaches a port the test listens on (on the host's loopback) and scores 1.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { RUNNER_LABEL } from "../eval/environments/docker.ts";
import type { EvalResult } from "../eval/mod.ts";
import {
  buildContainerEnv,
  CONTAINER_ENV_IMAGE,
  containersLabelled,
  DOCKER_MISSING,
  reportSkip,
  ROOT,
} from "./_docker.ts";

reportSkip();
const ignore = DOCKER_MISSING !== undefined;
const IMAGE = CONTAINER_ENV_IMAGE;

/** `deno task eval docker://IMAGE --scenario reach_host` in `dir`. */
async function evalReachHost(
  dir: string,
  port: number,
  extra: string[],
): Promise<{ code: number; stderr: string; results: EvalResult[] }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      join(ROOT, "eval/main.ts"),
      `docker://${IMAGE}`,
      "--scenario",
      "reach_host",
      "--args",
      JSON.stringify({ port }),
      "--model",
      "gpt-4o",
      "--retries",
      "1",
      "--timeout",
      "120",
      "--out",
      join(dir, "results.jsonl"),
      ...extra,
    ],
    cwd: dir,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = await Deno.readTextFile(join(dir, "results.jsonl"))
    .catch(() => "");
  return {
    code: out.code,
    stderr: new TextDecoder().decode(out.stderr),
    results: text.split("\n").filter((line) => line.trim()).map((line) =>
      JSON.parse(line)
    ),
  };
}

/** A listener on the host's loopback that counts the connections it takes. */
function hostListener(): {
  port: number;
  accepted: () => number;
  close: () => void;
} {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let accepted = 0;
  (async () => {
    for await (const conn of listener) {
      accepted++;
      conn.close();
    }
  })().catch(() => {});
  return {
    port: listener.addr.port,
    accepted: () => accepted,
    close: () => listener.close(),
  };
}

Deno.test({
  name:
    "a docker:// scenario that asks for the host network is refused in one line without --docker-network-allow host, and reaches the host with it",
  ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    await buildContainerEnv();
    const host = hostListener();
    try {
      await t.step("refused without the operator's allowance", async () => {
        const dir = await Deno.makeTempDir({ prefix: "container-network-" });
        const { results, stderr } = await evalReachHost(dir, host.port, []);
        assert.equal(results.length, 1, stderr);
        const [result] = results;
        assert.equal(result.reward, null);
        assert.equal(result.error_kind, "task");
        assert.equal(result.attempts, 1, "a refusal is not tried again");
        assert.match(
          result.error ?? "",
          /^The scenario asks for the host network, which docker:\/\/mcpkit-test\/container-env runs get only when the operator allows it: add --docker-network-allow host$/,
        );
        assert.equal(host.accepted(), 0);
        await Deno.remove(dir, { recursive: true });
      });
      await t.step("given the host network with it", async () => {
        const dir = await Deno.makeTempDir({ prefix: "container-network-" });
        const { results, stderr } = await evalReachHost(dir, host.port, [
          "--docker-network-allow",
          "host",
        ]);
        assert.equal(results.length, 1, stderr);
        const [result] = results;
        assert.equal(result.error, undefined, result.error);
        assert.equal(result.reward, 1);
        assert.equal(
          result.attempts,
          1,
          "starting it again with the network is not a retry",
        );
        assert.ok(host.accepted() >= 1, "the container reached the host");
        await Deno.remove(dir, { recursive: true });
      });
      await t.step(
        "a flag that would grant a bridge is refused in one line",
        async () => {
          const dir = await Deno.makeTempDir({ prefix: "container-network-" });
          const { code, stderr } = await evalReachHost(dir, host.port, [
            "--docker-network-allow",
            "bridge",
          ]);
          assert.equal(code, 2, stderr);
          assert.equal(stderr.trim().split("\n").length, 1, stderr);
          assert.match(stderr, /--docker-network-allow takes host/);
          await Deno.remove(dir, { recursive: true });
        },
      );
    } finally {
      host.close();
    }
    const mine = (await containersLabelled(RUNNER_LABEL)).length;
    assert.equal(mine, 0, "no run container is left");
  },
});

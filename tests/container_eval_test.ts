/**
 * The runner's container runtime against real Docker daemons and the
 * desktop image (`examples/desktop/Dockerfile`): `deno task eval
 * docker://IMAGE --model operator --concurrency 4 --repeat 2` as a real
 * subprocess, with the demo gateway.
 *
 * - Every run scores 1 in a container of its own (`--network none`, CPU and
 *   memory limits), the harness token reaches the container without being on
 *   any command line, and no container is left afterwards.
 * - Runs that time out, and SIGINT mid-run: no container is left.
 * - The runner killed (SIGKILL) mid-run: the next run removes what it left
 *   (and a container labelled with a runner that is gone, made here).
 *
 * Runs over two daemons are `container_daemons_test.ts` (a smaller image).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { RUNNER_LABEL } from "../eval/environments/docker.ts";
import type { EvalResult } from "../eval/mod.ts";
import {
  buildImage,
  containersLabelled,
  DOCKER_MISSING,
  dockerOk,
  reportSkip,
  ROOT,
  untilCount,
} from "./_docker.ts";

reportSkip();
const ignore = DOCKER_MISSING !== undefined;
const IMAGE = "mcpkit-test/desktop";
const TOKEN = `harness-${crypto.randomUUID()}`;

/** Two tasks, each run twice: four runs, four at a time. */
const TASKS = [
  { scenario: "fill_form", args: { word: "lantern" } },
  { scenario: "fill_form", args: { word: "harbor" } },
].map((task) => JSON.stringify(task)).join("\n");

/** `deno task eval docker://…` as a subprocess in `dir`. */
function startEval(dir: string, extra: string[] = []): {
  child: Deno.ChildProcess;
  output: Promise<{ code: number; stdout: string; stderr: string }>;
} {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      join(ROOT, "eval/main.ts"),
      `docker://${IMAGE}`,
      "--model",
      "operator",
      "--concurrency",
      "4",
      "--repeat",
      "2",
      "--tasks",
      join(dir, "tasks.jsonl"),
      "--out",
      join(dir, "results.jsonl"),
      "--timeout",
      "240",
      ...extra,
    ],
    cwd: dir,
    env: { NO_COLOR: "1", MCP_HARNESS_TOKEN: TOKEN },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = child.output().then((out) => ({
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  }));
  return { child, output };
}

async function readResults(dir: string): Promise<EvalResult[]> {
  const text = await Deno.readTextFile(join(dir, "results.jsonl"));
  return text.split("\n").filter((line) => line.trim()).map((line) =>
    JSON.parse(line)
  );
}

async function workDir(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "container-eval-" });
  await Deno.writeTextFile(join(dir, "tasks.jsonl"), TASKS);
  return dir;
}

/** The runs' containers on a daemon (every runner's). */
function runContainers(host?: string): Promise<string[]> {
  return containersLabelled(RUNNER_LABEL, host);
}

/** The arguments of every process on this machine, NUL-joined. */
async function commandLines(): Promise<string[]> {
  const lines: string[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      lines.push(await Deno.readTextFile(`/proc/${entry.name}/cmdline`));
    } catch {
      // ended meanwhile
    }
  }
  return lines;
}

Deno.test({
  name:
    "deno task eval docker://<desktop image> --model operator --concurrency 4 --repeat 2 scores 1 on every run, one limited container each with the token kept off command lines, none left after",
  ignore,
  sanitizeResources: false,
  async fn() {
    await buildImage(IMAGE, "examples/desktop/Dockerfile");
    const dir = await workDir();
    const run = startEval(dir, ["--docker-cpus", "1", "--docker-memory", "1g"]);
    // While runs are going: their containers, their limits, the token.
    await untilCount(
      "a run's container",
      async () => (await runContainers()).length,
      1,
      120_000,
    );
    const [id] = await runContainers();
    const inspected = JSON.parse(await dockerOk(["inspect", id]))[0];
    assert.equal(inspected.HostConfig.NetworkMode, "none");
    assert.equal(inspected.HostConfig.NanoCpus, 1e9);
    assert.equal(inspected.HostConfig.Memory, 1024 ** 3);
    assert.ok(
      (inspected.Config.Env as string[]).includes(
        `MCP_HARNESS_TOKEN=${TOKEN}`,
      ),
      "the container has the harness token",
    );
    assert.ok(
      (await commandLines()).every((line) => !line.includes(TOKEN)),
      "no command line carries the token",
    );

    const { code, stderr } = await run.output;
    assert.equal(code, 0, stderr);
    const results = await readResults(dir);
    assert.equal(results.length, 4);
    for (const result of results) {
      assert.equal(result.reward, 1, JSON.stringify(result.error));
    }
    assert.deepEqual(await runContainers(), [], "no container is left");
    await Deno.remove(dir, { recursive: true });
  },
});

Deno.test({
  name:
    "deno task eval docker://… stopped with SIGINT mid-run leaves no container",
  ignore,
  sanitizeResources: false,
  async fn() {
    await buildImage(IMAGE, "examples/desktop/Dockerfile");
    const dir = await workDir();
    const run = startEval(dir);
    await untilCount(
      "the runs' containers",
      async () => (await runContainers()).length,
      2,
      120_000,
    );
    run.child.kill("SIGINT");
    const { code, stderr } = await run.output;
    assert.equal(code, 130, stderr);
    assert.match(stderr, /Stopping: no new runs/);
    assert.deepEqual(await runContainers(), [], "no container is left");
    await Deno.remove(dir, { recursive: true });
  },
});

Deno.test({
  name:
    "deno task eval docker://… whose runs time out reports them as time-outs and leaves no container",
  ignore,
  sanitizeResources: false,
  async fn() {
    await buildImage(IMAGE, "examples/desktop/Dockerfile");
    const dir = await workDir();
    const run = startEval(dir, ["--repeat", "1", "--timeout", "1"]);
    const { code, stderr } = await run.output;
    assert.equal(code, 1, stderr);
    const results = await readResults(dir);
    assert.equal(results.length, 2);
    for (const result of results) {
      assert.equal(result.error_kind, "timeout", JSON.stringify(result));
    }
    assert.deepEqual(await runContainers(), [], "no container is left");
    await Deno.remove(dir, { recursive: true });
  },
});

Deno.test({
  name:
    "containers a killed runner left are removed by the next run, which scores 1",
  ignore,
  sanitizeResources: false,
  async fn() {
    await buildImage(IMAGE, "examples/desktop/Dockerfile");
    const dir = await workDir();
    const killed = startEval(dir);
    await untilCount(
      "the runs' containers",
      async () => (await runContainers()).length,
      2,
      120_000,
    );
    killed.child.kill("SIGKILL");
    await killed.output;
    // One more orphan for certain: a container labelled with a runner of
    // this machine that is gone (a pid that ended), still running.
    const ended = new Deno.Command("true").spawn();
    await ended.status;
    const orphan = await dockerOk([
      "run",
      "-d",
      "--network",
      "none",
      "--label",
      `${RUNNER_LABEL}=${Deno.hostname()}/${ended.pid}/0`,
      "--entrypoint",
      "sleep",
      IMAGE,
      "600",
    ]);
    assert.ok((await runContainers()).includes(orphan.slice(0, 12)));

    // A kill may come before the first result was written.
    await Deno.remove(join(dir, "results.jsonl")).catch(() => {});
    const next = startEval(dir);
    const { code, stderr } = await next.output;
    assert.equal(code, 0, stderr);
    assert.match(stderr, /left by a runner that was killed/);
    for (const result of await readResults(dir)) {
      assert.equal(result.reward, 1, JSON.stringify(result.error));
    }
    assert.deepEqual(await runContainers(), [], "no container is left");
    await Deno.remove(dir, { recursive: true });
  },
});

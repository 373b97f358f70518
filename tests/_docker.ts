/**
 * A real Docker daemon for the container suites: the one the docker CLI
 * reaches when it answers; otherwise, as root with Debian's `docker.io`
 * installed, a `dockerd --bridge=none --iptables=false` started here and
 * left running for the suites after this one (as `.ci/run` starts it). The
 * base image comes from `scripts/docker_base.ts` (made once, then kept), and
 * each image is built with `docker build --network host` (the daemon's
 * build cache makes a second build of unchanged files a few seconds).
 * {@linkcode DOCKER_MISSING} says why the suites skip when none of that
 * can be had.
 *
 * @module
 */
import { join } from "node:path";
import { BASE_TAGS, docker, ensureBaseImage } from "../scripts/docker_base.ts";

/** The repository root, the build context of every image. */
export const ROOT: string = new URL("..", import.meta.url).pathname;

/** The label every container a suite starts carries, so a crash leaves nothing unnamed. */
export const TEST_LABEL = "org.mcpkit.test";

function commandWorks(cmd: string, args: string[]): boolean {
  try {
    return new Deno.Command(cmd, { args, stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

function daemonAnswers(host?: string): boolean {
  return commandWorks("docker", [
    ...(host ? ["-H", host] : []),
    "version",
    "--format",
    "{{.Server.Version}}",
  ]);
}

/**
 * Starts a `dockerd` detached from this process (it outlives the suite, as a
 * system daemon would) and waits until it answers.
 */
function startDetachedDaemon(
  args: string[],
  host?: string,
): string | undefined {
  const log = Deno.makeTempFileSync({ prefix: "dockerd-", suffix: ".log" });
  new Deno.Command("sh", {
    args: [
      "-c",
      `setsid dockerd ${args.join(" ")} >${log} 2>&1 </dev/null &`,
    ],
  }).outputSync();
  for (let i = 0; i < 150; i++) {
    if (daemonAnswers(host)) return undefined;
    new Deno.Command("sleep", { args: ["0.2"] }).outputSync();
  }
  const said = (() => {
    try {
      return Deno.readTextFileSync(log).trim().split("\n").slice(-2).join(
        " | ",
      );
    } catch {
      return "";
    }
  })();
  return `dockerd did not answer within 30 s (${said}): skipping the container suites`;
}

/** Why the base image cannot be had here, when it is not made yet. */
function baseMissing(): string | undefined {
  if (
    commandWorks("docker", ["image", "inspect", BASE_TAGS[0]]) ||
    (Deno.uid() === 0 && commandWorks("debootstrap", ["--version"]))
  ) return undefined;
  return `No ${
    BASE_TAGS[0]
  } image, and making it needs root and debootstrap (sudo deno run -A scripts/docker_base.ts): skipping the container suites`;
}

/** Why container tests cannot run here, or `undefined` when they can. */
export const DOCKER_MISSING: string | undefined = (() => {
  const daemon = daemonMissing();
  return daemon ?? baseMissing();
})();

function daemonMissing(): string | undefined {
  if (Deno.build.os !== "linux") {
    return "Docker suites run on Linux only: skipping the container suites";
  }
  if (!commandWorks("docker", ["--version"])) {
    return "No docker CLI (apt-get install docker.io): skipping the container suites";
  }
  if (daemonAnswers()) return undefined;
  if (Deno.uid() !== 0) {
    return "No Docker daemon answers and starting dockerd needs root: skipping the container suites";
  }
  if (!commandWorks("dockerd", ["--version"])) {
    return "No Docker daemon answers and no dockerd (apt-get install docker.io): skipping the container suites";
  }
  return startDetachedDaemon(["--bridge=none", "--iptables=false"]);
}

/** Prints the skip reason once, so a skipped suite is never silent. */
export function reportSkip(): void {
  if (DOCKER_MISSING) console.log(DOCKER_MISSING);
}

/**
 * Builds an image from the repository root, after the base image.
 *
 * @param tag The tag to give it.
 * @param dockerfile The Dockerfile, relative to the root.
 * @param options `target` builds up to that stage; `host` picks the daemon.
 * @returns The build's output (for what a skipped step says).
 * @throws {Error} When the build fails, with the end of its output.
 */
export async function buildImage(
  tag: string,
  dockerfile: string,
  options: { target?: string; host?: string } = {},
): Promise<string> {
  await ensureBaseImage({ host: options.host, log: () => {} });
  const built = await dockerBuild(options.host, [
    "build",
    "--network",
    "host",
    "-f",
    join(ROOT, dockerfile),
    "-t",
    tag,
    ...(options.target ? ["--target", options.target] : []),
    ROOT,
  ]);
  if (!built.success) {
    throw new Error(
      `docker build -f ${dockerfile} failed:\n${
        (built.stdout + built.stderr).trim().split("\n").slice(-25).join("\n")
      }`,
    );
  }
  return built.stdout;
}

/** The image of `tests/fixtures/container_env.ts` (see {@linkcode buildContainerEnv}). */
export const CONTAINER_ENV_IMAGE = "mcpkit-test/container-env";

/**
 * Builds {@linkcode CONTAINER_ENV_IMAGE}: the text game's `deps` stage
 * first (its `FROM`), then the fixture on top.
 *
 * @returns The image's tag.
 */
export async function buildContainerEnv(): Promise<string> {
  await buildImage(
    "mcpkit-test/text-game-deps",
    "examples/text_game/Dockerfile",
    { target: "deps" },
  );
  await buildImage(
    CONTAINER_ENV_IMAGE,
    "tests/fixtures/container_env.Dockerfile",
  );
  return CONTAINER_ENV_IMAGE;
}

/**
 * Copies an image from the default daemon into another (`docker save |
 * docker load`): a daemon started here has no registry to pull from.
 *
 * @param image The image.
 * @param host The daemon to load it into.
 * @throws {Error} When either side fails.
 */
export async function copyImage(image: string, host: string): Promise<void> {
  const save = new Deno.Command("docker", {
    args: ["save", image],
    stdout: "piped",
  }).spawn();
  const load = new Deno.Command("docker", {
    args: ["-H", host, "load", "-q"],
    stdin: "piped",
    stdout: "null",
  }).spawn();
  await save.stdout.pipeTo(load.stdin);
  if (!(await save.status).success || !(await load.status).success) {
    throw new Error(`Copying ${image} into ${host} failed`);
  }
}

/**
 * `docker build` with the classic builder: BuildKit's `# syntax` and its
 * frontend images would need a registry.
 */
async function dockerBuild(
  host: string | undefined,
  args: string[],
): Promise<{ success: boolean; stdout: string; stderr: string }> {
  const out = await new Deno.Command("docker", {
    args: [...(host ? ["-H", host] : []), ...args],
    env: { DOCKER_BUILDKIT: "0" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    success: out.success,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

/**
 * `docker` that must succeed.
 *
 * @returns Its stdout, trimmed.
 * @throws {Error} With its stderr when it fails.
 */
export async function dockerOk(
  args: string[],
  host?: string,
): Promise<string> {
  const out = await docker(host, args);
  if (!out.success) {
    throw new Error(`docker ${args.join(" ")} failed: ${out.stderr.trim()}`);
  }
  return out.stdout.trim();
}

/**
 * The ids of the containers carrying a label (running or not).
 *
 * @param label `key` or `key=value`.
 * @param host The daemon.
 */
export async function containersLabelled(
  label: string,
  host?: string,
): Promise<string[]> {
  const out = await dockerOk(
    ["ps", "-aq", "--filter", `label=${label}`],
    host,
  );
  return out.split("\n").filter((line) => line !== "");
}

/**
 * Waits until `check` holds, polling, or fails saying what it waited for.
 *
 * @param what What is waited for, for the error.
 * @param check Whether it holds yet.
 * @param timeoutMs How long to wait.
 * @param pollMs How often to check.
 * @throws {Error} Naming `what` when it does not hold in time.
 */
export async function until(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  pollMs = 250,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  throw new Error(`Timed out after ${timeoutMs / 1000} s waiting for ${what}`);
}

/**
 * Waits until `count()` reaches `n`, polling every 200 ms.
 *
 * @param what What is waited for, for the error.
 * @param count Counts what is there so far.
 * @param n The count to reach.
 * @param timeoutMs How long to wait.
 * @throws {Error} Naming `what` when it is not reached in time.
 */
export function untilCount(
  what: string,
  count: () => Promise<number>,
  n: number,
  timeoutMs: number,
): Promise<void> {
  return until(what, async () => await count() >= n, timeoutMs, 200);
}

/** A second Docker daemon with its own socket, data root, pid file and exec root. */
export interface ExtraDaemon {
  /** `unix:///…/docker.sock`, for `docker -H` and `--docker-host`. */
  host: string;
  /** Stops it (SIGTERM, then SIGKILL after 10 s) and removes its folders. */
  stop(): Promise<void>;
  /** SIGKILLs it, as a host that dies would. */
  kill(): void;
}

/**
 * Starts another `dockerd` on this machine (root only): its own socket,
 * `--data-root`, `--exec-root` and pid file, no bridge, no iptables.
 * Images are not shared: build into it with `buildImage(…, { host })`.
 *
 * @returns The daemon.
 * @throws {Error} When it does not answer within 30 s.
 */
export async function startExtraDaemon(): Promise<ExtraDaemon> {
  const dir = await Deno.makeTempDir({ prefix: "dockerd-extra-" });
  const host = `unix://${dir}/docker.sock`;
  const child = new Deno.Command("dockerd", {
    args: [
      "--bridge=none",
      "--iptables=false",
      "--ip-masq=false",
      `--host=${host}`,
      `--data-root=${dir}/data`,
      `--exec-root=${dir}/exec`,
      `--pidfile=${dir}/docker.pid`,
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  for (let i = 0; i < 150 && !daemonAnswers(host); i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  if (!daemonAnswers(host)) {
    child.kill("SIGKILL");
    throw new Error("The second dockerd did not answer within 30 s");
  }
  let stopped = false;
  return {
    host,
    kill: () => {
      if (!stopped) child.kill("SIGKILL");
      stopped = true;
    },
    stop: async () => {
      if (!stopped) {
        stopped = true;
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await child.status;
        clearTimeout(timer);
      } else await child.status;
      // A killed daemon leaves its containers' shims running: they are
      // named by its directory, and go with it.
      await new Deno.Command("pkill", { args: ["-KILL", "-f", dir] }).output()
        .catch(() => {});
      // The containers' overlay mounts go with the daemon; what is left is files.
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/**
 * The container runtime of `deno task eval docker://IMAGE[:TAG]`: each run
 * in its own container, spoken to over stdio through `docker run -i`.
 *
 * - **Isolation and limits.** `--network none` unless the scenario asks for
 *   `host` and the operator allowed it (`allowNetworks`), never a bridge;
 *   `--cpus`, `--memory` (swap included), a PID limit, every capability
 *   dropped and no privilege gain; `--no-healthcheck` (over stdio there is no
 *   port to check).
 * - **The harness token** and `--env` variables go as `-e NAME` with the
 *   value in the docker CLI's own environment: never on a command line, in
 *   the image, or in a file.
 * - **Removal on every path.** Containers run with `--rm`, are removed with
 *   `docker rm -f` when their connection closes (done, error, time-out,
 *   Ctrl-C), and carry the label {@linkcode RUNNER_LABEL} naming the runner
 *   process; the next runner on the same machine removes those whose runner
 *   is gone (killed), on every daemon it uses.
 * - **Several daemons.** Each `--docker-host` is a daemon; a run goes to the
 *   one with the most free capacity (its CPUs and memory over the limits,
 *   less the runs on it). A daemon that fails is left out for
 *   {@linkcode DOWN_FOR_MS}; its runs fail as environment errors, which
 *   `--retries` runs again on another.
 *
 * @module
 */
import type {
  ContainerNetwork,
  ContainerRuntime,
  LaunchedContainer,
} from "./target.ts";

/** The label of every container the runtime starts: `<machine>/<pid>/<start>` of its runner. */
export const RUNNER_LABEL = "org.mcpkit.eval.runner";

/** How long a daemon that failed is left out, ms. */
export const DOWN_FOR_MS = 60_000;

/** Options of {@linkcode DockerRuntime}. */
export interface DockerRuntimeOptions {
  /** The image, as `docker run` takes it (`name[:tag]`, `name@sha256:…`). */
  image: string;
  /** The daemons (`docker -H` values); none: the CLI's default. */
  hosts?: string[];
  /** CPUs of one container (default {@linkcode DEFAULT_CPUS}). */
  cpus?: number;
  /** Memory of one container, bytes (default {@linkcode DEFAULT_MEMORY_BYTES}). */
  memoryBytes?: number;
  /**
   * The networks beside `none` a scenario may ask for
   * (`--docker-network-allow`); none by default: every run has no network.
   */
  allowNetworks?: ContainerNetwork[];
  /** Arguments after the image (default `["stdio"]`). */
  args?: string[];
  /** The docker CLI (default `docker`). */
  docker?: string;
}

/** CPUs of one container by default. */
export const DEFAULT_CPUS = 1;
/** Memory of one container by default: 2 GiB (a desktop with Chromium fits). */
export const DEFAULT_MEMORY_BYTES = 2 * 1024 ** 3;

/** A daemon and what the runtime knows of it. */
interface Daemon {
  /** `docker -H` value, or `undefined` for the CLI's default. */
  host: string | undefined;
  /** Containers of the limits it holds, from its CPUs and memory (`docker info`). */
  capacity?: number;
  /** This runner's containers on it now. */
  running: number;
  /** Until when it is left out (ms since the epoch). */
  downUntil: number;
}

/**
 * Reads `docker://IMAGE[:TAG]`.
 *
 * @example
 * ```ts
 * import { parseDockerImage } from "./docker.ts";
 *
 * parseDockerImage("docker://desktop-env:1.2"); // "desktop-env:1.2"
 * ```
 *
 * @param spec What the user typed.
 * @returns The image reference.
 * @throws {TypeError} When it is not a Docker image reference: one line.
 */
export function parseDockerImage(spec: string): string {
  const image = spec.replace(/^docker:\/\//, "");
  // A reference never starts with "-": nothing may pass as a docker option.
  if (
    !/^[a-z0-9][a-z0-9._\/:-]{0,254}(@sha256:[a-f0-9]{64})?$/.test(image) ||
    image.includes("//")
  ) {
    throw new TypeError(
      `"${spec}" is not a Docker image: write docker://name[:tag], e.g. docker://desktop-env:latest`,
    );
  }
  return image;
}

/**
 * A memory size as `docker run --memory` takes it (`512m`, `2g`, bytes).
 *
 * @example
 * ```ts
 * import { parseMemory } from "./docker.ts";
 *
 * parseMemory("2g"); // 2147483648
 * ```
 *
 * @param text The size.
 * @returns Bytes.
 * @throws {TypeError} When it is not a size, or under 6 MiB (Docker's least).
 */
export function parseMemory(text: string): number {
  const match = /^(\d+(?:\.\d+)?)([bkmg]?)$/i.exec(text.trim());
  const units: Record<string, number> = {
    "": 1,
    b: 1,
    k: 1024,
    m: 1024 ** 2,
    g: 1024 ** 3,
  };
  const bytes = match
    ? Math.floor(Number(match[1]) * units[match[2].toLowerCase()])
    : NaN;
  if (!Number.isFinite(bytes) || bytes < 6 * 1024 ** 2) {
    throw new TypeError(
      `"${text}" is not a memory size of at least 6m: write e.g. 512m or 2g`,
    );
  }
  return bytes;
}

/**
 * This process as a runner: `<hostname>/<pid>/<start time>`, so a label
 * still names it after the pid is reused.
 *
 * @returns The id.
 */
export function runnerId(): string {
  return `${Deno.hostname()}/${Deno.pid}/${processStart(Deno.pid) ?? 0}`;
}

/** The start time of a process (clock ticks after boot), if it is running. */
function processStart(pid: number): string | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // Field 22, counted after the command's closing parenthesis.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/**
 * Whether a runner id names a runner that is gone: one of this machine
 * whose process ended. A runner of another machine is never judged gone.
 *
 * @param id The label's value.
 * @returns True when its containers are orphans.
 */
export function runnerGone(id: string): boolean {
  const [machine, pid, start] = id.split("/");
  if (machine !== Deno.hostname() || !/^\d+$/.test(pid ?? "")) return false;
  return processStart(Number(pid)) !== start;
}

/**
 * Starts one container per connection on the least loaded of its daemons.
 *
 * @example
 * ```ts ignore
 * import { DockerRuntime } from "./docker.ts";
 * import { Environment } from "./environment.ts";
 *
 * const runtime = new DockerRuntime({ image: "desktop-env" });
 * const env = await Environment.connect({ runtime });
 * await env.close(); // the container is removed
 * ```
 */
export class DockerRuntime implements ContainerRuntime {
  /** `docker://IMAGE`, for messages. */
  readonly name: string;
  readonly #options: Required<Omit<DockerRuntimeOptions, "hosts">>;
  readonly #daemons: Daemon[];
  readonly #runner = runnerId();
  #swept?: Promise<void>;

  /**
   * Creates the runtime; nothing starts until a connection.
   *
   * @param options The image, daemons and limits.
   */
  constructor(options: DockerRuntimeOptions) {
    this.name = `docker://${options.image}`;
    this.#options = {
      image: options.image,
      cpus: options.cpus ?? DEFAULT_CPUS,
      memoryBytes: options.memoryBytes ?? DEFAULT_MEMORY_BYTES,
      allowNetworks: options.allowNetworks ?? [],
      args: options.args ?? ["stdio"],
      docker: options.docker ?? "docker",
    };
    const hosts = options.hosts?.length ? options.hosts : [undefined];
    this.#daemons = [...new Set(hosts)].map((host) => ({
      host,
      running: 0,
      downUntil: 0,
    }));
  }

  /**
   * Starts a container: picks a daemon, removes the orphans of killed
   * runners first (once), and returns the `docker run -i` command whose
   * stdio is the environment's.
   *
   * @param variables Names of the variables to pass in (their values are in
   * the environment of the command's process).
   * @param network The container's network (default `none`).
   * @returns The command and its release, which removes the container.
   * @throws {TypeError} When the network is not one the operator allowed.
   */
  async launch(
    variables: string[],
    network: ContainerNetwork = "none",
  ): Promise<LaunchedContainer> {
    const refusal = this.networkRefusal(network);
    if (refusal) throw new TypeError(refusal);
    this.#swept ??= this.#sweep();
    await this.#swept;
    await this.#learnCapacities();
    // Chosen and counted in one step: launches at once must see each other.
    const daemon = this.#pick();
    daemon.running++;
    const name = `mcpkit-eval-${crypto.randomUUID().slice(0, 12)}`;
    const { cpus, memoryBytes, image, args } = this.#options;
    let released = false;
    return {
      command: this.#options.docker,
      args: [
        ...hostArgs(daemon.host),
        "run",
        "--rm",
        "-i",
        "--name",
        name,
        "--label",
        `${RUNNER_LABEL}=${this.#runner}`,
        "--network",
        network,
        "--cpus",
        String(cpus),
        "--memory",
        String(memoryBytes),
        "--memory-swap",
        String(memoryBytes),
        "--pids-limit",
        "2048",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--no-healthcheck",
        ...variables.flatMap((variable) => ["-e", variable]),
        image,
        ...args,
      ],
      where: daemon.host ?? "the default Docker daemon",
      hostFailed: async () => {
        if (await this.#answers(daemon.host)) return false;
        daemon.downUntil = Date.now() + DOWN_FOR_MS;
        return true;
      },
      release: async () => {
        if (released) return;
        released = true;
        daemon.running--;
        const removed = await this.#docker(daemon.host, ["rm", "-f", name]);
        if (!removed.success && !/No such container/i.test(removed.stderr)) {
          // The container may outlive a daemon that stopped answering: the
          // next runner's sweep removes it; new runs go elsewhere meanwhile.
          if (!await this.#answers(daemon.host)) {
            daemon.downUntil = Date.now() + DOWN_FOR_MS;
          }
        }
      },
    };
  }

  /**
   * Why a scenario may not have this network: `none` always may, `host`
   * only with `--docker-network-allow host`, anything else never.
   *
   * @param network What the scenario asks for.
   * @returns One line to act on, or `undefined` when it is allowed.
   */
  networkRefusal(network: string): string | undefined {
    if (network === "none") return undefined;
    if (network !== "host") {
      // The name comes from the environment: quoted and cut, one line.
      return `A scenario asked for the network ${
        JSON.stringify(network.slice(0, 40))
      }: a docker:// run has none, or host when the operator allows it`;
    }
    if (this.#options.allowNetworks.includes(network)) return undefined;
    return `The scenario asks for the host network, which ${this.name} runs get only when the operator allows it: add --docker-network-allow host`;
  }

  /** Asks each daemon not known yet (and not left out) for its capacity. */
  async #learnCapacities(): Promise<void> {
    const now = Date.now();
    await Promise.all(this.#daemons.map(async (daemon) => {
      if (daemon.downUntil > now || daemon.capacity !== undefined) return;
      const capacity = await this.#capacity(daemon.host);
      if (capacity === undefined) daemon.downUntil = Date.now() + DOWN_FOR_MS;
      else daemon.capacity = capacity;
    }));
  }

  /** The daemon with the most free capacity among those that answer. */
  #pick(): Daemon {
    const now = Date.now();
    const up = this.#daemons.filter((daemon) =>
      daemon.downUntil <= now && daemon.capacity !== undefined
    );
    if (up.length === 0) {
      throw new DockerUnavailable(
        `No Docker daemon answers (${
          this.#daemons.map((d) => d.host ?? "the default").join(", ")
        }): start dockerd, or check --docker-host`,
      );
    }
    // Ties go to the first listed; a full daemon still takes runs (the
    // kernel shares its CPUs), the least overfull first.
    return up.reduce((best, daemon) =>
      daemon.capacity! - daemon.running > best.capacity! - best.running
        ? daemon
        : best
    );
  }

  /** How many containers of the limits a daemon holds, or `undefined` when it does not answer. */
  async #capacity(host: string | undefined): Promise<number | undefined> {
    const info = await this.#docker(host, [
      "info",
      "--format",
      "{{.NCPU}} {{.MemTotal}}",
    ]);
    if (!info.success) return undefined;
    const [cpus, memory] = info.stdout.trim().split(" ").map(Number);
    if (!Number.isFinite(cpus) || !Number.isFinite(memory)) return undefined;
    return Math.max(
      1,
      Math.min(
        Math.floor(cpus / this.#options.cpus),
        Math.floor(memory / this.#options.memoryBytes),
      ),
    );
  }

  /** Removes, on every daemon, the containers of runners of this machine that are gone. */
  async #sweep(): Promise<void> {
    await Promise.all(this.#daemons.map(async (daemon) => {
      const listed = await this.#docker(daemon.host, [
        "ps",
        "-a",
        "--filter",
        `label=${RUNNER_LABEL}`,
        "--format",
        `{{.ID}} {{.Label "${RUNNER_LABEL}"}}`,
      ]);
      if (!listed.success) return;
      const orphans = listed.stdout.split("\n").map((line) => line.split(" "))
        .filter(([id, runner]) => id && runner && runnerGone(runner))
        .map(([id]) => id);
      if (orphans.length === 0) return;
      console.error(
        `Removing ${orphans.length} container(s) left by a runner that was killed (${
          daemon.host ?? "the default Docker daemon"
        })`,
      );
      await this.#docker(daemon.host, ["rm", "-f", ...orphans]);
    }));
  }

  async #answers(host: string | undefined): Promise<boolean> {
    return (await this.#docker(host, [
      "version",
      "--format",
      "{{.Server.Version}}",
    ]))
      .success;
  }

  async #docker(
    host: string | undefined,
    args: string[],
  ): Promise<{ success: boolean; stdout: string; stderr: string }> {
    try {
      const out = await new Deno.Command(this.#options.docker, {
        args: [...hostArgs(host), ...args],
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(30_000),
      }).output();
      const decoder = new TextDecoder();
      return {
        success: out.success,
        stdout: decoder.decode(out.stdout),
        stderr: decoder.decode(out.stderr),
      };
    } catch (error) {
      return { success: false, stdout: "", stderr: String(error) };
    }
  }
}

/** No daemon of the runtime answers. */
export class DockerUnavailable extends Error {
  /**
   * Creates the error.
   *
   * @param message Which daemons, and what to do.
   */
  constructor(message: string) {
    super(message);
    this.name = "DockerUnavailable";
  }
}

function hostArgs(host: string | undefined): string[] {
  return host === undefined ? [] : ["-H", host];
}

/**
 * `deno task eval docker://IMAGE[:TAG] [args…]` on the command line: the
 * image and the `--docker-*` options made into a {@linkcode DockerRuntime}
 * target, each mistake one {@linkcode UsageError} line.
 *
 * @module
 */
import { UsageError } from "./options.ts";
import type { EnvironmentTarget } from "../environments/target.ts";
import {
  DockerRuntime,
  parseDockerImage,
  parseMemory,
} from "../environments/docker.ts";

/** The `--docker-*` options as `parseArgs` gives them. */
export interface DockerFlags {
  /** `--docker-host`, repeatable. */
  "docker-host"?: string[];
  /** `--docker-cpus`. */
  "docker-cpus"?: string;
  /** `--docker-memory`. */
  "docker-memory"?: string;
  /** `--docker-network-allow`: a network a scenario may ask for. */
  "docker-network-allow"?: string;
}

const DOCKER_FLAGS: readonly (keyof DockerFlags)[] = [
  "docker-host",
  "docker-cpus",
  "docker-memory",
  "docker-network-allow",
];

/**
 * The container target of a `docker://` environment, or `undefined` for
 * any other (and then no `--docker-*` option may be given).
 *
 * @example
 * ```ts
 * import { dockerTarget } from "./docker_options.ts";
 *
 * const target = dockerTarget("docker://desktop-env", [], { "docker-cpus": "2" });
 * target && "runtime" in target; // true
 * ```
 *
 * @param spec The environment as typed.
 * @param args Arguments after it (default `stdio`).
 * @param flags The `--docker-*` options.
 * @returns The target, or `undefined` when `spec` is not `docker://`.
 * @throws {UsageError} For a bad image, size, count, host or network.
 */
export function dockerTarget(
  spec: string,
  args: string[],
  flags: DockerFlags,
): EnvironmentTarget | undefined {
  if (!spec.startsWith("docker://")) {
    const given = DOCKER_FLAGS.find((name) => flags[name] !== undefined);
    if (given) {
      throw new UsageError(
        `--${given} applies to docker://IMAGE environments only`,
      );
    }
    return undefined;
  }
  const cpus = flags["docker-cpus"] === undefined
    ? undefined
    : Number(flags["docker-cpus"]);
  if (
    cpus !== undefined && (!Number.isFinite(cpus) || cpus <= 0 || cpus > 1024)
  ) {
    throw new UsageError(
      `--docker-cpus must be a positive number, got "${flags["docker-cpus"]}"`,
    );
  }
  const allowed = flags["docker-network-allow"];
  // A bridge would reach the daemon's other containers: only the host's
  // network (what the operator's machine reaches anyway) may be granted.
  if (allowed !== undefined && allowed !== "host") {
    throw new UsageError(
      `--docker-network-allow takes host (runs have no network otherwise), got "${allowed}"`,
    );
  }
  for (const host of flags["docker-host"] ?? []) {
    if (!/^(unix|tcp|ssh|npipe):\/\/\S+$/.test(host)) {
      throw new UsageError(
        `--docker-host must be unix:///…, tcp://host:port or ssh://…, got "${host}"`,
      );
    }
  }
  try {
    return {
      runtime: new DockerRuntime({
        image: parseDockerImage(spec),
        args: args.length > 0 ? args : undefined,
        hosts: flags["docker-host"],
        cpus,
        memoryBytes: flags["docker-memory"] === undefined
          ? undefined
          : parseMemory(flags["docker-memory"]),
        allowNetworks: allowed === "host" ? ["host"] : [],
      }),
    };
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

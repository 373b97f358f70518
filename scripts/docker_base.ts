/**
 * Makes the base image the Dockerfiles start `FROM` without any image
 * registry: a Debian bookworm rootfs from Debian's archive (`debootstrap
 * --variant=minbase`), the Deno binary this process runs (the pinned one), a
 * `deno` user (uid 1993, as in Deno's official images), `DENO_DIR=/deno-dir`
 * and the host's CA bundle (`DENO_CERT`, `SSL_CERT_FILE`), so
 * `apt-get` and `deno cache` work in `docker build --network host` behind a
 * proxy that re-signs TLS. `docker import` tags it as every name in
 * {@linkcode BASE_TAGS}; a tag that exists already is kept (idempotent).
 *
 * `DENORT_BIN` (a local `denort` runtime of the same version) is copied in
 * and named by the image's own `DENORT_BIN`, which `deno compile` reads
 * instead of downloading denort, so a compiling build
 * (`examples/text_game/Dockerfile`) needs no download either.
 *
 * Run as root: `deno run -A scripts/docker_base.ts [--host unix:///…]`.
 *
 * @module
 */
import { join } from "node:path";

/** The Deno version of the image: the binary this process runs. */
export const DENO_VERSION: string = Deno.version.deno;

/**
 * Every name the local base image is tagged as: the names the repository's
 * Dockerfiles start `FROM`. The stand-in for distroless is the same Debian
 * rootfs (a superset of it: glibc, libgcc, CA bundle, a `nonroot` user).
 */
export const BASE_TAGS: readonly string[] = [
  `denoland/deno:debian-${DENO_VERSION}`,
  `denoland/deno:${DENO_VERSION}`,
  "gcr.io/distroless/cc-debian12:latest",
];

const HOST_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";
/**
 * Where the image keeps the host's bundle: apart from Debian's own, which
 * `ca-certificates` rebuilds (without the host's) when a build installs it.
 */
const CA_BUNDLE = "/etc/ssl/host-ca-bundle.crt";

/** Options of {@linkcode ensureBaseImage}. */
export interface BaseImageOptions {
  /** The daemon (`docker -H`); default the docker CLI's own default. */
  host?: string;
  /** Progress lines (default: stderr). */
  log?: (line: string) => void;
}

/**
 * `docker` with the daemon chosen, output captured.
 *
 * @param host The daemon, or `undefined` for the CLI's default.
 * @param args The docker arguments.
 * @returns The exit status and output.
 */
export async function docker(
  host: string | undefined,
  args: string[],
  stdin?: Uint8Array,
): Promise<{ success: boolean; stdout: string; stderr: string }> {
  const child = new Deno.Command("docker", {
    args: [...(host ? ["-H", host] : []), ...args],
    stdin: stdin ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin) {
    const writer = child.stdin.getWriter();
    await writer.write(stdin);
    await writer.close();
  }
  const out = await child.output();
  const decoder = new TextDecoder();
  return {
    success: out.success,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

/** Whether the daemon has an image by that name. */
async function hasImage(
  host: string | undefined,
  tag: string,
): Promise<boolean> {
  return (await docker(host, ["image", "inspect", "--format", "{{.Id}}", tag]))
    .success;
}

/** Runs a command to completion, throwing its stderr's end when it fails. */
async function run(cmd: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, {
    args,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const said = new TextDecoder().decode(out.stderr).trim().split("\n")
      .slice(-5).join("\n");
    throw new Error(`${cmd} ${args.join(" ")} failed: ${said}`);
  }
}

/**
 * The Debian archive apt uses on this host (its `sources.list*`), so the
 * rootfs comes from the same mirror; deb.debian.org otherwise.
 */
export function debianMirror(): string {
  const files = ["/etc/apt/sources.list"];
  try {
    for (const entry of Deno.readDirSync("/etc/apt/sources.list.d")) {
      files.push(join("/etc/apt/sources.list.d", entry.name));
    }
  } catch {
    // no sources.list.d: the main file only
  }
  for (const file of files) {
    let text;
    try {
      text = Deno.readTextFileSync(file);
    } catch {
      continue;
    }
    const uri = /^URIs:\s*(\S+\/debian)\/?\s*$/m.exec(text)?.[1] ??
      /^deb\s+(?:\[[^\]]*\]\s+)?(\S+\/debian)\/?\s+bookworm\s/m.exec(text)
        ?.[1];
    if (uri) return uri;
  }
  return "http://deb.debian.org/debian";
}

/**
 * Makes the base image unless every tag of {@linkcode BASE_TAGS} exists.
 *
 * @example
 * ```ts ignore
 * import { ensureBaseImage } from "./docker_base.ts";
 *
 * const built = await ensureBaseImage(); // false: it was there already
 * ```
 *
 * @param options The daemon and where progress goes.
 * @returns Whether it was built now (false: it was there already).
 * @throws {Error} When not root, or debootstrap, chroot or docker fail: the
 * message says which step and the end of its output.
 */
export async function ensureBaseImage(
  options: BaseImageOptions = {},
): Promise<boolean> {
  const { host } = options;
  const log = options.log ?? ((line: string) => console.error(line));
  const missing = [];
  for (const tag of BASE_TAGS) {
    if (!await hasImage(host, tag)) missing.push(tag);
  }
  if (missing.length === 0) return false;
  const [first] = BASE_TAGS;
  if (missing.length < BASE_TAGS.length && !missing.includes(first)) {
    for (const tag of missing) await docker(host, ["tag", first, tag]);
    return false;
  }
  if (Deno.uid() !== 0) {
    throw new Error("Making the base image needs root (debootstrap, chroot)");
  }
  const work = await Deno.makeTempDir({ prefix: "mcpkit-base-" });
  const root = join(work, "rootfs");
  try {
    const mirror = debianMirror();
    log(`base image: debootstrap --variant=minbase bookworm from ${mirror}`);
    await run("debootstrap", [
      "--variant=minbase",
      "bookworm",
      root,
      mirror,
    ]);
    await Deno.copyFile(Deno.execPath(), join(root, "usr/bin/deno"));
    await Deno.chmod(join(root, "usr/bin/deno"), 0o755);
    // The host's bundle: what it trusts (a re-signing proxy included) the
    // builds trust too.
    await Deno.copyFile(HOST_CA_BUNDLE, join(root, CA_BUNDLE.slice(1)));
    await run("chroot", [
      root,
      "/bin/sh",
      "-c",
      [
        "groupadd --gid 1993 deno",
        "useradd --uid 1993 --gid deno --create-home --shell /bin/sh deno",
        "groupadd --gid 65532 nonroot",
        "useradd --uid 65532 --gid nonroot --no-create-home --shell /usr/sbin/nologin nonroot",
        "mkdir -p /deno-dir",
        "chown deno:deno /deno-dir",
        "apt-get clean",
        "rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/*.log",
      ].join(" && "),
    ]);
    const denort = await placeDenort(root, log);
    log(`base image: docker import as ${BASE_TAGS.join(", ")}`);
    const tar = await new Deno.Command("tar", {
      args: ["-C", root, "--numeric-owner", "-c", "."],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!tar.success) {
      throw new Error(
        `tar of the rootfs failed: ${new TextDecoder().decode(tar.stderr)}`,
      );
    }
    const imported = await docker(host, [
      "import",
      ...[
        `ENV DENO_DIR=/deno-dir DENO_CERT=${CA_BUNDLE} SSL_CERT_FILE=${CA_BUNDLE} DENO_NO_UPDATE_CHECK=1`,
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        'CMD ["deno", "repl"]',
        ...denort,
      ].flatMap((change) => ["--change", change]),
      "-",
      first,
    ], tar.stdout);
    if (!imported.success) {
      throw new Error(`docker import failed: ${imported.stderr.trim()}`);
    }
    for (const tag of BASE_TAGS.slice(1)) {
      await docker(host, ["tag", first, tag]);
    }
    return true;
  } finally {
    // debootstrap mounts /proc and /sys in the rootfs and unmounts them
    // when it succeeds; one that failed may leave them.
    for (const mount of ["proc", "sys"]) {
      await new Deno.Command("umount", {
        args: ["-l", join(root, mount)],
        stdout: "null",
        stderr: "null",
      }).output().catch(() => {});
    }
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}

/**
 * Copies `DENORT_BIN` into the rootfs, for the image's own `DENORT_BIN`
 * (which `deno compile` reads instead of downloading denort).
 *
 * @returns The `--change` lines that set it, none without `DENORT_BIN`.
 */
async function placeDenort(
  root: string,
  log: (line: string) => void,
): Promise<string[]> {
  const denort = Deno.env.get("DENORT_BIN");
  if (!denort) {
    log(
      "base image: no DENORT_BIN: a build that runs `deno compile` will need to download denort",
    );
    return [];
  }
  await Deno.copyFile(denort, join(root, "usr/local/bin/denort"));
  await Deno.chmod(join(root, "usr/local/bin/denort"), 0o755);
  log(`base image: denort from ${denort} for deno compile`);
  return ["ENV DENORT_BIN=/usr/local/bin/denort"];
}

if (import.meta.main) {
  const hostAt = Deno.args.indexOf("--host");
  const host = hostAt >= 0 ? Deno.args[hostAt + 1] : undefined;
  try {
    const built = await ensureBaseImage({ host });
    console.error(
      built
        ? `base image: built ${BASE_TAGS.join(", ")}`
        : `base image: ${BASE_TAGS[0]} is there already`,
    );
  } catch (error) {
    console.error((error as Error).message);
    Deno.exit(1);
  }
}

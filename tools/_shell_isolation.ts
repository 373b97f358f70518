/**
 * How the `bash` tool keeps its shell in: a PID namespace, a subreaper, or
 * a process group, probed once per process (see {@linkcode ShellIsolation}).
 *
 * @module
 */

/**
 * How a shell is kept in, best first:
 *
 * - `namespace`: the first process of a PID namespace of its own with its
 *   own `/proc` (`unshare --pid --fork --kill-child --mount-proc`, with
 *   `--user` when the process is not root). When the shell dies the kernel
 *   kills every process left in the namespace, whatever it did to its
 *   process group or session, and nothing it runs sees the processes outside.
 * - `reaper`: where namespaces are refused (a container under Docker's
 *   default seccomp profile), the shell runs under a small Deno process that
 *   is a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`, `_reaper.ts`):
 *   double-forked and `setsid` processes are re-parented to it, and it kills
 *   everything below it when the shell is killed. The shell sees the host's
 *   `/proc` (the harness token is kept out of the environment's
 *   `/proc/<pid>/environ` by `MCPServer` itself).
 * - `session`: a process group of its own, for hosts where neither works:
 *   a process that double-forks out of it outlives the shell.
 *
 * Every one starts in a session (and so a process group) of its own
 * (`setsid`): the shell shares no group with the environment, so
 * `kill -9 0` or `kill -9 -PGID` from the agent reaches only the shell's own
 * processes. In a namespace the shell's `$PPID` is 0, and without its own
 * group `kill -9 $PPID` killed the environment, the runner that started it
 * and everything else in their group.
 */
export type ShellIsolation = "namespace" | "reaper" | "session";

/** The `unshare` arguments tried, in order: as root, then in a user namespace. */
const UNSHARE_VARIANTS: readonly (readonly string[])[] = [
  ["--pid", "--fork", "--kill-child", "--mount-proc"],
  [
    "--user",
    "--map-current-user",
    "--pid",
    "--fork",
    "--kill-child",
    "--mount-proc",
  ],
];

/** How a shell is started: the command line before `bash`. */
export interface ShellLauncher {
  /** Which isolation it gives. */
  isolation: ShellIsolation;
  /** The command and arguments `bash` is appended to. */
  prefix: string[];
  /** Why better isolations are not used here. */
  why?: string;
}

/** The reaper's command line (`_reaper.ts` under this Deno). */
function reaperPrefix(): string[] {
  return [
    Deno.execPath(),
    "run",
    "--quiet",
    "--no-config",
    "--no-lock",
    // Deno lets only --allow-all read /proc; the reaper runs the agent's
    // shell, which can do anything anyway.
    "--allow-all",
    new URL("./_reaper.ts", import.meta.url).href,
  ];
}

async function runs(prefix: string[]): Promise<string | undefined> {
  try {
    const probe = await new Deno.Command(prefix[0], {
      args: [...prefix.slice(1), "true"],
      stdout: "null",
      stderr: "piped",
      clearEnv: true,
    }).output();
    if (probe.success) return undefined;
    return new TextDecoder().decode(probe.stderr).trim().split("\n")[0] ||
      `${prefix[0]} exited ${probe.code}`;
  } catch (error) {
    return error instanceof Deno.errors.NotFound
      ? `${prefix[0]} is not installed`
      : (error as Error).message;
  }
}

let launcherProbe: Promise<ShellLauncher> | undefined;

/**
 * How this host keeps a shell in (probed once per process: `unshare`, then
 * the reaper, each run on `true`).
 *
 * @returns The isolation, its command line, and why better ones are not used.
 */
export function shellIsolation(): Promise<ShellLauncher> {
  return launcherProbe ??= (async () => {
    let why = "";
    for (const variant of UNSHARE_VARIANTS) {
      const prefix = ["setsid", "unshare", ...variant];
      const failed = await runs(prefix);
      if (failed === undefined) return { isolation: "namespace", prefix };
      why = failed;
    }
    const reaper = ["setsid", ...reaperPrefix()];
    const failed = await runs(reaper);
    if (failed === undefined) {
      console.error(
        `bash: no PID namespace here (${why}): the shell runs under a subreaper instead, and can read the host's /proc`,
      );
      return { isolation: "reaper", prefix: reaper, why };
    }
    console.error(
      `bash: no PID namespace (${why}) and no subreaper (${failed}) here: a process that leaves the shell's session can outlive it`,
    );
    return { isolation: "session", prefix: ["setsid"], why };
  })();
}

/**
 * `DENO_DIR` of this process (its default when unset), for the reaper.
 *
 * @returns `{DENO_DIR}`, or nothing when it cannot be told.
 */
export function denoDir(): Record<string, string> {
  try {
    const home = Deno.env.get("HOME");
    const cache = Deno.env.get("XDG_CACHE_HOME") ??
      (home ? `${home}/.cache` : undefined);
    const dir = Deno.env.get("DENO_DIR") ?? (cache && `${cache}/deno`);
    return dir ? { DENO_DIR: dir } : {};
  } catch {
    return {};
  }
}

/**
 * The launcher of a chosen isolation (what `BashToolOptions.isolation` asks).
 *
 * @param isolation The isolation.
 * @returns Its command line.
 */
export function launcherFor(isolation: ShellIsolation): ShellLauncher {
  if (isolation === "reaper") {
    return { isolation, prefix: ["setsid", ...reaperPrefix()] };
  }
  if (isolation === "session") return { isolation, prefix: ["setsid"] };
  return { isolation, prefix: ["setsid", "unshare", ...UNSHARE_VARIANTS[0]] };
}

/**
 * The processes below `root` in the process tree (Linux `/proc`; none
 * where it cannot be read).
 *
 * @param root A process id.
 * @returns Its descendants' ids.
 */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  try {
    for (const entry of Deno.readDirSync("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      let stat: string;
      try {
        stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      } catch {
        continue; // it ended meanwhile
      }
      // "pid (comm) state ppid …": comm may hold spaces and parentheses.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const pid = Number(entry.name);
      children.set(ppid, [...children.get(ppid) ?? [], pid]);
    }
  } catch {
    return [];
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/**
 * The shell's reaper, for hosts without PID namespaces (a container under
 * Docker's default seccomp profile): run as `deno run --no-config
 * --allow-all _reaper.ts <command> [args…]` (Deno lets only `--allow-all`
 * read `/proc`),
 * it makes itself a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`), so
 * every process below it that double-forks or calls `setsid` is re-parented
 * to it rather than to PID 1, runs the command on its own stdin and stdout,
 * and on SIGTERM or when the command ends kills everything below it, again
 * and again until nothing is left. Exits 3 when it cannot become a
 * subreaper.
 *
 * @module
 */

import { descendants } from "./_shell_isolation.ts";

const PR_SET_CHILD_SUBREAPER = 36;

/** Kills everything below this process until nothing is left (bounded). */
function reapAll(): void {
  for (let round = 0; round < 50; round++) {
    const left = descendants(Deno.pid);
    if (left.length === 0) return;
    for (const pid of left) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
  }
}

if (import.meta.main) {
  try {
    const libc = Deno.dlopen("libc.so.6", {
      prctl: {
        parameters: ["i32", "u64", "u64", "u64", "u64"],
        result: "i32",
      },
    });
    if (libc.symbols.prctl(PR_SET_CHILD_SUBREAPER, 1n, 0n, 0n, 0n) !== 0) {
      Deno.exit(3);
    }
  } catch {
    Deno.exit(3);
  }
  const [command, ...args] = Deno.args;
  if (!command) Deno.exit(0);
  // DENO_DIR was the reaper's own, not the shell's.
  const env = Deno.env.toObject();
  delete env.DENO_DIR;
  const child = new Deno.Command(command, {
    args,
    env,
    clearEnv: true,
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  Deno.addSignalListener("SIGTERM", () => {
    reapAll();
    Deno.exit(0);
  });
  const status = await child.status;
  reapAll();
  Deno.exit(status.code);
}

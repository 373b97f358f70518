/**
 * Child processes for the benchmarks: start one, wait for the line that says
 * it is ready, read its memory from `/proc`, and stop it.
 *
 * @module
 */

/** A running child process and what it printed so far. */
export interface Child {
  /** The process id. */
  pid: number;
  /** Every line printed on stdout and stderr, in arrival order. */
  lines: string[];
  /** Sends SIGTERM (then SIGKILL after two seconds) and waits for the exit. */
  stop(): Promise<void>;
}

/** Options of {@linkcode spawnChild}. */
export interface SpawnOptions {
  /** Arguments after the command. */
  args: string[];
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** The working directory. */
  cwd?: string;
  /** Resolves once a line matches; the match is returned. */
  ready: RegExp;
  /** How long to wait for the ready line, ms (default 30 s). */
  timeoutMs?: number;
}

const ANSI_COLOUR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

async function pumpLines(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  const lines = stream.pipeThrough(new TextDecoderStream());
  let rest = "";
  for await (const chunk of lines) {
    const parts = (rest + chunk).split("\n");
    rest = parts.pop() ?? "";
    for (const part of parts) onLine(part);
  }
  if (rest !== "") onLine(rest);
}

/**
 * Starts a process and waits until it prints a line matching `ready`.
 *
 * @param command The executable.
 * @param options Arguments, environment, ready pattern.
 * @returns The child and the ready line's match.
 */
export async function spawnChild(
  command: string,
  options: SpawnOptions,
): Promise<{ child: Child; match: RegExpMatchArray }> {
  const process = new Deno.Command(command, {
    args: options.args,
    env: options.env,
    cwd: options.cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const { promise: readyLine, resolve } = Promise.withResolvers<
    RegExpMatchArray
  >();
  const onLine = (line: string) => {
    // Strip ANSI colours (Portkey prints its URL in bold green).
    const plain = line.replace(ANSI_COLOUR, "");
    lines.push(plain);
    const match = plain.match(options.ready);
    if (match) resolve(match);
  };
  const pumps = Promise.all([
    pumpLines(process.stdout, onLine),
    pumpLines(process.stderr, onLine),
  ]);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `Process "${command} ${options.args.join(" ")}" was not ready: ${
              lines.slice(-5).join(" | ")
            }`,
          ),
        ),
      options.timeoutMs ?? 30_000,
    );
  });
  const exited = process.status.then((status) => {
    throw new Error(
      `Process "${command}" exited with code "${status.code}" before it was ready: ${
        lines.slice(-5).join(" | ")
      }`,
    );
  });
  let stopped = false;
  const child: Child = {
    pid: process.pid,
    lines,
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        process.kill("SIGTERM");
      } catch {
        // Already gone.
      }
      const killer = setTimeout(() => {
        try {
          process.kill("SIGKILL");
        } catch {
          // Already gone.
        }
      }, 2000);
      await process.status;
      clearTimeout(killer);
      await pumps;
    },
  };
  try {
    const match = await Promise.race([readyLine, timeout, exited]);
    return { child, match };
  } catch (error) {
    await child.stop();
    throw error;
  } finally {
    clearTimeout(timer);
    exited.catch(() => {});
  }
}

/** Resident memory of a process, from `/proc/<pid>/status`. */
export interface Memory {
  /** Current resident set, MiB. */
  rssMiB: number;
  /** Peak resident set (VmHWM), MiB. */
  peakMiB: number;
}

/**
 * Reads a process's current and peak resident memory.
 *
 * @param pid The process id.
 * @returns Its memory in MiB.
 */
export async function readMemory(pid: number): Promise<Memory> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const field = (name: string) => {
    const match = status.match(new RegExp(`^${name}:\\s+(\\d+) kB`, "m"));
    if (!match) throw new Error(`Cannot read "${name}" of process "${pid}"`);
    return Number(match[1]) / 1024;
  };
  return { rssMiB: field("VmRSS"), peakMiB: field("VmHWM") };
}

/**
 * Resets a process's peak resident set (VmHWM) to its current one, by
 * writing `5` to `/proc/<pid>/clear_refs` (Linux 4.0+; needs the right to
 * write there: the same user, or root), so the next peak read is the peak
 * since now.
 *
 * @param pid The process id.
 * @returns Whether the peak was reset.
 */
export async function resetPeakMemory(pid: number): Promise<boolean> {
  try {
    await Deno.writeTextFile(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs a command to completion and returns its stdout.
 *
 * @param command The executable.
 * @param args Its arguments.
 * @returns Trimmed stdout.
 * @throws {Error} when it exits non-zero.
 */
export async function runText(
  command: string,
  args: string[],
  options: { cwd?: string } = {},
): Promise<string> {
  const output = await new Deno.Command(command, {
    args,
    cwd: options.cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  if (!output.success) {
    throw new Error(
      `Command "${command} ${args.join(" ")}" failed: ${
        new TextDecoder().decode(output.stderr).trim()
      }`,
    );
  }
  return text.trim();
}

/** Clock ticks per second in `/proc/<pid>/stat` (`getconf CLK_TCK`, 100 on Linux). */
const CLOCK_TICKS = 100;

/**
 * CPU time a process has used so far, user and system, from
 * `/proc/<pid>/stat` (threads included).
 *
 * @param pid The process id.
 * @returns Microseconds of CPU.
 */
export async function readCpuMicros(pid: number): Promise<number> {
  return statCpuMicros(await Deno.readTextFile(`/proc/${pid}/stat`));
}

/**
 * CPU time each thread of a process has used so far, user and system, from
 * `/proc/<pid>/task/<tid>/stat`, summed by thread name (V8's GC helpers
 * share one name).
 *
 * @param pid The process id.
 * @returns Microseconds of CPU by thread name.
 */
export async function readThreadCpuMicros(
  pid: number,
): Promise<Map<string, number>> {
  const byName = new Map<string, number>();
  for await (const entry of Deno.readDir(`/proc/${pid}/task`)) {
    // A thread may end between the listing and the read.
    const stat = await Deno.readTextFile(`/proc/${pid}/task/${entry.name}/stat`)
      .catch(() => "");
    if (!stat) continue;
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    byName.set(name, (byName.get(name) ?? 0) + statCpuMicros(stat));
  }
  return byName;
}

/**
 * CPU time a process and its direct children have used so far (a server
 * that forks a process per connection, such as PostgreSQL's postmaster),
 * from `/proc/<pid>/stat`. A child that exits takes its time with it.
 *
 * @param pid The parent's process id.
 * @returns Microseconds of CPU.
 */
export async function readFamilyCpuMicros(pid: number): Promise<number> {
  let total = 0;
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    // A process may end between the listing and the read.
    const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`)
      .catch(() => "");
    if (!stat) continue;
    const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (Number(entry.name) === pid || parent === pid) {
      total += statCpuMicros(stat);
    }
  }
  return total;
}

/**
 * The first process whose arguments satisfy a test, from
 * `/proc/<pid>/cmdline`.
 *
 * @param test Called with each process's arguments.
 * @returns Its process id, or `undefined`.
 */
export async function findProcess(
  test: (args: string[]) => boolean,
): Promise<number | undefined> {
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`)
      .catch(() => "");
    if (cmdline && test(cmdline.split("\0"))) return Number(entry.name);
  }
  return undefined;
}

/** User plus system time in a `/proc` stat line, µs. */
function statCpuMicros(stat: string): number {
  // Fields after the command (which may hold spaces) start past its ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return (utime + stime) * (1_000_000 / CLOCK_TICKS);
}

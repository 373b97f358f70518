/**
 * The `bash` tool: one persistent shell per tool instance, so `cd` and
 * variables carry over between commands, with a time limit per command and
 * capped output. Its input is Anthropic's bash tool's: `{command}` or
 * `{restart: true}`.
 *
 * @module
 */
import { z } from "zod";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { BaseTool, type ToolExtra } from "../mcp/mod.ts";
import {
  denoDir,
  descendants,
  launcherFor,
  type ShellIsolation,
  shellIsolation,
} from "./_shell_isolation.ts";

export { type ShellIsolation, shellIsolation };

/** Options of {@linkcode BashTool}. */
export interface BashToolOptions {
  /** Tool name (default `bash`). */
  name?: string;
  /** The shell's starting directory (default: the process's working directory). */
  cwd?: string;
  /**
   * Variables of the shell. It does not inherit the environment process's
   * own (which may hold the harness token or keys): it gets `PATH`, `HOME`
   * (= `cwd`), `LANG=C.UTF-8`, `TERM=dumb` and these.
   */
  env?: Record<string, string>;
  /** Time limit of one command (ms, default 120 000); past it the shell is killed and restarted. */
  timeoutMs?: number;
  /** The most output characters a result keeps, head and tail (default 30 000). */
  maxOutputChars?: number;
  /** How the shell is kept in (default: the best this host allows, see {@linkcode ShellIsolation}). */
  isolation?: ShellIsolation;
}

/** The `bash` tool's input shape (zod): Anthropic's bash tool's. */
export type BashInputShape = {
  /** The command to run. */
  command: z.ZodOptional<z.ZodString>;
  /** Start a fresh shell instead. */
  restart: z.ZodOptional<z.ZodBoolean>;
};

const INPUT: BashInputShape = {
  command: z.string().optional().describe("The bash command to run"),
  restart: z.boolean().optional().describe(
    "Restart the shell (a fresh one: directory and variables back to the start)",
  ),
};

/** What one command produced. */
interface CommandOutcome {
  output: string;
  /** The command's exit status; absent when it did not finish. */
  status?: number;
  /** Why it did not finish. */
  ended?: "timeout" | "exit" | "cancelled";
}

/** Keeps the first and last `limit / 2` characters of a stream and counts the rest. */
class CappedText {
  #head = "";
  #tail = "";
  #dropped = 0;
  readonly #half: number;

  constructor(limit: number) {
    this.#half = Math.max(1, Math.floor(limit / 2));
  }

  append(text: string): void {
    const room = this.#half - this.#head.length;
    if (room > 0) {
      this.#head += text.slice(0, room);
      text = text.slice(room);
    }
    if (text === "") return;
    const tail = this.#tail + text;
    const over = tail.length - this.#half;
    if (over > 0) {
      this.#dropped += over;
      this.#tail = tail.slice(over);
    } else this.#tail = tail;
  }

  toString(): string {
    if (this.#dropped === 0) return this.#head + this.#tail;
    return `${this.#head}\n[… ${this.#dropped} characters of output cut here: results keep the first and last ${this.#half} …]\n${this.#tail}`;
  }
}

/**
 * One running bash: the first process of a PID namespace of its own where
 * the host allows it, else in a process group of its own; either way a
 * time-out kills its children too.
 */
class Shell {
  readonly #child: Deno.ChildProcess;
  readonly #isolation: ShellIsolation;
  readonly #stdin: WritableStreamDefaultWriter<Uint8Array>;
  readonly #stdout: ReadableStreamDefaultReader<Uint8Array>;
  readonly #dir: string;
  readonly #marker = `__mcpkit_done_${crypto.randomUUID().replaceAll("-", "")}`;
  readonly #decoder = new TextDecoder();
  #pending = "";
  #exited = false;

  private constructor(
    child: Deno.ChildProcess,
    dir: string,
    isolation: ShellIsolation,
  ) {
    this.#child = child;
    this.#dir = dir;
    this.#isolation = isolation;
    this.#stdin = child.stdin.getWriter();
    this.#stdout = child.stdout.getReader();
    child.status.then(() => this.#exited = true);
  }

  static async start(
    cwd: string,
    env: Record<string, string>,
    chosen?: ShellIsolation,
  ): Promise<Shell> {
    const { isolation, prefix } = chosen
      ? launcherFor(chosen)
      : await shellIsolation();
    // The reaper is a Deno process: it uses the environment's Deno cache
    // (not one under the shell's HOME, the agent's workspace) and takes the
    // variable out of what the shell gets.
    if (isolation === "reaper") env = { ...env, ...denoDir() };
    const dir = await Deno.makeTempDir({ prefix: "mcpkit-bash-" });
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(prefix[0], {
        args: [...prefix.slice(1), "bash", "--noprofile", "--norc"],
        cwd,
        env,
        clearEnv: true,
        stdin: "piped",
        stdout: "piped",
        stderr: "null",
      }).spawn();
    } catch (error) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      if (error instanceof Deno.errors.NotFound) {
        throw new Error(
          `Cannot start bash in "${cwd}": ${
            prefix[0]
          }, bash or the directory is missing`,
        );
      }
      throw error;
    }
    const shell = new Shell(child, dir, isolation);
    await shell.#write("exec 2>&1\n");
    return shell;
  }

  get alive(): boolean {
    return !this.#exited;
  }

  async #write(text: string): Promise<void> {
    await this.#stdin.write(new TextEncoder().encode(text));
  }

  /**
   * Runs a command by sourcing it from a file (`.` keeps `cd` and variables;
   * a syntax error ends only the sourced file, not the shell), with stdin
   * from /dev/null, and reads until the end marker.
   */
  async run(
    command: string,
    options: {
      timeoutMs: number;
      maxOutputChars: number;
      signal?: AbortSignal;
    },
  ): Promise<CommandOutcome> {
    const file = `${this.#dir}/command.sh`;
    await Deno.writeTextFile(file, command + "\n", { mode: 0o600 });
    const output = new CappedText(options.maxOutputChars);
    try {
      await this.#write(
        `. '${file}' < /dev/null; printf '\\n${this.#marker} %d\\n' "$?"\n`,
      );
    } catch {
      return { output: "", ended: "exit" };
    }
    const done = new RegExp(`\\n${this.#marker} (\\d+)\\n`);
    const keep = this.#marker.length + 16;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stop = new Promise<"timeout" | "cancelled">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), options.timeoutMs);
      options.signal?.addEventListener(
        "abort",
        () => resolve("cancelled"),
        { once: true },
      );
    });
    try {
      while (true) {
        const found = done.exec(this.#pending);
        if (found) {
          output.append(this.#pending.slice(0, found.index));
          this.#pending = this.#pending.slice(found.index + found[0].length);
          return { output: output.toString(), status: Number(found[1]) };
        }
        if (this.#pending.length > keep) {
          output.append(this.#pending.slice(0, -keep));
          this.#pending = this.#pending.slice(-keep);
        }
        const next = await Promise.race([this.#stdout.read(), stop]);
        if (typeof next === "string") {
          output.append(this.#pending);
          this.#pending = "";
          return { output: output.toString(), ended: next };
        }
        if (next.done) {
          output.append(this.#pending + this.#decoder.decode());
          this.#pending = "";
          return { output: output.toString(), ended: "exit" };
        }
        this.#pending += this.#decoder.decode(next.value, { stream: true });
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Kills the shell and everything it started, then removes its temporary
   * directory. In a namespace, killing `unshare` kills the shell (its
   * parent-death signal), and the shell's death the whole namespace; in a
   * session, the process group and every descendant that left it while
   * still the shell's descendant.
   */
  async kill(): Promise<void> {
    if (!this.#exited) {
      if (this.#isolation === "namespace") {
        try {
          Deno.kill(this.#child.pid, "SIGKILL");
        } catch {
          // gone already
        }
      } else if (this.#isolation === "reaper") {
        // The reaper kills everything below it, then exits; one that does
        // not within 5 s is killed (what it had not reaped then survives).
        const child = this.#child;
        try {
          Deno.kill(child.pid, "SIGTERM");
        } catch {
          // gone already
        }
        const timer = setTimeout(() => {
          try {
            Deno.kill(child.pid, "SIGKILL");
          } catch {
            // gone already
          }
        }, 5_000);
        await child.status.finally(() => clearTimeout(timer));
      } else {
        // Found before the group dies: its orphans are then re-parented.
        const escaped = descendants(this.#child.pid);
        try {
          Deno.kill(-this.#child.pid, "SIGKILL");
        } catch {
          // the group is gone already
        }
        for (const pid of escaped) {
          try {
            Deno.kill(pid, "SIGKILL");
          } catch {
            // gone with the group
          }
        }
      }
    }
    await this.#child.status;
    this.#stdout.cancel().catch(() => {});
    this.#stdin.close().catch(() => {});
    await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
  }
}

/**
 * The `bash` tool: runs commands in one persistent bash per tool instance,
 * so one per environment process (one per run over stdio, where each run has
 * its own process). `cd` and `export` carry over; stdin is `/dev/null`;
 * stderr is merged into the output. A command past the time limit has the
 * shell killed (with everything it started, double forks and `setsid`
 * included, where the host allows a PID namespace: {@linkcode ShellIsolation})
 * and a fresh one started, and the result says so. `{restart: true}` does
 * that on request. In a PID namespace the shell sees only its own processes,
 * so it cannot read the environment process's `/proc/<pid>/environ` (the
 * harness token). The shell is not confined to a directory: confine it with
 * the container.
 *
 * @example
 * ```ts
 * import { BashTool } from "./bash.ts";
 * const bash = new BashTool({ timeoutMs: 5_000 });
 * await bash.call({ command: "cd /tmp && export GREETING=hi" });
 * const result = await bash.call({ command: "pwd; echo $GREETING" });
 * // result.content[0].text === "/tmp\nhi"
 * await bash.close();
 * ```
 */
export class BashTool extends BaseTool<BashInputShape>
  implements AsyncDisposable {
  /** What the tool does, for the agent. */
  override description: string =
    "Run a command in a persistent bash shell: the directory and variables carry " +
    "over between calls. stdin is empty; stderr is shown with stdout. Long output " +
    "is cut in the middle. restart: true starts a fresh shell.";
  /** The input shape: `command` or `restart`. */
  override input: BashInputShape = INPUT;
  readonly #cwd: string;
  readonly #env: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #maxOutputChars: number;
  readonly #isolation: ShellIsolation | undefined;
  #shell: Shell | undefined;
  #queue: Promise<unknown> = Promise.resolve();

  /**
   * Creates the tool; the shell starts with the first command.
   *
   * @param options Directory, variables, time limit and output cap.
   */
  constructor(options: BashToolOptions = {}) {
    super();
    this.name = options.name ?? "bash";
    this.#cwd = options.cwd ?? Deno.cwd();
    this.#env = {
      PATH: Deno.env.get("PATH") ?? "/usr/local/bin:/usr/bin:/bin",
      HOME: this.#cwd,
      LANG: "C.UTF-8",
      TERM: "dumb",
      ...options.env,
    };
    this.#timeoutMs = options.timeoutMs ?? 120_000;
    this.#maxOutputChars = options.maxOutputChars ?? 30_000;
    this.#isolation = options.isolation;
  }

  /**
   * Runs a command, or restarts the shell. Calls run one at a time.
   *
   * @param input `{command}` or `{restart: true}`.
   * @param extra The request context: cancelling it kills the command like a time-out.
   * @returns The output (with `[exit status N]` when not 0); `isError` on a time-out or bad input.
   */
  call(
    input: { command?: string; restart?: boolean },
    extra?: ToolExtra,
  ): Promise<CallToolResult> {
    const next = this.#queue.then(() => this.#call(input, extra?.signal));
    this.#queue = next.catch(() => {});
    return next;
  }

  async #call(
    input: { command?: string; restart?: boolean },
    signal: AbortSignal | undefined,
  ): Promise<CallToolResult> {
    if (input.restart) {
      await this.#restart();
      return text("The shell was restarted.");
    }
    if (input.command === undefined || input.command.trim() === "") {
      return text("Give a command to run, or restart: true", true);
    }
    if (input.command.includes("\0")) {
      return text("The command must not contain NUL characters", true);
    }
    if (!this.#shell?.alive) await this.#restart();
    const shell = this.#shell!;
    const outcome = await shell.run(input.command, {
      timeoutMs: this.#timeoutMs,
      maxOutputChars: this.#maxOutputChars,
      signal,
    });
    const output = outcome.output.replace(/\n$/, "");
    if (outcome.ended === "timeout" || outcome.ended === "cancelled") {
      await this.#restart();
      const why = outcome.ended === "timeout"
        ? `The command did not finish within ${this.#timeoutMs / 1000} s`
        : "The command was cancelled";
      return text(
        `${output}${
          output ? "\n" : ""
        }[${why}: the shell was killed and restarted, so the directory and variables are back to the start]`,
        true,
      );
    }
    if (outcome.ended === "exit") {
      await shell.kill();
      this.#shell = undefined;
      return text(
        `${output}${
          output ? "\n" : ""
        }[The shell exited; the next command starts a fresh one]`,
      );
    }
    const status = outcome.status ? `\n[exit status ${outcome.status}]` : "";
    if (output === "") return text(status ? status.trim() : "(no output)");
    return text(output + status);
  }

  async #restart(): Promise<void> {
    await this.#shell?.kill();
    this.#shell = undefined;
    this.#shell = await Shell.start(this.#cwd, this.#env, this.#isolation);
  }

  /** Kills the shell and everything it started. Safe to call more than once. */
  async close(): Promise<void> {
    const shell = this.#shell;
    this.#shell = undefined;
    await shell?.kill();
  }

  /** Same as {@linkcode BashTool.close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

function text(value: string, isError = false): CallToolResult {
  return {
    content: [{ type: "text", text: value }],
    ...(isError && { isError }),
  };
}

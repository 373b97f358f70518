/**
 * Starts an example server as a real subprocess on a free port (`MCP_PORT=0`)
 * and learns its URL from the line `run()` prints on stderr once listening.
 *
 * @module
 */

/** A server subprocess. */
export interface ServerProcess {
  /** Base URL, e.g. `http://127.0.0.1:40123`. */
  baseUrl: string;
  /** The child process. */
  child: Deno.ChildProcess;
  /** Everything the server wrote on stderr so far. */
  stderr(): string;
  /**
   * Sends `signal` (default SIGTERM) and waits for the exit; SIGKILL after 15 s.
   *
   * @returns The exit status.
   */
  stop(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
}

const LISTENING = /on (http:\/\/[^\s]+)/;
const STOP_TIMEOUT_MS = 15_000;

/**
 * Spawns `command args` with `MCP_PORT=0` and waits until it listens.
 *
 * @param command The executable: `Deno.execPath()`, or a compiled server.
 * @param args Arguments, e.g. `["run", "-A", "main.ts", "http"]`.
 * @param timeoutMs How long to wait for the listening line.
 * @returns The running server.
 * @throws {Error} When the server exits or stays silent for `timeoutMs`.
 */
export async function startServerProcess(
  command: string,
  args: string[],
  timeoutMs = 20_000,
): Promise<ServerProcess> {
  const commandLine = [command, ...args].join(" ");
  const child = new Deno.Command(command, {
    args,
    env: { MCP_PORT: "0", MCP_HOST: "127.0.0.1", NO_COLOR: "1" },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let text = "";
  const { promise: listening, resolve, reject } = Promise.withResolvers<
    string
  >();
  listening.catch(() => {}); // a late failure after a timeout is not news
  const drained = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of child.stderr) {
      text += decoder.decode(chunk, { stream: true });
      const found = LISTENING.exec(text);
      if (found) resolve(found[1]);
    }
    reject(
      new Error(`Server "${commandLine}" exited before listening:\n${text}`),
    );
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, fail) => {
    timer = setTimeout(
      () =>
        fail(
          new Error(
            `Server "${commandLine}" did not listen within ${timeoutMs} ms:\n${text}`,
          ),
        ),
      timeoutMs,
    );
  });
  let stopped: Promise<Deno.CommandStatus> | undefined;
  const stop = (signal: Deno.Signal = "SIGTERM") =>
    stopped ??= (async () => {
      try {
        child.kill(signal);
      } catch {
        // already exited
      }
      // A server that ignores the signal is killed, so a test cannot hang.
      const killer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch {
          // exited meanwhile
        }
      }, STOP_TIMEOUT_MS);
      const status = await child.status;
      clearTimeout(killer);
      await drained;
      return status;
    })();
  try {
    const baseUrl = await Promise.race([listening, timeout]);
    return { baseUrl, child, stderr: () => text, stop };
  } catch (error) {
    await stop("SIGKILL");
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** An example serving HUD v6's control channel (`main.ts hud`). */
export interface HudServeProcess {
  /** The control channel's port (from the `HUD_SERVE_PORT=` line). */
  port: number;
  /** The process id (its memory is read from `/proc/<pid>/status`). */
  pid: number;
  /** Everything it wrote on stdout so far. */
  stdout(): string;
  /** Everything it wrote on stderr so far. */
  stderr(): string;
  /**
   * Sends `signal` (default SIGTERM) and waits for the exit and its output.
   *
   * @returns The exit status.
   */
  stop(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
}

/**
 * Runs an example's `main.ts hud` with `MCP_PORT=0` and waits for the line
 * `HUD_SERVE_PORT=<port>` on its stdout; SIGKILL when it stays silent for
 * `timeoutMs`.
 *
 * @param main The example's `main.ts` path.
 * @param name The example, for the error when it exits before listening.
 * @param timeoutMs How long it may take to listen.
 * @param env More variables for it (`MCP_HARNESS_TOKEN`, …).
 * @returns The running example.
 * @throws {Error} When it exits before listening.
 */
export async function startHudServeProcess(
  main: string,
  name: string,
  timeoutMs: number,
  env: Record<string, string> = {},
): Promise<HudServeProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", main, "hud"],
    env: { MCP_PORT: "0", NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const stderrDone = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of child.stderr) {
      stderr += decoder.decode(chunk, { stream: true });
    }
  })();
  const reader = child.stdout.getReader();
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  let stdout = "";
  let port: number | undefined;
  while (port === undefined) {
    const { value, done } = await reader.read();
    if (done) {
      clearTimeout(timer);
      await stderrDone;
      throw new Error(`The ${name} exited before listening: ${stderr}`);
    }
    stdout += new TextDecoder().decode(value);
    const found = /^HUD_SERVE_PORT=(\d+)$/m.exec(stdout);
    if (found) port = Number(found[1]);
  }
  clearTimeout(timer);
  const stdoutDone = (async () => {
    for (;;) if ((await reader.read()).done) return;
  })();
  return {
    port,
    pid: child.pid,
    stdout: () => stdout,
    stderr: () => stderr,
    stop: async (signal: Deno.Signal = "SIGTERM") => {
      child.kill(signal);
      const status = await child.status;
      await Promise.all([stderrDone, stdoutDone]);
      return status;
    },
  };
}

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

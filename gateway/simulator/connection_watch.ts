/**
 * Notices a client that closed its connection while the simulator holds its
 * request unanswered (a hang, a latency). Deno's server does not always
 * abort `request.signal` when the client closes: measured, a gateway's
 * timed-out request to a hung OpenRouter stream left the simulator's side of
 * the connection in `CLOSE_WAIT` (the client's FIN received, never acted on)
 * and its signal unaborted, while the gateway's own socket was closed. So on
 * Linux the simulator also reads the kernel's table of TCP sockets
 * (`/proc/net/tcp` and `tcp6`): a watched connection found in `CLOSE_WAIT`
 * has lost its client. A connection missing from the table proves nothing
 * (the kernel lists it in pages, and one read can skip a socket that
 * moved). Elsewhere the simulator relies on the signal alone.
 *
 * @example
 * ```ts ignore
 * import { ConnectionWatch } from "./connection_watch.ts";
 *
 * const watch = new ConnectionWatch();
 * const stop = watch.watch(8080, 51234, () => console.log("client gone"));
 * stop();
 * ```
 *
 * @module
 */

/** How often the socket table is read while a connection is watched, ms. */
const POLL_MS = 50;
/** The kernel's code for a socket whose peer closed its side. */
const CLOSE_WAIT = "08";
const TABLES = ["/proc/net/tcp", "/proc/net/tcp6"];

/**
 * The state of each TCP socket the kernel lists, by `localPort:remotePort`.
 *
 * @param tables The text of `/proc/net/tcp` and `/proc/net/tcp6`.
 * @returns Each socket's state code (`01` established, `08` close-wait, …).
 */
export function socketStates(tables: readonly string[]): Map<string, string> {
  const states = new Map<string, string>();
  for (const table of tables) {
    for (const line of table.split("\n").slice(1)) {
      const [, local, remote, state] = line.trim().split(/\s+/);
      if (!local || !remote || !state) continue;
      const port = (address: string) =>
        parseInt(address.slice(address.lastIndexOf(":") + 1), 16);
      states.set(`${port(local)}:${port(remote)}`, state);
    }
  }
  return states;
}

/** The connections whose clients the simulator waits on, checked together. */
export class ConnectionWatch {
  readonly #watched = new Map<string, () => void>();
  readonly #enabled = Deno.build.os === "linux";
  #running: Promise<void> | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #wake: (() => void) | undefined;

  /**
   * Watches one connection until `stop` is called or its client is gone.
   *
   * @param localPort The simulator's port.
   * @param remotePort The client's port.
   * @param onGone Called once when the client closed the connection.
   * @returns `stop`: ends the watch.
   */
  watch(localPort: number, remotePort: number, onGone: () => void): () => void {
    if (!this.#enabled) return () => {};
    const key = `${localPort}:${remotePort}`;
    this.#watched.set(key, onGone);
    this.#running ??= this.#run();
    return () => {
      if (this.#watched.get(key) === onGone) this.#watched.delete(key);
      // Nothing left to watch: no timer outlives the last wait.
      if (this.#watched.size === 0 && this.#timer !== undefined) {
        clearTimeout(this.#timer);
        this.#wake?.();
      }
    };
  }

  /** One loop for every watched connection: the table read once a round. */
  async #run(): Promise<void> {
    while (this.#watched.size > 0) {
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        this.#timer = setTimeout(resolve, POLL_MS);
      });
      this.#timer = undefined;
      this.#wake = undefined;
      if (this.#watched.size === 0) break;
      const states = socketStates(
        await Promise.all(
          TABLES.map((path) => Deno.readTextFile(path).catch(() => "")),
        ),
      );
      for (const [key, onGone] of this.#watched) {
        if (states.get(key) === CLOSE_WAIT) {
          this.#watched.delete(key);
          onGone();
        }
      }
    }
    this.#running = undefined;
  }
}

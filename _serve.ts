/**
 * `Deno.serve` that survives its accept loop failing. When the process runs
 * out of file descriptors (a flood of idle connections), Deno's accept loop
 * ends with "Too many open files" and the server stops for good; the process
 * then exits without a drain, a flush or a shutdown hook. This listens again
 * on the same address after a pause, logging one line, until it is shut
 * down. Private to the package: the gateway and `MCPServer` serve with it.
 *
 * @module
 */

/** Options of {@linkcode serveResilient}. */
export interface ResilientServeOptions {
  /** Port; 0 picks a free one (kept for every later listen). */
  port: number;
  /** Interface to bind. */
  hostname: string;
  /** Called with the address on the first listen. */
  onListen?: (addr: Deno.NetAddr) => void;
  /** Where a failed accept loop is reported, one line each. */
  log: (message: string) => void;
  /** Pause before listening again, ms (default 1 000). */
  retryMs?: number;
}

/** A server started by {@linkcode serveResilient}. */
export interface ResilientServer {
  /** The address it listens on. */
  readonly addr: Deno.NetAddr;
  /** Resolves once it was shut down. */
  readonly finished: Promise<void>;
  /** Stops accepting, lets requests in flight finish, then resolves. */
  shutdown(): Promise<void>;
}

/**
 * Serves `handler`, listening again whenever the accept loop fails.
 *
 * @param options Address, first-listen callback, log sink, retry pause.
 * @param handler The request handler.
 * @returns The server.
 * @throws {Deno.errors.AddrInUse} When the first listen finds the port taken.
 */
export function serveResilient(
  options: ResilientServeOptions,
  handler: Deno.ServeHandler<Deno.NetAddr>,
): ResilientServer {
  const retryMs = options.retryMs ?? 1_000;
  const { promise: finished, resolve } = Promise.withResolvers<void>();
  let stopping = false;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let current = listen(options.port, options.onListen);
  const addr = current.addr;

  function listen(
    port: number,
    onListen?: (addr: Deno.NetAddr) => void,
  ): Deno.HttpServer<Deno.NetAddr> {
    const server = Deno.serve({
      port,
      hostname: options.hostname,
      onListen: onListen ?? (() => {}),
    }, handler);
    server.finished.then(
      () => {
        if (stopping) resolve();
      },
      (error) => {
        if (stopping) return resolve();
        options.log(
          `Accepting connections on port ${port} failed (${error}); listening again in ${retryMs} ms`,
        );
        scheduleListen();
      },
    );
    return server;
  }

  function scheduleListen(): void {
    retry = setTimeout(() => {
      retry = undefined;
      if (stopping) return;
      try {
        current = listen(addr.port);
      } catch (error) {
        options.log(
          `Listening on port ${addr.port} failed (${error}); trying again in ${retryMs} ms`,
        );
        scheduleListen();
      }
    }, retryMs);
  }

  return {
    addr,
    finished,
    async shutdown() {
      stopping = true;
      clearTimeout(retry);
      await current.shutdown().catch(() => {});
      resolve();
    },
  };
}

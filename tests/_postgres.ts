/**
 * A real PostgreSQL for tests: Debian's `postgresql-15` binaries run `initdb`
 * in a temporary directory and a server on a free loopback port (its unix
 * socket in the same directory). As root (CI), the server runs as the
 * `postgres` system user through `setpriv`, since PostgreSQL refuses to run
 * as root. Without the binaries, {@linkcode POSTGRES_MISSING} says why and the
 * suites skip.
 *
 * @module
 */
import { join } from "node:path";
import { freePort } from "./_ports.ts";

/** Where PostgreSQL's programs are (`PG_BIN`, default Debian's PostgreSQL 15). */
export const POSTGRES_BIN: string = Deno.env.get("PG_BIN") ??
  "/usr/lib/postgresql/15/bin";
const BIN = POSTGRES_BIN;

/** Why PostgreSQL tests cannot run here, or `undefined` when they can. */
export const POSTGRES_MISSING: string | undefined = (() => {
  try {
    Deno.statSync(join(BIN, "initdb"));
    Deno.statSync(join(BIN, "postgres"));
  } catch {
    return `PostgreSQL binaries not found in ${BIN} (apt-get install postgresql-15): skipping the PostgreSQL suites`;
  }
  if (Deno.uid() === 0) {
    try {
      const id = new Deno.Command("id", { args: ["-u", "postgres"] })
        .outputSync();
      if (!id.success) throw new Error();
    } catch {
      return "Running as root without a `postgres` system user to run PostgreSQL as: skipping the PostgreSQL suites";
    }
  }
  return undefined;
})();

/** Prints the skip reason once, so a skipped suite is never silent. */
export function reportSkip(): void {
  if (POSTGRES_MISSING) console.log(POSTGRES_MISSING);
}

/** A PostgreSQL server started for a test. */
export interface TestPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`. */
  readonly url: string;
  /** The server's port. */
  readonly port: number;
  /** Creates a fresh, empty database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Stops the server (fast shutdown: connections cut), keeping its data. */
  down(): Promise<void>;
  /** Kills the server with SIGKILL, no shutdown at all (the next `up()` runs crash recovery). */
  crash(): Promise<void>;
  /** Starts it again on the same port and data after `down()` or `crash()`. */
  up(): Promise<void>;
  /** Stops the server and removes its directory. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

function asPostgres(
  cmd: string,
  args: string[],
  output: "null" | "piped" = "null",
): Deno.Command {
  if (Deno.uid() !== 0) {
    return new Deno.Command(cmd, { args, stdout: output, stderr: output });
  }
  // setpriv execs the command itself (runuser would stay its parent and not
  // pass signals on), so the server stops on our signal.
  return new Deno.Command("setpriv", {
    args: [
      "--reuid=postgres",
      "--regid=postgres",
      "--init-groups",
      "--",
      cmd,
      ...args,
    ],
    stdout: output,
    stderr: output,
  });
}

async function run(cmd: string, args: string[]): Promise<void> {
  const out = await asPostgres(cmd, args, "piped").output();
  if (!out.success) {
    throw new Error(
      `${cmd} failed: ${new TextDecoder().decode(out.stderr).trim()}`,
    );
  }
}

/**
 * Runs `initdb` in a temporary directory and starts a server on a free
 * loopback port, trusting local connections (the test is the only client).
 *
 * @returns The running server.
 */
export async function startPostgres(): Promise<TestPostgres> {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-pg-" });
  if (Deno.uid() === 0) {
    await Deno.chmod(dir, 0o700);
    await new Deno.Command("chown", { args: ["postgres:", dir] }).output();
  }
  const data = join(dir, "data");
  await run(join(BIN, "initdb"), [
    "-D",
    data,
    "-U",
    "postgres",
    "--auth=trust",
    "--no-sync",
    "-E",
    "UTF8",
  ]);
  const port = freePort();
  const launch = async (): Promise<Deno.ChildProcess> => {
    const server = asPostgres(join(BIN, "postgres"), [
      "-D",
      data,
      "-p",
      String(port),
      "-h",
      "127.0.0.1",
      "-k",
      dir,
      "-c",
      "fsync=off",
      "-c",
      "synchronous_commit=off",
      "-c",
      "full_page_writes=off",
      "-c",
      "max_connections=200",
    ]).spawn();
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        const conn = await Deno.connect({ hostname: "127.0.0.1", port });
        conn.close();
        break;
      } catch {
        if (Date.now() > deadline) {
          server.kill("SIGKILL");
          throw new Error(`PostgreSQL did not listen on port ${port} in 20 s`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    // Accepting connections a moment before it accepts logins.
    for (;;) {
      const ready = await new Deno.Command(join(BIN, "pg_isready"), {
        args: ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres"],
      }).output();
      if (ready.success || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return server;
  };
  let server: Deno.ChildProcess | undefined = await launch();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const down = async () => {
    if (!server) return;
    // Fast shutdown: open connections are cut, as in a failover.
    server.kill("SIGINT");
    await server.status;
    server = undefined;
  };
  const crash = async () => {
    if (!server) return;
    server.kill("SIGKILL");
    await server.status;
    server = undefined;
  };
  let stopped: Promise<void> | undefined;
  const stop = () =>
    stopped ??= (async () => {
      await down();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    })();
  return {
    url,
    port,
    async createDatabase(name: string): Promise<string> {
      await run(join(BIN, "createdb"), [
        "-h",
        "127.0.0.1",
        "-p",
        String(port),
        "-U",
        "postgres",
        name,
      ]);
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    down,
    crash,
    async up(): Promise<void> {
      // After a crash the old server's backends take a moment to exit.
      for (let attempt = 0; !server; attempt++) {
        try {
          server = await launch();
        } catch (error) {
          if (attempt >= 5) throw error;
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** A TCP proxy on loopback that delays every chunk each way. */
export interface DelayProxy {
  /** The port to connect to instead of the target's. */
  readonly port: number;
  /** Stops listening and closes every connection. */
  close(): void;
}

/**
 * Starts a loopback TCP proxy to `targetPort` that holds every chunk for
 * `delayMs` in each direction, in order: a stand-in for a network between
 * hosts (where `tc netem` is unavailable; this kernel has no `sch_netem`).
 *
 * @param targetPort The port to forward to on 127.0.0.1.
 * @param delayMs One-way delay, ms.
 * @returns The running proxy.
 */
export function startDelayProxy(
  targetPort: number,
  delayMs: number,
): DelayProxy {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  const pipe = async (from: Deno.Conn, to: Deno.Conn) => {
    const queue: { data: Uint8Array; due: number }[] = [];
    let wake: (() => void) | undefined;
    let ended = false;
    const writer = (async () => {
      for (;;) {
        const next = queue.shift();
        if (!next) {
          if (ended) break;
          await new Promise<void>((resolve) => wake = resolve);
          continue;
        }
        const wait = next.due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        let written = 0;
        while (written < next.data.length) {
          written += await to.write(next.data.subarray(written));
        }
      }
    })().catch(() => {
      // The other side went away (a gateway killed with SIGKILL): stop
      // reading this side too. Caught here, at once, so the rejection is
      // never unhandled while the read below is still waiting.
      try {
        from.close();
      } catch { /* closed */ }
    });
    try {
      const buffer = new Uint8Array(64 * 1024);
      for (;;) {
        const n = await from.read(buffer);
        if (n === null) break;
        queue.push({
          data: buffer.slice(0, n),
          due: performance.now() + delayMs,
        });
        wake?.();
      }
    } catch { /* closed */ }
    ended = true;
    wake?.();
    await writer;
    // closeWrite() answers with a promise: a connection the other pipe has
    // closed already rejects it, asynchronously.
    await to.closeWrite().catch(() => {});
  };
  (async () => {
    for await (const client of listener) {
      Deno.connect({ hostname: "127.0.0.1", port: targetPort }).then(
        (server) => {
          open.add(client);
          open.add(server);
          Promise.all([pipe(client, server), pipe(server, client)]).finally(
            () => {
              for (const conn of [client, server]) {
                open.delete(conn);
                try {
                  conn.close();
                } catch { /* closed */ }
              }
            },
          );
        },
        () => client.close(),
      );
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    close() {
      listener.close();
      for (const conn of open) {
        try {
          conn.close();
        } catch { /* closed */ }
      }
    },
  };
}

/**
 * The environment that puts a test gateway on PostgreSQL, when
 * `MCPKIT_TEST_POSTGRES` names a server (`deno task test:postgres` sets it):
 * a fresh, empty database each call. Without it, nothing: the KV default.
 *
 * @returns `{GATEWAY_STORE}` or `{}`.
 */
export async function storeEnvForTests(): Promise<Record<string, string>> {
  const server = Deno.env.get("MCPKIT_TEST_POSTGRES");
  if (!server) return {};
  const { default: postgres } = await import("postgres");
  const sql = postgres(server, { onnotice: () => {}, max: 1 });
  const name = `t_${crypto.randomUUID().replaceAll("-", "")}`;
  try {
    await sql.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await sql.end();
  }
  return { GATEWAY_STORE: server.replace(/\/[^/]*$/, `/${name}`) };
}

/** A TCP proxy that can lose every connection's far side without telling the near side. */
export interface CutProxy {
  /** The port to connect to instead of the target's. */
  readonly port: number;
  /** How many connections it has accepted so far. */
  readonly accepted: number;
  /**
   * Closes the target side of every open connection and leaves the client
   * side open, as a load balancer or NAT that lost its state does: the
   * client learns it only when it next sends something, and its
   * connection is then closed.
   */
  cut(): void;
  /**
   * Stops answering, without closing anything: every byte either way is
   * dropped, and new connections are accepted and never answered, as a
   * database host that vanished from the network (no reset ever comes).
   */
  freeze(): void;
  /** Stops listening and closes every connection. */
  close(): void;
}

/** PostgreSQL's ErrorResponse for a connection while it starts up (57P03). */
function startingUp(): Uint8Array {
  const fields =
    "SFATAL\0VFATAL\0C57P03\0Mthe database system is starting up\0\0";
  const body = new TextEncoder().encode(fields);
  const packet = new Uint8Array(5 + body.length);
  packet[0] = "E".charCodeAt(0);
  new DataView(packet.buffer).setInt32(1, 4 + body.length);
  packet.set(body, 5);
  return packet;
}

/**
 * Starts a loopback TCP proxy to `targetPort` whose {@linkcode CutProxy.cut}
 * makes every pooled connection stale: a stand-in for a database restarted
 * behind a proxy, where a client's pool keeps connections that look open.
 * A connection the target refuses is answered with PostgreSQL's "starting
 * up" error and closed.
 *
 * @param targetPort The port to forward to on 127.0.0.1.
 * @returns The running proxy.
 */
export function startCutProxy(targetPort: number): CutProxy {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const pairs = new Set<
    { client: Deno.Conn; server: Deno.Conn; cut: boolean }
  >();
  let accepted = 0;
  let frozen = false;
  const held = new Set<Deno.Conn>();
  const close = (conn: Deno.Conn) => {
    try {
      conn.close();
    } catch { /* closed */ }
  };
  const serve = async (client: Deno.Conn) => {
    if (frozen) {
      // Read and drop, never answer.
      held.add(client);
      try {
        while (await client.read(new Uint8Array(1024)) !== null) { /* drop */ }
      } catch { /* closed */ }
      held.delete(client);
      close(client);
      return;
    }
    let server: Deno.Conn;
    try {
      server = await Deno.connect({ hostname: "127.0.0.1", port: targetPort });
    } catch {
      // Answered as PostgreSQL answers while it starts: an error for the
      // startup message (a client that saw its connection just close
      // would try again at once, on its own).
      try {
        await client.read(new Uint8Array(1024));
        await client.write(startingUp());
      } catch { /* closed */ }
      close(client);
      return;
    }
    const pair = { client, server, cut: false };
    pairs.add(pair);
    const buffer = new Uint8Array(64 * 1024);
    const downstream = (async () => {
      const chunk = new Uint8Array(64 * 1024);
      try {
        for (;;) {
          const n = await server.read(chunk);
          if (n === null) break;
          if (frozen) continue;
          let written = 0;
          while (written < n) {
            written += await client.write(chunk.subarray(written, n));
          }
        }
      } catch { /* closed */ }
      // A cut leaves the client side open until the client writes.
      if (!pair.cut) close(client);
    })();
    try {
      for (;;) {
        const n = await client.read(buffer);
        if (n === null || pair.cut) break;
        if (frozen) continue;
        let written = 0;
        while (written < n) {
          written += await server.write(buffer.subarray(written, n));
        }
      }
    } catch { /* closed */ }
    close(client);
    close(server);
    await downstream;
    pairs.delete(pair);
  };
  (async () => {
    for await (const client of listener) {
      accepted++;
      serve(client);
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    get accepted() {
      return accepted;
    },
    cut() {
      for (const pair of pairs) {
        pair.cut = true;
        close(pair.server);
      }
    },
    freeze() {
      frozen = true;
    },
    close() {
      listener.close();
      for (const conn of held) close(conn);
      for (const pair of pairs) {
        close(pair.client);
        close(pair.server);
      }
    },
  };
}

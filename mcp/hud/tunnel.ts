/**
 * Capability tunnels from the client's side, and the byte splice both sides
 * use. A tunnel is a connection to the control port whose first frame is
 * `tunnel.open {capability}`: after the one reply it carries the
 * capability's own protocol (HTTP for `mcp`, RFB for `rfb`, the DevTools
 * HTTP and WebSocket for `cdp`). A {@linkcode CapabilityForwarder} gives a
 * client that only knows how to dial a port (a VNC viewer, Playwright, the
 * MCP SDK's HTTP transport) a loopback port whose every connection becomes
 * such a tunnel, as HUD's own client does.
 *
 * @module
 */
import { encodeFrame, FrameReader, writeAll } from "./framing.ts";

/** A control address: host and port. */
export interface ControlAddress {
  /** Host name or address. */
  hostname: string;
  /** TCP port. */
  port: number;
}

/**
 * Reads `host:port` (or `tcp://host:port`).
 *
 * @param spec The address.
 * @returns Host and port.
 * @throws {TypeError} When it is not `host:port` with a port from 1 to 65535.
 */
export function parseControlAddress(spec: string): ControlAddress {
  const url = URL.parse(spec.includes("://") ? spec : `tcp://${spec}`);
  const port = Number(url?.port);
  if (
    !url || url.protocol !== "tcp:" || !url.hostname ||
    !Number.isInteger(port) || port < 1 || port > 65535 ||
    (url.pathname !== "" && url.pathname !== "/")
  ) {
    throw new TypeError(
      `Invalid control address "${spec}": expected tcp://host:port`,
    );
  }
  return { hostname: url.hostname.replace(/^\[(.*)\]$/, "$1"), port };
}

/**
 * Opens a tunnel to one capability through the control port.
 *
 * @param address The control port.
 * @param capability The capability's name (or protocol family).
 * @param timeoutMs How long the reply may take.
 * @param harnessToken Sent as `params.harness_token` when set (a server
 * with a harness token opens tunnels only for it).
 * @returns The connection, now carrying the capability's bytes, and any
 * bytes that arrived with the reply.
 * @throws {Error} With the server's message when it refuses.
 */
export async function openTunnel(
  address: ControlAddress,
  capability: string,
  timeoutMs = 10_000,
  harnessToken?: string,
): Promise<{ conn: Deno.Conn; early: Uint8Array }> {
  const conn = await Deno.connect(address);
  const timer = setTimeout(() => conn.close(), timeoutMs);
  try {
    await writeAll(
      conn,
      encodeFrame({
        jsonrpc: "2.0",
        id: 1,
        method: "tunnel.open",
        params: {
          capability,
          ...(harnessToken && { harness_token: harnessToken }),
        },
      }),
    );
    const reader = new FrameReader(conn);
    const reply = await reader.read();
    if (reply.kind !== "frame") {
      throw new Error(
        `The control port did not open the tunnel to "${capability}" (${reply.kind} reply)`,
      );
    }
    const frame = reply.value as {
      error?: { message?: unknown };
      result?: unknown;
    };
    if (frame?.error) {
      throw new Error(
        `Cannot open a tunnel to "${capability}": ${
          String(frame.error.message ?? "refused")
        }`,
      );
    }
    if (typeof frame?.result !== "object" || frame.result === null) {
      throw new Error(
        `The control port answered tunnel.open without a result`,
      );
    }
    clearTimeout(timer);
    return { conn, early: reader.rest() };
  } catch (error) {
    clearTimeout(timer);
    try {
      conn.close();
    } catch {
      // closed by the timer
    }
    throw error;
  }
}

/**
 * Pipes two connections into each other until both directions end; an
 * error on either closes both, and so does a silence of `idleMs` both ways.
 *
 * @param a One side.
 * @param b The other.
 * @param options `idleMs`: no byte either way for this long closes both
 * (0 or unset: no limit).
 */
export async function splice(
  a: Deno.Conn,
  b: Deno.Conn,
  options: { idleMs?: number } = {},
): Promise<void> {
  let last = Date.now();
  const pump = async (from: Deno.Conn, to: Deno.Conn) => {
    const buffer = new Uint8Array(16 * 1024);
    for (;;) {
      const n = await from.read(buffer);
      if (n === null) break;
      last = Date.now();
      await writeAll(to, buffer.subarray(0, n));
    }
    await to.closeWrite().catch(() => {});
  };
  const idleMs = options.idleMs ?? 0;
  const watch = idleMs > 0
    ? setInterval(() => {
      if (Date.now() - last >= idleMs) {
        closeQuietly(a);
        closeQuietly(b);
      }
    }, Math.max(10, Math.floor(idleMs / 4)))
    : undefined;
  try {
    await Promise.all([pump(a, b), pump(b, a)]);
  } catch {
    // A reset on either side, or the idle limit, ends the tunnel.
  } finally {
    clearInterval(watch);
    closeQuietly(a);
    closeQuietly(b);
  }
}

/**
 * A loopback port whose every connection is tunnelled to one capability.
 *
 * @example Reaching a capability with a client that dials a port
 * ```ts
 * import { CapabilityForwarder } from "./tunnel.ts";
 *
 * // const screen = CapabilityForwarder.start({ hostname: "127.0.0.1", port: 8765 }, "screen");
 * // vncsnapshot 127.0.0.1::${screen.port} shot.jpg
 * // await screen.close();
 * ```
 */
export class CapabilityForwarder {
  /** The loopback port to dial. */
  readonly port: number;
  readonly #listener: Deno.TcpListener;
  readonly #conns = new Set<Deno.Conn>();
  readonly #accepting: Promise<void>;

  readonly #harnessToken: string | undefined;

  private constructor(
    listener: Deno.TcpListener,
    address: ControlAddress,
    capability: string,
    harnessToken: string | undefined,
  ) {
    this.#harnessToken = harnessToken;
    this.#listener = listener;
    this.port = (listener.addr as Deno.NetAddr).port;
    this.#accepting = (async () => {
      for await (const local of listener) {
        this.#conns.add(local);
        this.#forward(local, address, capability).finally(() => {
          this.#conns.delete(local);
        });
      }
    })().catch(() => {});
  }

  /**
   * Listens on 127.0.0.1 on a free port.
   *
   * @param address The control port.
   * @param capability The capability's name (or protocol family).
   * @param harnessToken Sent with each `tunnel.open` when set.
   * @returns The forwarder.
   */
  static start(
    address: ControlAddress,
    capability: string,
    harnessToken?: string,
  ): CapabilityForwarder {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    return new CapabilityForwarder(
      listener,
      address,
      capability,
      harnessToken,
    );
  }

  async #forward(
    local: Deno.Conn,
    address: ControlAddress,
    capability: string,
  ): Promise<void> {
    let tunnel;
    try {
      tunnel = await openTunnel(
        address,
        capability,
        undefined,
        this.#harnessToken,
      );
    } catch {
      closeQuietly(local);
      return;
    }
    this.#conns.add(tunnel.conn);
    try {
      if (tunnel.early.length > 0) await writeAll(local, tunnel.early);
      await splice(local, tunnel.conn);
    } catch {
      closeQuietly(local);
      closeQuietly(tunnel.conn);
    } finally {
      this.#conns.delete(tunnel.conn);
    }
  }

  /** Stops listening and closes every forwarded connection. */
  async close(): Promise<void> {
    closeQuietly(this.#listener);
    for (const conn of this.#conns) closeQuietly(conn);
    await this.#accepting;
  }
}

function closeQuietly(resource: { close(): void }): void {
  try {
    resource.close();
  } catch {
    // already closed
  }
}

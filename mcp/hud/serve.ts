/**
 * The HUD v6 control channel transport: one TCP port where the first frame
 * of each connection decides what it is. `tunnel.open {capability}` makes
 * it a raw byte tunnel to that capability's daemon (one reply frame, then
 * bytes both ways); any other frame begins a control session
 * ({@linkcode ControlChannel}). Who is let in is `admission.ts`; one
 * connection is `connection.ts`.
 *
 * The server's own tools are the `mcp` capability: a Streamable HTTP
 * endpoint (`/mcp` only, no `/dev`) on a loopback port of its own, reached
 * only through the tunnel (`tools_endpoint.ts`). Initialize hooks run before the port is bound,
 * as HUD's `serve` does, so every capability they publish is live when the
 * first client connects. The bound port is announced on stdout as
 * `HUD_SERVE_PORT=<port>`, the line HUD's subprocess runtime reads.
 *
 * @module
 */
import type { RunningTransport, SessionHost } from "../transports/stdio.ts";
import type { RunToolFilters } from "../scenarios/run_tools.ts";
import {
  Admission,
  type AdmissionLimits,
  KNOCK_TIMEOUT_MS,
} from "./admission.ts";
import { type Capability, mcpCapability } from "./capability.ts";
import { type ChannelHost, ControlChannel } from "./channel.ts";
import {
  closeConnection,
  closeQuietly,
  type ConnectionContext,
  serveConnection,
} from "./connection.ts";
import type { DisplayRequest } from "./display.ts";
import { FrameBudget } from "./frame_budget.ts";
import { FrameReader, MAX_FRAME_BYTES } from "./framing.ts";
import type { TaskDefinition } from "./task_run.ts";
import { startToolsEndpoint } from "./tools_endpoint.ts";

/** What the control channel needs from the server beside its MCP side. */
export interface HudSource {
  /** The scenarios, served as tasks, by name. */
  tasks(): ReadonlyMap<string, TaskDefinition>;
  /** Capabilities the environment published (`rfb`, `cdp`, …). */
  bindings(): readonly Capability[];
  /** Runs the initialize hooks (once per process). */
  initialize(): Promise<void>;
  /** When set, task methods need it as `hello`'s `harness_token`. */
  harnessToken?: string;
  /** Where each held task's tool filters go, for the server to enforce. */
  filters?: RunToolFilters;
  /**
   * Hands the display size the harness asks for to the tools that take one.
   *
   * @throws {RangeError} When a value is out of range.
   */
  display?(request: DisplayRequest): void;
}

/** Options of {@linkcode startHud}. */
export interface HudOptions extends AdmissionLimits {
  /** Port; 0 picks a free one. */
  port: number;
  /** Interface to bind. */
  host: string;
  /** Called with the bound address (else one line on stderr). */
  onListen?: (addr: Deno.NetAddr) => void;
  /** How long a new connection may take to send its first frame, ms (default 30 000). */
  prefaceTimeoutMs?: number;
  /**
   * A control session's frame begun and not finished within one to two
   * of these periods closes the connection, ms (default 30 000): a client
   * cannot hold a part frame (up to 16 MiB) for good. An idle session (no
   * part frame) is kept until the idle time-out.
   */
  frameTimeoutMs?: number;
  /**
   * A control session that begins no frame for this long is closed, ms
   * (default 60 000), unless it showed the harness token or holds a task.
   */
  idleTimeoutMs?: number;
  /**
   * A tunnel that carries no byte either way for this long is closed, ms
   * (default 300 000), unless it was opened with the harness token.
   */
  tunnelIdleMs?: number;
  /** How long a knock (a connection past the caps) may take to show the token, ms (default 2 000). */
  knockTimeoutMs?: number;
  /**
   * Bytes all guests' frames in progress may hold past their first 64 KiB
   * each (default two 16 MiB frames): a frame that finds it spent waits.
   */
  frameBudgetBytes?: number;
}

/** A running control channel. */
export interface HudTransport extends RunningTransport {
  /** Whether a control call is being answered (SIGTERM waits for it). */
  busy(): boolean;
}

/** How long a new connection may stay silent before its first frame, ms. */
export const PREFACE_TIMEOUT_MS = 30_000;

/** The default of {@linkcode HudOptions.frameTimeoutMs}, ms. */
export const FRAME_TIMEOUT_MS = 30_000;

/** The default of {@linkcode HudOptions.idleTimeoutMs}, ms. */
export const IDLE_TIMEOUT_MS = 60_000;

/** The default of {@linkcode HudOptions.tunnelIdleMs}, ms. */
export const TUNNEL_IDLE_MS = 300_000;

/** The default of {@linkcode HudOptions.frameBudgetBytes}: two whole frames. */
export const FRAME_BUDGET_BYTES = 2 * (MAX_FRAME_BYTES + 1);

/**
 * Serves `host` over the control channel until closed.
 *
 * @param host The server (its MCP side serves the `mcp` capability).
 * @param source Its tasks, capabilities and initialize hooks.
 * @param options Port and interface.
 * @returns The running transport.
 * @throws {Error} When an initialize hook fails (with its message).
 */
export async function startHud(
  host: SessionHost,
  source: HudSource,
  options: HudOptions,
): Promise<HudTransport> {
  await source.initialize();
  // Assigned once below, after the tools endpoint whose callback reads it:
  // `let` keeps a request that arrives first from hitting the const's TDZ.
  // deno-lint-ignore prefer-const
  let channel: ControlChannel | undefined;
  const tools = startToolsEndpoint(host, {
    soleTask: () => channel?.soleTask,
    holds: (id) => channel?.holds(id) ?? false,
    display: (request) => source.display?.(request),
  });
  const mcp = mcpCapability(`http://127.0.0.1:${tools.port}/mcp`);
  const channelHost: ChannelHost = {
    info: { name: host.info.name, version: host.info.version },
    tasks: () => source.tasks(),
    bindings: () => [mcp, ...source.bindings()],
    harnessToken: source.harnessToken,
    filters: source.filters,
    display: source.display && ((request) => source.display!(request)),
  };
  channel = new ControlChannel(channelHost);
  const listener = Deno.listen({ hostname: options.host, port: options.port });
  const addr = listener.addr as Deno.NetAddr;
  console.log(`HUD_SERVE_PORT=${addr.port}`);
  if (options.onListen) options.onListen(addr);
  else {
    console.error(
      `MCP server "${host.info.name}" (hud control channel) on tcp://${addr.hostname}:${addr.port}`,
    );
  }
  const conns = new Set<Deno.Conn>();
  const admission = new Admission(options);
  const context: ConnectionContext = {
    channel,
    host: channelHost,
    budget: new FrameBudget(options.frameBudgetBytes ?? FRAME_BUDGET_BYTES),
    prefaceTimeoutMs: options.prefaceTimeoutMs ?? PREFACE_TIMEOUT_MS,
    knockTimeoutMs: options.knockTimeoutMs ?? KNOCK_TIMEOUT_MS,
    frameTimeoutMs: options.frameTimeoutMs ?? FRAME_TIMEOUT_MS,
    idleTimeoutMs: options.idleTimeoutMs ?? IDLE_TIMEOUT_MS,
    tunnelIdleMs: options.tunnelIdleMs ?? TUNNEL_IDLE_MS,
  };
  let draining = false;
  const accepting = (async () => {
    for await (const conn of listener) {
      if (draining) {
        conn.close();
        continue;
      }
      conns.add(conn);
      channel.sweep();
      const reader = new FrameReader(conn, { budget: context.budget });
      const slot = admission.admit(
        (conn.remoteAddr as Deno.NetAddr).hostname,
        () => closeConnection(conn, reader),
      );
      serveConnection(conn, reader, slot, context).catch(() => {}).finally(
        () => {
          slot.release();
          conns.delete(conn);
          closeConnection(conn, reader);
        },
      );
    }
  })().catch(() => {});
  let closing: Promise<void> | undefined;
  return {
    finished: accepting.then(() => closing),
    sessionCount: () => conns.size,
    busy: () => channel.busy,
    drain: () => {
      draining = true;
      channel.drain();
      tools.drain();
    },
    close: () =>
      closing ??= (async () => {
        draining = true;
        closeQuietly(listener);
        for (const conn of conns) closeQuietly(conn);
        channel.cancelAll();
        await tools.close();
      })(),
  };
}

/**
 * The HUD v6 control channel transport: one TCP port where the first frame
 * of each connection decides what it is. `tunnel.open {capability}` makes
 * it a raw byte tunnel to that capability's daemon (one reply frame, then
 * bytes both ways); any other frame begins a control session
 * ({@linkcode ControlChannel}).
 *
 * The server's own tools are the `mcp` capability: a Streamable HTTP
 * endpoint (`/mcp` only, no `/dev`) on a loopback port of its own, reached
 * only through the tunnel. Initialize hooks run before the port is bound,
 * as HUD's `serve` does, so every capability they publish is live when the
 * first client connects. The bound port is announced on stdout as
 * `HUD_SERVE_PORT=<port>`, the line HUD's subprocess runtime reads.
 *
 * @module
 */
import type { RunningTransport, SessionHost } from "../run_stdio.ts";
import { createHttpApp, MAX_BODY_BYTES } from "../transports.ts";
import {
  type Capability,
  capabilityAddress,
  findCapability,
  mcpCapability,
} from "./capability.ts";
import { type ChannelHost, ControlChannel } from "./channel.ts";
import { ErrorCode, errorFrame } from "./rpc.ts";
import type { TaskDefinition } from "./task_run.ts";
import {
  encodeFrame,
  FrameReader,
  oversizedMessage,
  writeAll,
} from "./framing.ts";
import { splice } from "./tunnel.ts";

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
}

/** Options of {@linkcode startHud}. */
export interface HudOptions {
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
   * part frame) is kept.
   */
  frameTimeoutMs?: number;
}

/** A running control channel. */
export interface HudTransport extends RunningTransport {
  /** Whether a control call is being answered (SIGTERM waits for it). */
  busy(): boolean;
}

/** The most connections open at once; past it new ones are closed at once. */
export const MAX_CONNECTIONS = 512;

/** How long a new connection may stay silent before its first frame, ms. */
export const PREFACE_TIMEOUT_MS = 30_000;

/** The default of {@linkcode HudOptions.frameTimeoutMs}, ms. */
export const FRAME_TIMEOUT_MS = 30_000;

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
  const tools = startToolsEndpoint(host, () => channel?.soleTask);
  const mcp = mcpCapability(`http://127.0.0.1:${tools.port}/mcp`);
  const channelHost: ChannelHost = {
    info: { name: host.info.name, version: host.info.version },
    tasks: () => source.tasks(),
    bindings: () => [mcp, ...source.bindings()],
    harnessToken: source.harnessToken,
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
  let draining = false;
  const accepting = (async () => {
    for await (const conn of listener) {
      if (draining || conns.size >= MAX_CONNECTIONS) {
        conn.close();
        continue;
      }
      conns.add(conn);
      channel.sweep();
      serveConnection(
        conn,
        channel,
        channelHost,
        options.prefaceTimeoutMs ?? PREFACE_TIMEOUT_MS,
        options.frameTimeoutMs ?? FRAME_TIMEOUT_MS,
      ).catch(() => {}).finally(
        () => {
          conns.delete(conn);
          closeQuietly(conn);
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

/** One connection: its first frame makes it a tunnel or a control session. */
async function serveConnection(
  conn: Deno.Conn,
  channel: ControlChannel,
  host: ChannelHost,
  prefaceTimeoutMs: number,
  frameTimeoutMs: number,
): Promise<void> {
  const reader = new FrameReader(conn);
  // A connection that never speaks would hold one of the few slots.
  const silent = setTimeout(() => closeQuietly(conn), prefaceTimeoutMs);
  const first = await reader.read().finally(() => clearTimeout(silent));
  if (first.kind === "end") return;
  if (first.kind === "oversized") {
    await writeAll(
      conn,
      encodeFrame(errorFrame(
        null,
        ErrorCode.InvalidRequest,
        oversizedMessage(first.size, first.measured),
        { size: first.size, limit: reader.limit },
      )),
    );
    return;
  }
  if (first.kind === "invalid") {
    await writeAll(
      conn,
      encodeFrame(errorFrame(null, ErrorCode.ParseError, first.reason)),
    );
    return await channel.session(conn, reader, undefined, frameTimeoutMs);
  }
  const message = first.value as
    | { method?: unknown; id?: unknown; params?: unknown }
    | null;
  if (
    typeof message === "object" && message !== null &&
    message.method === "tunnel.open"
  ) {
    return await openTunnel(conn, reader, message, host);
  }
  await channel.session(conn, reader, first.value, frameTimeoutMs);
}

/** `tunnel.open`: dial the capability's daemon, answer once, splice bytes. */
async function openTunnel(
  conn: Deno.Conn,
  reader: FrameReader,
  message: { id?: unknown; params?: unknown },
  host: ChannelHost,
): Promise<void> {
  const id = typeof message.id === "string" || typeof message.id === "number"
    ? message.id
    : undefined;
  const reply = async (frame: Record<string, unknown>) => {
    if (id !== undefined) {
      await writeAll(conn, encodeFrame({ jsonrpc: "2.0", id, ...frame }));
    }
  };
  const name = (message.params as { capability?: unknown } | undefined)
    ?.capability;
  if (typeof name !== "string") {
    return await reply(errorFrame(
      id ?? null,
      ErrorCode.InvalidParams,
      "tunnel.open: capability must be a string",
    ));
  }
  const bindings = host.bindings();
  const binding = findCapability(bindings, name);
  const address = binding && capabilityAddress(binding);
  if (!binding || !address) {
    return await reply(errorFrame(
      id ?? null,
      ErrorCode.ServerError,
      binding
        ? `Capability "${binding.name}" has no host:port to tunnel to`
        : `Unknown capability "${name.slice(0, 200)}": the environment offers ${
          bindings.map((b) => b.name).join(", ")
        }`,
    ));
  }
  let backend: Deno.Conn;
  try {
    backend = await Deno.connect({
      hostname: address.hostname,
      port: address.port,
    });
  } catch (error) {
    return await reply(errorFrame(
      id ?? null,
      ErrorCode.ServerError,
      `Cannot reach capability "${binding.name}": ${(error as Error).message}`,
    ));
  }
  try {
    await reply({ result: { capability: binding.name } });
    const early = reader.rest();
    if (early.length > 0) await writeAll(backend, early);
    await splice(conn, backend);
  } finally {
    closeQuietly(backend);
  }
}

/**
 * The `mcp` capability's daemon: Streamable HTTP at `/mcp` on a loopback
 * port, without the dev endpoints (they would call hub tools, harness-only
 * ones included, for whoever reaches the tunnel). A request without
 * `_meta.run_id` while exactly one task is held gets that task's session id
 * as its run id, so a harness that sends none (HUD's own) reaches the task's
 * per-run state.
 */
function startToolsEndpoint(
  host: SessionHost,
  soleTask: () => string | undefined,
) {
  const http = createHttpApp(host, "http", "127.0.0.1");
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      // Harnesses reach the capability through the control port's tunnel
      // and send no Origin; a browser always does. A page open in the
      // environment's own browser (on loopback, where the agent may drive
      // it) must not call the tools, excluded ones included, behind the
      // runner's back.
      if (request.headers.has("origin")) {
        return Response.json({
          error:
            "The mcp capability does not answer browser pages (a request with an Origin header)",
        }, { status: 403 });
      }
      return new URL(request.url).pathname === "/mcp"
        ? http.app.fetch(await withRunId(request, soleTask()))
        : Response.json(
          { error: "Not found: the mcp capability serves /mcp" },
          { status: 404 },
        );
    },
  );
  return {
    port: server.addr.port,
    drain: () => http.drain(),
    close: async () => {
      await http.close();
      await server.shutdown();
    },
  };
}

/** The request, with `run` as `_meta.run_id` of each message that has none. */
async function withRunId(
  request: Request,
  run: string | undefined,
): Promise<Request> {
  const length = Number(request.headers.get("content-length") ?? NaN);
  if (
    run === undefined || request.method !== "POST" ||
    !(length > 0 && length <= MAX_BODY_BYTES)
  ) return request;
  const text = await request.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return new Request(request, { body: text });
  }
  for (const message of Array.isArray(body) ? body : [body]) {
    if (typeof message !== "object" || message === null) continue;
    if (typeof (message as { method?: unknown }).method !== "string") continue;
    const params = (message as { params?: Record<string, unknown> }).params ??=
      {};
    if (typeof params !== "object" || params === null) continue;
    const meta = (params._meta ??= {}) as Record<string, unknown>;
    if (
      typeof meta === "object" && meta !== null && meta.run_id === undefined
    ) {
      meta.run_id = run;
    }
  }
  const headers = new Headers(request.headers);
  headers.delete("content-length");
  return new Request(request.url, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
  });
}

function closeQuietly(resource: { close(): void }): void {
  try {
    resource.close();
  } catch {
    // already closed
  }
}

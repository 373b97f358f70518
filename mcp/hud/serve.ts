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
import { SUBMIT_TOOL } from "../scenario_wire.ts";
import type { RunToolFilters } from "../run_tools.ts";
import { type DisplayRequest, displayRequest } from "./display.ts";
import {
  type Capability,
  capabilityAddress,
  findCapability,
  mcpCapability,
} from "./capability.ts";
import { type ChannelHost, ControlChannel } from "./channel.ts";
import { ErrorCode, errorFrame } from "./rpc.ts";
import { constantTimeEqual } from "../harness.ts";
import {
  Admission,
  type AdmissionLimits,
  KNOCK_TIMEOUT_MS,
  type Slot,
} from "./admission.ts";
import { FrameBudget } from "./frame_budget.ts";
import type { TaskDefinition } from "./task_run.ts";
import {
  encodeFrame,
  type FrameRead,
  FrameReader,
  MAX_FRAME_BYTES,
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

/** How one connection is served: its limits and the shared state it draws on. */
interface ConnectionContext {
  channel: ControlChannel;
  host: ChannelHost;
  budget: FrameBudget;
  prefaceTimeoutMs: number;
  knockTimeoutMs: number;
  frameTimeoutMs: number;
  idleTimeoutMs: number;
  tunnelIdleMs: number;
}

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

/**
 * One connection: its first frame makes it a tunnel or a control session.
 * A knock (past the caps) must show the harness token in that frame.
 */
async function serveConnection(
  conn: Deno.Conn,
  reader: FrameReader,
  slot: Slot,
  context: ConnectionContext,
): Promise<void> {
  const knock = slot.kind === "knock";
  // A connection that never speaks would hold a slot.
  const silent = setTimeout(
    () => closeConnection(conn, reader),
    knock ? context.knockTimeoutMs : context.prefaceTimeoutMs,
  );
  let first: FrameRead | undefined = await reader.read().finally(() =>
    clearTimeout(silent)
  );
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
    const reason = first.reason;
    first = undefined;
    await writeAll(
      conn,
      encodeFrame(errorFrame(null, ErrorCode.ParseError, reason)),
    );
    if (knock) return;
    return await context.channel.session(conn, reader, { frame: undefined }, {
      frameTimeoutMs: context.frameTimeoutMs,
      idleTimeoutMs: context.idleTimeoutMs,
    });
  }
  let message: unknown = first.value;
  // Neither name may keep the frame alive while the connection is served.
  first = undefined;
  const harness = showsToken(message, context.host.harnessToken);
  if (harness) {
    slot.trust();
    reader.leaveBudget();
  } else if (knock) {
    const id = (message as { id?: unknown } | null)?.id;
    message = undefined;
    await writeAll(
      conn,
      encodeFrame(errorFrame(
        typeof id === "string" || typeof id === "number" ? id : null,
        ErrorCode.ServerError,
        "Too many connections: past the cap only the evaluation harness (hello or tunnel.open with harness_token) is let in; try again later",
      )),
    );
    return;
  }
  if (
    typeof message === "object" && message !== null &&
    (message as { method?: unknown }).method === "tunnel.open"
  ) {
    const request = message as { id?: unknown; params?: unknown };
    message = undefined;
    return await openTunnel(conn, reader, request, context, harness);
  }
  const box = { frame: message };
  message = undefined;
  await context.channel.session(conn, reader, box, {
    frameTimeoutMs: context.frameTimeoutMs,
    idleTimeoutMs: context.idleTimeoutMs,
    onHarness: () => {
      slot.trust();
      reader.leaveBudget();
    },
  });
}

/**
 * Whether a first frame carries the harness token: `hello` or
 * `tunnel.open` with `params.harness_token` equal to it.
 */
function showsToken(message: unknown, token: string | undefined): boolean {
  if (!token || typeof message !== "object" || message === null) return false;
  const { method, params } = message as { method?: unknown; params?: unknown };
  if (method !== "hello" && method !== "tunnel.open") return false;
  const presented = (params as { harness_token?: unknown } | undefined)
    ?.harness_token;
  return typeof presented === "string" && constantTimeEqual(presented, token);
}

/**
 * `tunnel.open`: dial the capability's daemon, answer once, splice bytes.
 * With a harness token set, only a `tunnel.open` carrying it is answered
 * (a tunnel reaches the live tasks' tools and screens); a tunnel opened
 * without it closes after the tunnel idle time.
 */
async function openTunnel(
  conn: Deno.Conn,
  reader: FrameReader,
  message: { id?: unknown; params?: unknown },
  context: ConnectionContext,
  harness: boolean,
): Promise<void> {
  const { host } = context;
  const id = typeof message.id === "string" || typeof message.id === "number"
    ? message.id
    : undefined;
  const reply = async (frame: Record<string, unknown>) => {
    if (id !== undefined) {
      await writeAll(conn, encodeFrame({ jsonrpc: "2.0", id, ...frame }));
    }
  };
  if (host.harnessToken && !harness) {
    return await reply(errorFrame(
      id ?? null,
      ErrorCode.InvalidRequest,
      "tunnel.open answers only the evaluation harness: send harness_token in its params",
    ));
  }
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
    reader.cancel();
    if (early.length > 0) await writeAll(backend, early);
    await splice(conn, backend, {
      idleMs: harness ? 0 : context.tunnelIdleMs,
    });
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
 * per-run state. A scenario call (`prompts/get`, `resources/read`,
 * `_hud_submit`) for a run that is a task of the channel is refused: the
 * task is set up and graded on the channel only, so no client of the
 * capability can set up its own version of a live task under the agent.
 */
function startToolsEndpoint(
  host: SessionHost,
  tasks: {
    soleTask: () => string | undefined;
    holds: (id: string) => boolean;
    display: (request: DisplayRequest) => void;
  },
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
      if (new URL(request.url).pathname !== "/mcp") {
        return Response.json(
          { error: "Not found: the mcp capability serves /mcp" },
          { status: 404 },
        );
      }
      const routed = await withRunId(request, tasks.soleTask());
      if (routed.display) {
        try {
          tasks.display(routed.display);
        } catch (error) {
          return Response.json({
            jsonrpc: "2.0",
            id: null,
            error: { code: -32602, message: (error as Error).message },
          }, { status: 400 });
        }
      }
      if (routed.scenarioRuns.some(tasks.holds)) {
        return Response.json({
          jsonrpc: "2.0",
          id: null,
          error: {
            code: -32600,
            message:
              "This run is a task of the control channel: its prompt, answer and grade go through tasks.start and tasks.grade only",
          },
        }, { status: 403 });
      }
      return http.app.fetch(routed.request);
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

/** Scenario methods: each sets up, answers or grades a run. */
function isScenarioCall(method: string, params: Record<string, unknown>) {
  return method === "prompts/get" || method === "resources/read" ||
    (method === "tools/call" && params.name === SUBMIT_TOOL);
}

/**
 * The request, with `run` as `_meta.run_id` of each message that has none,
 * the run ids its scenario calls name, and the display size its `_meta`
 * asks for (as an MCP client sends it).
 */
async function withRunId(
  request: Request,
  run: string | undefined,
): Promise<
  { request: Request; scenarioRuns: string[]; display?: DisplayRequest }
> {
  const length = Number(request.headers.get("content-length") ?? NaN);
  if (
    request.method !== "POST" || !(length > 0 && length <= MAX_BODY_BYTES)
  ) return { request, scenarioRuns: [] };
  const text = await request.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return {
      request: new Request(request, { body: text }),
      scenarioRuns: [],
    };
  }
  const scenarioRuns: string[] = [];
  let display: DisplayRequest | undefined;
  for (const message of Array.isArray(body) ? body : [body]) {
    if (typeof message !== "object" || message === null) continue;
    const method = (message as { method?: unknown }).method;
    if (typeof method !== "string") continue;
    const params = (message as { params?: Record<string, unknown> }).params ??=
      {};
    if (typeof params !== "object" || params === null) continue;
    const meta = (params._meta ??= {}) as Record<string, unknown>;
    if (typeof meta !== "object" || meta === null) continue;
    display ??= displayRequest(meta);
    if (meta.run_id === undefined && run !== undefined) meta.run_id = run;
    if (isScenarioCall(method, params) && typeof meta.run_id === "string") {
      scenarioRuns.push(meta.run_id);
    }
  }
  const headers = new Headers(request.headers);
  headers.delete("content-length");
  return {
    request: new Request(request.url, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
    }),
    scenarioRuns,
    display,
  };
}

/** Closes a connection and ends its reader's wait for the frame budget. */
function closeConnection(conn: Deno.Conn, reader: FrameReader): void {
  reader.cancel();
  closeQuietly(conn);
}

function closeQuietly(resource: { close(): void }): void {
  try {
    resource.close();
  } catch {
    // already closed
  }
}

/**
 * One connection to the control port: its first frame makes it a tunnel or
 * a control session, a knock (past the caps) must show the harness token in
 * that frame, and a tunnel is spliced to its capability's daemon.
 *
 * @module
 */
import { constantTimeEqual } from "../harness.ts";
import type { Slot } from "./admission.ts";
import { capabilityAddress, findCapability } from "./capability.ts";
import type { ChannelHost, ControlChannel } from "./channel.ts";
import type { FrameBudget } from "./frame_budget.ts";
import {
  encodeFrame,
  type FrameRead,
  type FrameReader,
  writeAll,
} from "./framing.ts";
import { ErrorCode, errorFrame, oversizedFrame } from "./rpc.ts";
import { splice } from "./tunnel.ts";

/** How one connection is served: its limits and the shared state it draws on. */
export interface ConnectionContext {
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
 * One connection: its first frame makes it a tunnel or a control session.
 * A knock (past the caps) must show the harness token in that frame.
 */
export async function serveConnection(
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
      encodeFrame(oversizedFrame(first, reader.limit)),
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

/** Closes a connection and ends its reader's wait for the frame budget. */
export function closeConnection(conn: Deno.Conn, reader: FrameReader): void {
  reader.cancel();
  closeQuietly(conn);
}

/**
 * Closes a resource that may be closed already.
 *
 * @param resource A connection or listener.
 */
export function closeQuietly(resource: { close(): void }): void {
  try {
    resource.close();
  } catch {
    // already closed
  }
}

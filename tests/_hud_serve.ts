// What the HUD channel suites share: an `MCPServer` served over HUD in this
// process on a free loopback port, with the raw wires opened to it closed
// when it is disposed.
import type { MCPServer } from "../mcp/mod.ts";
import type { RunOptions } from "../mcp/server/run.ts";
import { Wire } from "./_hud_wire.ts";

/** A HUD server running in this process. */
export interface HudInProcess {
  /** The control channel's port. */
  port: number;
  /** Opens a raw wire to it (closed on dispose). */
  open(): Promise<Wire>;
  /** Closes the wires and stops the server. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Serves `mcp` over HUD in process, its `HUD_SERVE_PORT` line kept off the
 * test's output.
 *
 * @param mcp The server.
 * @param hudLimits The channel's limits, when the test sets them.
 * @returns The running server.
 */
export async function serveHudInProcess(
  mcp: MCPServer,
  hudLimits?: RunOptions["hudLimits"],
): Promise<HudInProcess> {
  const listening = Promise.withResolvers<number>();
  const log = console.log;
  console.log = () => {}; // the HUD_SERVE_PORT line
  const stopped = new AbortController();
  const running = mcp.run({
    transport: "hud",
    port: 0,
    handleSignals: false,
    signal: stopped.signal,
    onListen: (addr) => listening.resolve(addr.port),
    hudLimits,
  });
  const port = await listening.promise;
  console.log = log;
  const wires: Wire[] = [];
  return {
    port,
    open: async () => {
      const wire = await Wire.open(port);
      wires.push(wire);
      return wire;
    },
    [Symbol.asyncDispose]: async () => {
      for (const wire of wires) wire.close();
      stopped.abort();
      await running;
    },
  };
}

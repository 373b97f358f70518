/**
 * HUD v6's control channel for `MCPServer`: `run({ transport: "hud", port })`
 * serves the server's scenarios as tasks (`hello`, `tasks.list`,
 * `tasks.start`, `tasks.grade`, `tasks.cancel`, `bye`) and its tools as the
 * `mcp` capability, over newline-delimited JSON-RPC 2.0 on one TCP port,
 * with `tunnel.open` reaching each capability (`mcp`, `rfb`, `cdp`).
 *
 * @example A desktop environment publishes its screen and browser
 * ```ts
 * import { MCPServer } from "../mod.ts";
 * import { cdpCapability, rfbCapability } from "./mod.ts";
 *
 * const mcp = new MCPServer({ name: "desktop" });
 * mcp.initialize(() => {
 *   // x11vnc -localhost -rfbport 5901 on display :1; Chromium on 9222
 *   mcp.addCapability(rfbCapability("rfb://127.0.0.1:5901", { display: 1 }));
 *   mcp.addCapability(cdpCapability("http://127.0.0.1:9222"));
 * });
 * // await mcp.run({ transport: "hud", port: 8765 });
 * ```
 *
 * @module
 */
export {
  type Capability,
  capabilityAddress,
  CapabilitySchema,
  cdpCapability,
  findCapability,
  mcpCapability,
  rfbCapability,
} from "./capability.ts";
export { ControlChannel, type SessionOptions } from "./channel.ts";
export { MAX_TASKS, PARKED_TTL_MS } from "./session_tasks.ts";
export { ChannelError, ErrorCode } from "./rpc.ts";
export { type GradeFrame, type TaskDefinition } from "./task_run.ts";
export {
  encodeFrame,
  type Frame,
  type FrameRead,
  FrameReader,
  type FrameReaderOptions,
  MAX_FRAME_BYTES,
  MAX_FRAME_DEPTH,
  MAX_FRAME_VALUES,
  oversizedMessage,
  writeAll,
} from "./framing.ts";
export {
  FRAME_BUDGET_BYTES,
  type HudOptions,
  type HudSource,
  type HudTransport,
  IDLE_TIMEOUT_MS,
  PREFACE_TIMEOUT_MS,
  startHud,
  TUNNEL_IDLE_MS,
} from "./serve.ts";
export {
  type AdmissionLimits,
  KNOCK_TIMEOUT_MS,
  MAX_CONNECTIONS,
  MAX_KNOCKS,
  MAX_PER_PEER,
} from "./admission.ts";
export { FrameBudget, FREE_FRAME_BYTES } from "./frame_budget.ts";
export {
  CapabilityForwarder,
  type ControlAddress,
  openTunnel,
  parseControlAddress,
  splice,
} from "./tunnel.ts";
export { RfbClient } from "./rfb.ts";
export { keysymCode, RfbExecutor } from "./rfb_executor.ts";

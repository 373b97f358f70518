/**
 * Desktop tools for evaluation environments: a `computer` tool (screenshots,
 * mouse, keyboard; in the screen size the agent was told) over an executor
 * (a real X display through xdotool, or an in-process recorder for tests), a
 * persistent `bash` tool, and an `edit` tool confined to a root directory.
 * Their inputs follow Anthropic's computer-use, bash and text-editor tools,
 * so a runner maps each provider's native actions onto them.
 *
 * @example A computer-use environment
 * ```ts ignore
 * import { MCPServer } from "@org/mcpkit/mcp";
 * import { BashTool, ComputerTool, EditTool, startXvfb, X11Executor } from "@org/mcpkit/tools";
 *
 * const xvfb = await startXvfb({ width: 1280, height: 800 });
 * const computer = new ComputerTool({ executor: new X11Executor({ display: xvfb.display }) });
 * const bash = new BashTool({ cwd: "/workspace" });
 * const mcp = new MCPServer({ name: "desktop" });
 * mcp.addTool(computer);
 * mcp.addTool(bash);
 * mcp.addTool(new EditTool({ root: "/workspace" }));
 * // The agent's screen size comes with the initialize request (1920x1080 without it).
 * mcp.initialize((ctx) => computer.configure(ctx.meta));
 * mcp.shutdown(async () => {
 *   await bash.close();
 *   await xvfb.close();
 * });
 * await mcp.run({ transport: "stdio" });
 * ```
 *
 * @module
 */
export { ComputerTool } from "./computer.ts";
export type { ComputerToolOptions } from "./computer.ts";
export { COMPUTER_ACTIONS } from "./computer_input.ts";
export type {
  ComputerAction,
  ComputerInput,
  ComputerInputShape,
} from "./computer_input.ts";
export {
  agentSize,
  DEFAULT_AGENT_SIZE,
  scaleCoordinate,
  zoomArea,
} from "./display.ts";
export type { DisplayMeta, ZoomArea } from "./display.ts";
export { RecordingExecutor } from "./executor.ts";
export type {
  Executor,
  MouseButton,
  Point,
  RecordedAction,
  RecordingExecutorOptions,
  Region,
  Size,
} from "./executor.ts";
export { startXvfb, X11Executor } from "./x11.ts";
export type { X11ExecutorOptions, Xvfb, XvfbOptions } from "./x11.ts";
export { BashTool } from "./bash.ts";
export type {
  BashInputShape,
  BashToolOptions,
  ShellIsolation,
} from "./bash.ts";
export { EditTool } from "./edit.ts";
export type { EditToolOptions } from "./edit.ts";
export type { EditCommand, EditInput, EditInputShape } from "./edit_input.ts";
export { keysyms } from "./keys.ts";
export { encodePng, pngSize } from "./png.ts";
export type { Rgb } from "./png.ts";

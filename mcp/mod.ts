/**
 * A base class for MCP servers that run as evaluation environments in
 * containers: the official SDK's `McpServer` plus initialize and shutdown
 * hooks, hubs of hidden setup/evaluate tools, result normalisation, and a
 * runner for stdio, Streamable HTTP and legacy SSE with dev endpoints, and
 * HUD v6's control channel (`transport: "hud"`).
 *
 * @example A counter environment
 * ```ts
 * import { z } from "zod";
 * import { BaseHub, MCPServer } from "@org/mcpkit/mcp";
 *
 * const mcp = new MCPServer({ name: "counter-env", instructions: "Count to ten." });
 * const setup = new BaseHub("setup");
 * const evaluate = new BaseHub("evaluate");
 *
 * mcp.initialize(async (ctx) => {
 *   await ctx.progress(50, "starting"); // no-op without a progressToken
 *   setup.env = evaluate.env = { count: 0, width: ctx.meta?.display_width ?? 1920 };
 *   mcp.mount(setup);
 *   mcp.mount(evaluate);
 * });
 * mcp.shutdown(() => console.error("bye")); // SIGTERM only
 *
 * mcp.tool(
 *   { name: "increment", description: "Add one.", input: { by: z.number().default(1) } },
 *   ({ by }) => String(setup.env.count += by),
 * );
 * setup.tool("reset", { input: { to: z.number() } }, ({ to }) => {
 *   setup.env.count = to;
 * });
 * evaluate.tool("reached", { input: { target: z.number() } }, ({ target }) => ({
 *   reward: setup.env.count >= target ? 1 : 0,
 *   done: true,
 * }));
 *
 * // In the environment's main module; resolves when the server stops:
 * // await mcp.run({ transport: Deno.args[0] ?? "stdio", port: 8765 });
 * ```
 *
 * @module
 */
export { MCPServer } from "./server/server.ts";
export type { MCPServerOptions } from "./server/options.ts";
export type { ListName } from "./server/instances.ts";
export type { RunOptions, TransportName } from "./server/run.ts";
export type { HudOptions } from "./hud/serve.ts";
export type { AdmissionLimits } from "./hud/admission.ts";
export { BaseHub } from "./primitives/hub.ts";
export type { HubFunction, HubTool } from "./primitives/hub.ts";
export { BaseTool, normalizeToolResult } from "./primitives/tool.ts";
export type {
  EvaluationResult,
  Shape,
  ToolArgs,
  ToolDefinition,
  ToolExtra,
  ToolFunction,
  ToolMethodDecorator,
  ToolOptions,
  ToolReturn,
} from "./primitives/tool.ts";
export type {
  InitializeContext,
  InitializeHook,
  InitializeMeta,
  InitializeSession,
  ProgressParams,
} from "./server/initialize.ts";
export type {
  ResourceContext,
  ResourceFunction,
  ResourceOptions,
} from "./primitives/resource.ts";
export type { ShutdownHook } from "./server/signals.ts";
export type {
  PromptFunction,
  PromptMessage,
  PromptOptions,
  PromptResult,
  PromptReturn,
} from "./primitives/prompt.ts";
export type {
  ScenarioAnswer,
  ScenarioContext,
  ScenarioEvaluation,
  ScenarioFunction,
  ScenarioOptions,
  ScenarioPrompt,
  ScenarioResult,
  Subscore,
} from "./scenarios/scenario.ts";
export type { RunRef } from "./scenarios/runs.ts";
export {
  declaresRunIsolation,
  RUN_ISOLATION_CAPABILITY,
  runIsolation,
  RunState,
} from "./scenarios/runs.ts";
export type { JsonSchema } from "./primitives/_schema.ts";
export {
  type Capability,
  cdpCapability,
  mcpCapability,
  rfbCapability,
} from "./hud/capability.ts";

/**
 * The eval runner: drives an environment's scenarios (`MCPServer.scenario`,
 * or any server using HUD's wire names) with an agent loop against a model
 * through the gateway, and reports reward, steps, tokens, cost and the
 * gateway's trace id per task. `deno task eval` is its command line.
 *
 * @example Run every scenario of an environment once
 * ```ts
 * import { runEval } from "@org/mcpkit/eval";
 *
 * const { results } = await runEval({
 *   target: { command: "deno", args: ["run", "-A", "examples/text_game/main.ts"] },
 *   tasks: [{ scenario: "guess", args: { target: 7, max: 10 } }],
 *   endpoint: { gatewayUrl: "http://localhost:8080", key: "gk_…", model: "gpt-4o-mini" },
 * });
 * console.log(results[0].reward, results[0].cost_usd);
 * ```
 *
 * @module
 */
export { parseTasks, runEval, summaryTable } from "./runner.ts";
export type {
  EvalOptions,
  EvalResult,
  EvalSummary,
  EvalTask,
} from "./runner.ts";
export { agentTools, Environment, parseTarget } from "./environment.ts";
export type {
  AgentTool,
  EnvironmentTarget,
  EvaluationResult,
  PromptMessage,
  ScenarioInfo,
} from "./environment.ts";
export { chatMessages, runAgent } from "./agent.ts";
export type { AgentOutcome, ChatMessage, ModelEndpoint } from "./agent.ts";

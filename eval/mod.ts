/**
 * The eval runner: drives an environment's scenarios (`MCPServer.scenario`,
 * or any server using HUD's wire names) with an agent loop against a model
 * through the gateway, in the model's native convention (chat completions,
 * Anthropic Messages, Responses, Gemini; the environment's `computer` tool as
 * each one's native computer tool), and reports reward, steps, tokens, cost
 * and the gateway's trace id per task. Only the tools the scenario gives the
 * agent are callable. A run that fails has no reward (`null`) and an error
 * kind; infrastructure failures can be retried, runs timed out, repeated
 * (pass@k) and resumed (`completed`). `deno task eval` is its command line.
 *
 * @example Run every scenario of an environment once
 * ```ts
 * import { runEval, summaryTable } from "@org/mcpkit/eval";
 *
 * const { results } = await runEval({
 *   target: { command: "deno", args: ["run", "-A", "examples/text_game/main.ts"] },
 *   tasks: [{ scenario: "guess", args: { target: 7, max: 10 } }],
 *   endpoint: { gatewayUrl: "http://localhost:8080", key: "gk_…", model: "gpt-4o-mini" },
 *   repeat: 4,
 *   retries: 2,
 *   timeoutMs: 300_000,
 * });
 * console.log(summaryTable(results)); // mean ± 95% ci, pass@1, pass@4, errors
 * console.log(results[0].reward ?? results[0].error, results[0].cost_usd);
 * ```
 *
 * @module
 */
export { concurrencyRefusal, runEval } from "./run/runner.ts";
export {
  countsAsFailure,
  passAtK,
  rewardStats,
  scoredReward,
  summaryTable,
} from "./run/stats.ts";
export { parseTasks, runIdentity } from "./run/tasks.ts";
export type { EvalOptions, EvalSummary } from "./run/runner.ts";
export type { RewardStats } from "./run/stats.ts";
export type { EvalTask } from "./run/tasks.ts";
export type {
  EarlierAttempt,
  EvalErrorKind,
  EvalResult,
} from "./run/result.ts";
export { Environment } from "./environments/environment.ts";
export { DEFAULT_TOOL_TIMEOUT_MS } from "./environments/contract.ts";
export {
  EnvironmentError,
  OutputTail,
  parseTarget,
  STDERR_TAIL_BYTES,
} from "./environments/target.ts";
export {
  agentTools,
  capToolContent,
  DEFAULT_MAX_TOOL_RESULT_BYTES,
  DEFAULT_MAX_TOOL_RESULT_IMAGES,
  MAX_IMAGE_BYTES,
} from "./tool_host.ts";
export type {
  ConnectOptions,
  EvaluationResult,
  ScenarioInfo,
  ScenarioSetup,
} from "./environments/contract.ts";
export type {
  ContainerNetwork,
  ContainerRuntime,
  EnvironmentTarget,
  LaunchedContainer,
} from "./environments/target.ts";
export {
  DockerRuntime,
  type DockerRuntimeOptions,
} from "./environments/docker.ts";
export type { AgentTool, PromptMessage } from "./tool_host.ts";
export {
  chatMessages,
  CONVENTIONS,
  emptyOutcome,
  runAgent,
  usdToMicros,
} from "./agents/agent.ts";
export { DEFAULT_DISPLAY } from "./tool_host.ts";
export type {
  AgentOptions,
  AgentOutcome,
  ChatMessage,
  Convention,
  ModelEndpoint,
  SafetyCheck,
} from "./agents/agent.ts";
export type {
  DisplaySize,
  ToolHost,
  ToolImage,
  ToolResult,
} from "./tool_host.ts";
export {
  conventionForRoutes,
  fetchModelFacts,
  modelFacts,
  parseConvention,
} from "./agents/convention.ts";
export { claudeComputerPlan } from "./agents/claude_computer.ts";
export { responsesComputerPlan } from "./agents/responses_computer.ts";
export { geminiComputerPlan } from "./agents/gemini_computer.ts";
export type {
  ComputerUseWire,
  JsonObject,
  ModelFacts,
  ModelFeatures,
} from "./agents/model.ts";
export type { ComputerPlan } from "./agents/tool_gate.ts";
export type {
  ModelRequest,
  ModelResponse,
  ModelTransport,
  RunPlace,
} from "./agents/model.ts";
export type {
  Trajectory,
  TrajectoryImage,
  TrajectoryPrompt,
  TrajectoryStep,
  TrajectoryToolCall,
  TrajectoryToolResult,
} from "./agents/trajectory.ts";
export type { ClaudePointer } from "./agents/claude_computer.ts";
export { gatewayTransport } from "./agents/model.ts";
export { renderReport, REPORT_CSP, writeReport } from "./report/report.ts";
export type { ReportOptions } from "./report/report.ts";
export { escapeHtml } from "./report/html.ts";
export { imagesDirFor, storeImages } from "./report/images.ts";
export { readResults } from "./run/results_file.ts";
export type { ResultsFile } from "./run/results_file.ts";
export { Recorder } from "./record/recorder.ts";
export {
  firstDifference,
  ReplayDivergence,
  Replayer,
} from "./record/replay.ts";
export type {
  RecordedExchange,
  RecordedTask,
  RecordingIndex,
} from "./record/recording.ts";

/**
 * The eval runner: tasks (`{ scenario, args }`) spread over workers, each
 * with its own connection to the environment (its own process over stdio:
 * one environment per process), an agent loop per task, the answer
 * submitted, the reward read, one JSONL result per task as it finishes.
 *
 * @module
 */
import {
  type AgentOutcome,
  type Convention,
  type DisplaySize,
  emptyOutcome,
  type ModelEndpoint,
  runAgent,
  type SafetyCheck,
} from "./agent.ts";
import type { Trajectory } from "./agents/trajectory.ts";
import { modelConvention } from "./convention.ts";
import {
  agentTools,
  type ConnectOptions,
  Environment,
  type EnvironmentTarget,
  type EvaluationResult,
} from "./environment.ts";

/** One task: a scenario and its arguments. */
export interface EvalTask {
  /** The scenario's name. */
  scenario: string;
  /** Its arguments (sent as prompt arguments, so as strings). */
  args?: Record<string, unknown>;
}

/** One task's result, a line of the results file. */
export interface EvalResult {
  /** The task's position in the task list. */
  task: number;
  /** The scenario. */
  scenario: string;
  /** Its arguments. */
  args: Record<string, unknown>;
  /** The reward (0 when the run failed). */
  reward: number;
  /** Whether the environment called the task done. */
  done: boolean;
  /** The reward's parts, when the scenario gives them. */
  subscores?: EvaluationResult["subscores"];
  /** The environment's explanation. */
  content?: string;
  /** Set when setup, the agent or evaluation failed. */
  error?: string;
  /** Model calls. */
  steps: number;
  /** Tokens over all model calls. */
  tokens: { input: number; output: number };
  /** What the gateway charged for the run's calls, USD. */
  cost_usd: number;
  /** The `trace-id` every model call of the run carried. */
  trace_id: string;
  /** The wire convention the model was spoken to in. */
  convention: Convention;
  /** Calls of tools the agent was not given, refused with an error result. */
  refused_tool_calls: number;
  /** Safety checks the model raised and the runner acknowledged. */
  safety_checks: SafetyCheck[];
  /** Wall time of the run, ms. */
  duration_ms: number;
  /** What the agent did, step by step (see `eval/agents/trajectory.ts`; the report shows it). */
  trajectory?: Trajectory;
}

/** Options of {@linkcode runEval}. */
export interface EvalOptions {
  /** The environment. */
  target: EnvironmentTarget;
  /** The tasks, in order. */
  tasks: EvalTask[];
  /** The model behind the gateway. */
  endpoint: ModelEndpoint;
  /** Runs at once (default 1); each has its own connection. */
  concurrency?: number;
  /** Model calls per run at most (default 10). */
  maxSteps?: number;
  /** Sent as `_meta.harness_token`, and to a stdio environment as `MCP_HARNESS_TOKEN`. */
  harnessToken?: string;
  /** The wire convention (default: from the gateway's `/models` routes for the model). */
  convention?: Convention;
  /** More variables for a stdio environment's process. */
  env?: Record<string, string>;
  /** The screen size the environment is told (default 1280×800). */
  display?: DisplaySize;
  /** How long one tool call may take, ms (default 120 000); longer is an error. */
  toolTimeoutMs?: number;
  /** Text of one tool result the model sees at most, UTF-8 bytes (default 100 000). */
  maxToolResultBytes?: number;
  /** Images of one tool result the model sees at most (default 4). */
  maxToolResultImages?: number;
  /** Stops the run: no new task starts, running ones are cut off and reported. */
  signal?: AbortSignal;
  /** Called with each result as it finishes (write it out here). */
  onResult?: (result: EvalResult) => void | Promise<void>;
}

/** What a finished (or stopped) eval produced. */
export interface EvalSummary {
  /** Every result, in task order. */
  results: EvalResult[];
  /** Whether it was stopped before every task ran. */
  stopped: boolean;
}

/**
 * Runs the tasks.
 *
 * @param options The environment, tasks, model and limits.
 * @returns The results.
 */
export async function runEval(options: EvalOptions): Promise<EvalSummary> {
  const results: EvalResult[] = [];
  const convention = options.convention ??
    await modelConvention(
      options.endpoint.gatewayUrl,
      options.endpoint.model,
      options.signal,
    );
  const connect: ConnectOptions = {
    harnessToken: options.harnessToken,
    env: options.env,
    display: options.display,
    toolTimeoutMs: options.toolTimeoutMs,
    maxToolResultBytes: options.maxToolResultBytes,
    maxToolResultImages: options.maxToolResultImages,
  };
  const queue = options.tasks.map((task, index) => ({ task, index }));
  const workers = Math.max(
    1,
    Math.min(options.concurrency ?? 1, queue.length),
  );
  const worker = async () => {
    let env: Environment | undefined;
    try {
      while (queue.length > 0 && !options.signal?.aborted) {
        const { task, index } = queue.shift()!;
        env ??= await Environment.connect(options.target, connect);
        const result = await runTask(env, task, index, options, convention);
        results.push(result);
        await options.onResult?.(result);
        // A run that failed may have left its connection unusable.
        if (result.error) {
          await env.close().catch(() => {});
          env = undefined;
        }
      }
    } finally {
      await env?.close().catch(() => {});
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  results.sort((a, b) => a.task - b.task);
  return {
    results,
    stopped: results.length < options.tasks.length ||
      options.signal?.aborted === true,
  };
}

async function runTask(
  env: Environment,
  task: EvalTask,
  index: number,
  options: EvalOptions,
  convention: Convention,
): Promise<EvalResult> {
  const started = performance.now();
  const runId = crypto.randomUUID();
  const args = task.args ?? {};
  const agent: AgentOutcome = emptyOutcome();
  const base = {
    task: index,
    scenario: task.scenario,
    args,
    trace_id: runId,
    convention,
  };
  const finish = (
    evaluation: Partial<EvaluationResult>,
    error?: string,
  ): EvalResult => ({
    ...base,
    reward: evaluation.reward ?? 0,
    done: evaluation.done ?? true,
    ...(evaluation.subscores && { subscores: evaluation.subscores }),
    ...(evaluation.content && { content: String(evaluation.content) }),
    ...(error && { error }),
    steps: agent.steps,
    tokens: agent.tokens,
    cost_usd: agent.costMicros / 1_000_000,
    refused_tool_calls: agent.refusedToolCalls,
    safety_checks: agent.safetyChecks,
    duration_ms: Math.round(performance.now() - started),
    trajectory: agent.trajectory,
  });
  try {
    const setup = await env.setup(task.scenario, args, runId);
    const tools = agentTools(await env.tools(), setup.exclude, setup.allowed);
    await runAgent(env, options.endpoint, setup.messages, tools, {
      outcome: agent,
      maxSteps: options.maxSteps ?? 10,
      traceId: runId,
      convention,
      display: env.display,
      signal: options.signal,
    });
    await env.submit(task.scenario, agent.answer, runId);
    const evaluation = await env.evaluate(task.scenario, runId);
    return finish(
      evaluation,
      evaluation.isError
        ? `Evaluation failed: ${evaluation.content}`
        : undefined,
    );
  } catch (error) {
    const message = options.signal?.aborted
      ? "Stopped before the run finished"
      : error instanceof Error
      ? error.message
      : String(error);
    return finish({ reward: 0, done: false }, message);
  }
}

/**
 * Reads a task file: one JSON object `{ "scenario": …, "args": {…} }` per
 * line; blank lines and lines starting with `#` are skipped.
 *
 * @param text The file's text.
 * @returns The tasks.
 * @throws {Error} Naming the line that is not a task.
 */
export function parseTasks(text: string): EvalTask[] {
  const tasks: EvalTask[] = [];
  text.split("\n").forEach((line, i) => {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) return;
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch {
      throw new Error(
        `Task line ${i + 1} is not JSON: ${trimmed.slice(0, 80)}`,
      );
    }
    const task = value as EvalTask;
    if (
      typeof task !== "object" || task === null ||
      typeof task.scenario !== "string" ||
      (task.args !== undefined &&
        (typeof task.args !== "object" || Array.isArray(task.args)))
    ) {
      throw new Error(
        `Task line ${i + 1} needs {"scenario": "<name>", "args": {...}}`,
      );
    }
    tasks.push({ scenario: task.scenario, args: task.args ?? {} });
  });
  return tasks;
}

/**
 * The summary table: per scenario, runs, mean reward, errors, mean steps,
 * tokens and cost, then the totals.
 *
 * @param results The results.
 * @returns The table, as lines of text.
 */
export function summaryTable(results: EvalResult[]): string {
  const groups = new Map<string, EvalResult[]>();
  for (const result of results) {
    groups.set(result.scenario, [
      ...(groups.get(result.scenario) ?? []),
      result,
    ]);
  }
  const row = (name: string, list: EvalResult[]) => {
    const mean = (f: (r: EvalResult) => number) =>
      list.reduce((sum, r) => sum + f(r), 0) / Math.max(1, list.length);
    return [
      name,
      String(list.length),
      mean((r) => r.reward).toFixed(3),
      String(list.filter((r) => r.error).length),
      mean((r) => r.steps).toFixed(1),
      String(
        list.reduce((sum, r) => sum + r.tokens.input + r.tokens.output, 0),
      ),
      `$${list.reduce((sum, r) => sum + r.cost_usd, 0).toFixed(6)}`,
    ];
  };
  const rows = [
    ["scenario", "runs", "mean reward", "errors", "steps", "tokens", "cost"],
    ...[...groups].map(([name, list]) => row(name, list)),
    row("total", results),
  ];
  const widths = rows[0].map((_, i) =>
    Math.max(...rows.map((r) => r[i].length))
  );
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i])).join("  "))
    .join("\n");
}

/**
 * One run of a task on a connection to its environment: the scenario set up,
 * the agent loop, the answer submitted, the reward read, and how a run that
 * failed ends (an error kind, whether the agent acted, what the gateway
 * charged). The runner (`runner.ts`) plans the runs, spreads them over
 * workers and tries them again.
 *
 * @module
 */
import {
  type AgentOutcome,
  type Convention,
  emptyOutcome,
  type ModelEndpoint,
  runAgent,
} from "../agents/agent.ts";
import type { ModelFacts } from "../agents/model.ts";
import { agentTools } from "../tool_host.ts";
import type { EvaluationResult } from "../environments/contract.ts";
import type { Environment } from "../environments/environment.ts";
import type { ContainerNetwork } from "../environments/target.ts";
import type { EvalErrorKind, EvalResult } from "./result.ts";
import type { EvalTask } from "./tasks.ts";
import { chargedMicros } from "./trace_cost.ts";
import { errorKind } from "./attempts.ts";

/** One run to make: a task, its position and its repetition. */
export interface PlannedRun {
  /** The task. */
  task: EvalTask;
  /** The task's position in the task list. */
  index: number;
  /** Which repetition of the task. */
  repeat: number;
}

/** What one run takes of the eval's options (`EvalOptions`). */
export interface RunOptions {
  /** The model behind the gateway. */
  endpoint: ModelEndpoint;
  /** Model calls per run at most (default 10). */
  maxSteps?: number;
  /** How long one run may take, ms (default: no limit); longer is an error. */
  timeoutMs?: number;
  /** Stops the run: it is cut off and reported. */
  signal?: AbortSignal;
}

/**
 * The result of a run that never got to run its task.
 *
 * @param run The run.
 * @param convention The wire convention the model is spoken to in.
 * @param model The model.
 * @param error Why it could not run.
 * @param signal The eval's stop signal (a stopped run says so).
 * @returns Its result: an error with no reward.
 */
export function failedRun(
  run: PlannedRun,
  convention: Convention,
  model: string,
  error: unknown,
  signal?: AbortSignal,
): EvalResult {
  const stopped = signal?.aborted === true;
  return {
    task: run.index,
    repeat: run.repeat,
    scenario: run.task.scenario,
    args: run.task.args ?? {},
    reward: null,
    done: false,
    error: stopped ? "Stopped before the run finished" : messageOf(error),
    error_kind: stopped ? "stopped" : errorKind(error),
    agent_acted: false,
    attempts: 1,
    steps: 0,
    tokens: { input: 0, output: 0 },
    cost_usd: 0,
    trace_id: "",
    convention,
    model,
    refused_tool_calls: 0,
    safety_checks: [],
    duration_ms: 0,
  };
}

/**
 * Runs one task on a connection: setup, the agent loop, the answer
 * submitted, the evaluation read; a failure becomes the result's error
 * (and what the gateway charged for calls cut off, from its traces).
 *
 * @param env The connection.
 * @param run The run.
 * @param options The model and the run's limits.
 * @param facts What the gateway says about the model.
 * @returns The run's result.
 * @throws {OtherNetwork} When the scenario asks for a network its
 * container lacks, before the agent acts.
 */
export async function runTask(
  env: Environment,
  run: PlannedRun,
  options: RunOptions,
  facts: ModelFacts,
): Promise<EvalResult> {
  const { convention } = facts;
  const started = performance.now();
  const runId = crypto.randomUUID();
  const { task } = run;
  const args = task.args ?? {};
  const agent: AgentOutcome = emptyOutcome();
  const timeout = options.timeoutMs === undefined
    ? undefined
    : AbortSignal.timeout(options.timeoutMs);
  const signals = [options.signal, timeout].filter((s) => s !== undefined);
  const signal = signals.length > 0 ? AbortSignal.any(signals) : undefined;
  const base = {
    task: run.index,
    repeat: run.repeat,
    scenario: task.scenario,
    args,
    trace_id: runId,
    convention,
    model: options.endpoint.model,
    environment: env.name,
    ...(options.endpoint.gatewayUrl &&
      { gateway: options.endpoint.gatewayUrl }),
  };
  const finish = (
    evaluation: Partial<EvaluationResult>,
    error?: { message: string; kind: EvalErrorKind },
  ): EvalResult => ({
    ...base,
    reward: error ? null : evaluation.reward ?? 0,
    done: evaluation.done ?? true,
    ...(evaluation.subscores && { subscores: evaluation.subscores }),
    ...(evaluation.content && { content: String(evaluation.content) }),
    ...(error && {
      error: error.message,
      error_kind: error.kind,
      agent_acted: agentActed(agent, error.kind),
    }),
    attempts: 1,
    steps: agent.steps,
    tokens: agent.tokens,
    cost_usd: agent.costMicros / 1_000_000,
    refused_tool_calls: agent.refusedToolCalls,
    ...(agent.excessToolCalls > 0 &&
      { excess_tool_calls: agent.excessToolCalls }),
    safety_checks: agent.safetyChecks,
    duration_ms: Math.round(performance.now() - started),
    trajectory: agent.trajectory,
  });
  const work = async () => {
    const setup = await env.setup(task.scenario, args, runId);
    const network = env.otherNetwork(setup.network);
    if (network) throw new OtherNetwork(network);
    const tools = agentTools(await env.tools(), setup.exclude, setup.allowed);
    await runAgent(env.forRun(runId), options.endpoint, setup.messages, tools, {
      outcome: agent,
      maxSteps: options.maxSteps ?? 10,
      traceId: runId,
      run: { task: run.index, repeat: run.repeat },
      convention,
      display: env.display,
      ...(facts.computerUse && { computerUse: facts.computerUse }),
      ...(facts.features && { features: facts.features }),
      ...(setup.computerEnvironment &&
        { computerEnvironment: setup.computerEnvironment }),
      excludedTools: setup.exclude,
      signal,
    });
    signal?.throwIfAborted();
    await env.submit(task.scenario, agent.answer, runId);
    return await env.evaluate(task.scenario, runId);
  };
  const result = await settle(work, signal, options, timeout, env, finish);
  if (!result.error || agent.steps === 0 || !options.endpoint.gatewayUrl) {
    return result;
  }
  // A call cut off (by the time-out, a stop, a failure elsewhere) was still
  // charged, but its x-gateway-cost never arrived: the gateway's traces say.
  const charged = await chargedMicros({
    gatewayUrl: options.endpoint.gatewayUrl,
    key: options.endpoint.key,
    traceId: runId,
    calls: agent.steps,
  });
  return charged !== undefined && charged > agent.costMicros
    ? {
      ...result,
      cost_usd: charged / 1_000_000,
      cost_source: "gateway_traces",
    }
    : result;
}

/** A run's work carried out: its result, or the error it ended in. */
async function settle(
  work: () => Promise<EvaluationResult>,
  signal: AbortSignal | undefined,
  options: RunOptions,
  timeout: AbortSignal | undefined,
  env: Environment,
  finish: (
    evaluation: Partial<EvaluationResult>,
    error?: { message: string; kind: EvalErrorKind },
  ) => EvalResult,
): Promise<EvalResult> {
  try {
    const evaluation = await untilAborted(work(), signal);
    return evaluation.isError
      ? finish(evaluation, {
        message: `Evaluation failed: ${evaluation.content}`,
        kind: "task",
      })
      : finish(evaluation);
  } catch (error) {
    if (error instanceof OtherNetwork) throw error;
    if (options.signal?.aborted) {
      return finish({ done: false }, {
        message: "Stopped before the run finished",
        kind: "stopped",
      });
    }
    if (timeout?.aborted) {
      return finish({ done: false }, {
        message: `Timed out after ${options.timeoutMs! / 1000} s`,
        kind: "timeout",
      });
    }
    const kind = errorKind(error);
    // A process that died usually said why on its way out.
    const said = kind === "environment" ? env.stderr.text(1) : "";
    return finish({ done: false }, {
      message: said
        ? `${messageOf(error)}; its stderr ends: ${said.slice(0, 500)}`
        : messageOf(error),
      kind,
    });
  }
}

/**
 * Whether the agent acted before its run failed: the model answered once at
 * least, or was called when the time ran out (a model that stalls must not
 * turn a task it would fail into one that is not scored).
 */
function agentActed(agent: AgentOutcome, kind: EvalErrorKind): boolean {
  if (kind === "timeout") return agent.steps > 0;
  return agent.trajectory.steps.some((step) =>
    step.status >= 200 && step.status <= 299
  );
}

/**
 * The promise's value, or a rejection as soon as the signal aborts (the
 * work itself is cut off when its connection is closed).
 */
function untilAborted<T>(work: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return work;
  work.catch(() => {}); // settled later or never: nobody waits for it then
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    if (signal.aborted) return abort();
    signal.addEventListener("abort", abort, { once: true });
    work.then(resolve, reject).finally(() =>
      signal.removeEventListener("abort", abort)
    );
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A run's scenario asked for a network its container lacks (and the
 * operator allows): the run starts again, before the agent acts, in a
 * container that has it.
 */
export class OtherNetwork extends Error {
  /** The network to start the container with. */
  readonly network: ContainerNetwork;

  /**
   * Creates the error.
   *
   * @param network The network the scenario asked for.
   */
  constructor(network: ContainerNetwork) {
    super(`The scenario asks for the ${network} network`);
    this.name = "OtherNetwork";
    this.network = network;
  }
}

/**
 * One run's result, as the runner writes it (a JSONL line each) and the
 * report, the statistics and a resumed eval read it.
 *
 * @module
 */
import type { SafetyCheck } from "../agents/loop.ts";
import type { Convention } from "../agents/model.ts";
import type { Trajectory } from "../agents/trajectory.ts";
import type { EvaluationResult } from "../environments/contract.ts";

/**
 * Why a run ended in an error: the environment or the gateway failed
 * (`environment`, `gateway`: infrastructure, retried with `retries`), the
 * task ran out of time (`timeout`), the eval was stopped (`stopped`), or
 * the scenario or the agent failed (`task`: a failure of what is measured,
 * never retried).
 */
export type EvalErrorKind =
  | "environment"
  | "gateway"
  | "timeout"
  | "stopped"
  | "task";

/** One task's result, a line of the results file. */
export interface EvalResult {
  /** The task's position in the task list. */
  task: number;
  /** Which repetition of the task this is, from 0 (see `repeat`). */
  repeat: number;
  /** The scenario. */
  scenario: string;
  /** Its arguments. */
  args: Record<string, unknown>;
  /**
   * The environment's reward; `null` when the run ended in an error (the
   * statistics then score it 0 if the agent had acted: `agent_acted`).
   */
  reward: number | null;
  /** Whether the environment called the task done. */
  done: boolean;
  /** The reward's parts, when the scenario gives them. */
  subscores?: EvaluationResult["subscores"];
  /** The environment's explanation. */
  content?: string;
  /** Set when setup, the agent or evaluation failed. */
  error?: string;
  /** What kind of failure `error` is. */
  error_kind?: EvalErrorKind;
  /**
   * Whether the agent acted before the run ended: the model answered (or,
   * for a time-out, was called). An error after that is scored as a 0 (see
   * `scoredReward` in `stats.ts`); one before is not scored and is tried
   * again (`retries`, `--resume`). Absent in results of older runners.
   */
  agent_acted?: boolean;
  /** Tries the task took (more than 1 after infrastructure failures). */
  attempts: number;
  /**
   * The tries before the last, when there were any: why each failed and
   * what its model calls cost (their cost and tokens are in `cost_usd` and
   * `tokens` too).
   */
  earlier_attempts?: EarlierAttempt[];
  /** Model calls. */
  steps: number;
  /** Tokens over all model calls, of every try. */
  tokens: { input: number; output: number };
  /** What the gateway charged for the run's calls, USD, over every try. */
  cost_usd: number;
  /**
   * `gateway_traces` when `cost_usd` was read from the gateway's traces of
   * the run (`GET /v1/traces?trace_id=`): a call was cut off (by the
   * time-out, a stop, a failure) before its cost header arrived.
   */
  cost_source?: "gateway_traces";
  /** The environment's name (its MCP server name; absent in older results). */
  environment?: string;
  /** The gateway the model was called through (its URL; absent when replayed, and in older results). */
  gateway?: string;
  /** The `trace-id` every model call of the run carried. */
  trace_id: string;
  /** The wire convention the model was spoken to in. */
  convention: Convention;
  /** The model id (absent in results of runners before it was kept). */
  model?: string;
  /** Calls of tools the agent was not given, refused with an error result. */
  refused_tool_calls: number;
  /** Tool calls past the per-turn cap (32), answered with an error, not run. */
  excess_tool_calls?: number;
  /** Safety checks the model raised and the runner acknowledged. */
  safety_checks: SafetyCheck[];
  /** Wall time of the run, ms. */
  duration_ms: number;
  /** What the agent did, step by step (see `eval/agents/trajectory.ts`; the report shows it). */
  trajectory?: Trajectory;
}

/** A try of a run that failed and was tried again (see `retries`). */
export interface EarlierAttempt {
  /** Why it failed. */
  error: string;
  /** What kind of failure it was. */
  error_kind?: EvalErrorKind;
  /** Model calls it made. */
  steps: number;
  /** Tokens of its model calls. */
  tokens: { input: number; output: number };
  /** What its model calls cost, USD. */
  cost_usd: number;
}

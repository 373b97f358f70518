/**
 * One task of the control channel: a scenario run by the same generator
 * machinery the MCP wire uses (`mcp/scenarios/scenario.ts`), suspended between
 * `tasks.start` (setup up to the first yield, the prompt) and `tasks.grade`
 * (the answer sent in, the second yield as the grade).
 *
 * @module
 */
import {
  coerceArguments,
  normalizeAnswer,
  promptMessages,
  type ScenarioAnswer,
  type ScenarioContext,
  type ScenarioFunction,
  type ScenarioOptions,
  scenarioResult,
} from "../scenarios/scenario.ts";
import { runKey } from "../scenarios/runs.ts";
import type { ToolExtra } from "../primitives/tool.ts";
import { ChannelError, ErrorCode, messageOf } from "./rpc.ts";

/** A scenario as the channel serves it: a task. */
export interface TaskDefinition {
  /** Name, description, input shape, tool filters. */
  options: ScenarioOptions;
  /** The generator. */
  fn: ScenarioFunction;
}

/** The grade frame: the score and what the scenario said about it. */
export interface GradeFrame {
  /** The reward, a finite number. */
  score: number;
  /** Whether the task is over. */
  done: boolean;
  /** An explanation. */
  content?: string;
  /** Anything else the grader keeps. */
  info?: Record<string, unknown>;
  /** Whether grading failed. */
  isError?: boolean;
  /** Weighted parts of the score. */
  subscores?: { name: string; weight: number; value: number }[];
}

/** One task between `tasks.start` and `tasks.grade`. */
export class TaskRun {
  readonly #name: string;
  readonly #generator: AsyncGenerator<unknown, unknown, ScenarioAnswer>;
  /** When its session lost its connection (ms), while parked. */
  parkedAt: number | undefined;

  private constructor(
    name: string,
    generator: AsyncGenerator<unknown, unknown, ScenarioAnswer>,
  ) {
    this.#name = name;
    this.#generator = generator;
  }

  /** Runs setup to the first yield; the prompt frame and the suspended run. */
  static async start(
    task: TaskDefinition,
    args: Record<string, unknown>,
    context: ScenarioContext,
  ): Promise<{ run: TaskRun; prompt: Record<string, unknown> }> {
    const { name } = task.options;
    const coerced = coerceArguments(task.options.input ?? {}, args);
    if (!coerced.ok) {
      throw new ChannelError(
        ErrorCode.InvalidParams,
        `Invalid arguments for task "${name}": ${coerced.error}`,
      );
    }
    const generator = task.fn(coerced.value as never, context);
    let first;
    try {
      first = await generator.next();
    } catch (error) {
      await generator.return(undefined).catch(() => {});
      throw new ChannelError(
        ErrorCode.ServerError,
        `Setup of task "${name}" failed: ${messageOf(error)}`,
      );
    }
    if (first.done) {
      throw new ChannelError(
        ErrorCode.ServerError,
        `Task "${name}" ended before yielding its prompt`,
      );
    }
    let prompt: unknown;
    try {
      prompt = typeof first.value === "string"
        ? first.value
        : promptMessages(first.value);
    } catch (error) {
      await generator.return(undefined).catch(() => {});
      throw new ChannelError(ErrorCode.ServerError, messageOf(error));
    }
    const meta: Record<string, unknown> = {};
    if (task.options.excludeTools) {
      meta.exclude_tools = task.options.excludeTools;
    }
    if (task.options.allowedTools) {
      meta.allowed_tools = task.options.allowedTools;
    }
    return {
      run: new TaskRun(name, generator),
      prompt: {
        prompt,
        ...(Object.keys(meta).length > 0 && { _meta: meta }),
      },
    };
  }

  /** The task's name. */
  get name(): string {
    return this.#name;
  }

  /** Sends the answer in and returns the second yield as a grade frame; the run ends. */
  async grade(answer: unknown): Promise<GradeFrame> {
    try {
      const next = await this.#generator.next(normalizeAnswer(answer ?? ""));
      const result = scenarioResult(next.value);
      if (!Number.isFinite(result.reward)) {
        throw new TypeError(
          `Task "${this.#name}" graded with a reward that is not a finite number`,
        );
      }
      const { reward, ...rest } = result;
      return { score: reward, ...rest };
    } catch (error) {
      return {
        score: 0,
        done: true,
        isError: true,
        content: messageOf(error),
      };
    } finally {
      this.cancel();
    }
  }

  /** Closes the generator (its `finally` blocks run). */
  cancel(): void {
    this.#generator.return(undefined).catch(() => {});
  }
}

/**
 * The scenario context of a task: its run key is `run:<session id>`, the key
 * an MCP request carrying `_meta.run_id = <session id>` maps to, so the
 * agent's tool calls over the `mcp` capability reach the task's state.
 */
export function taskContext(sessionId: string): ScenarioContext {
  const meta = { run_id: sessionId };
  const signal = new AbortController().signal;
  const notify = () => Promise.resolve();
  // Scenario code reads `_meta`, `signal` and `sessionId`; the SDK request
  // fields are there for code written against them, with nothing to reach.
  const extra = {
    mcpReq: { id: 0, method: "tasks.start", _meta: meta, signal, notify },
    _meta: meta,
    signal,
    requestId: 0,
    sendNotification: notify,
  } as unknown as ToolExtra;
  return { extra, run: runKey(extra) };
}

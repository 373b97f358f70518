/**
 * The control channel's sessions and the tasks they hold: which session ids
 * have a live connection, which proved they are the harness, and the task
 * each holds, live or parked. A task outlives its connection: a drop parks
 * it, `hello {session_id}` resumes it, a plain `tasks.grade` adopts it when
 * it is the only one parked, and a parked task is cancelled after
 * {@linkcode PARKED_TTL_MS} or when the table is full.
 *
 * @module
 */
import { constantTimeEqual } from "../harness.ts";
import type { RunToolFilters } from "../scenarios/run_tools.ts";
import { ChannelError, ErrorCode } from "./rpc.ts";
import {
  type GradeFrame,
  taskContext,
  type TaskDefinition,
  TaskRun,
} from "./task_run.ts";

/** How long a parked task is kept before it is cancelled, ms. */
export const PARKED_TTL_MS = 30 * 60_000;
/** The most tasks held at once (live and parked); past it the oldest parked goes. */
export const MAX_TASKS = 256;

/** The tasks held by session id, and the state of each session. */
export class SessionTasks {
  readonly #filters: RunToolFilters | undefined;
  readonly #runs = new Map<string, TaskRun>();
  readonly #live = new Set<string>();
  readonly #authorised = new Set<string>();
  /** Tasks whose setup is running: not held yet, but counted toward the cap. */
  #starting = 0;

  /**
   * Creates an empty table.
   *
   * @param filters Where each held task's tool filters are kept, for the
   * server to enforce.
   */
  constructor(filters?: RunToolFilters) {
    this.#filters = filters;
  }

  /** Tasks held now, live and parked. */
  get size(): number {
    return this.#runs.size;
  }

  /** The session id of the one task held, when exactly one is. */
  get sole(): string | undefined {
    return this.#runs.size === 1 ? this.#runs.keys().next().value : undefined;
  }

  /**
   * Whether a task runs under this session id.
   *
   * @param sessionId The id.
   * @returns Whether a task, live or parked, has it.
   */
  holds(sessionId: string): boolean {
    return this.#runs.has(sessionId);
  }

  /**
   * A new session with a live connection.
   *
   * @returns Its id.
   */
  open(): string {
    const sessionId = newSessionId();
    this.#live.add(sessionId);
    return sessionId;
  }

  /**
   * The connection of `sessionId` ended: its task, if any, parks for a later
   * `hello` or `tasks.grade`.
   *
   * @param sessionId The session whose connection ended.
   */
  close(sessionId: string): void {
    this.#live.delete(sessionId);
    this.#authorised.delete(sessionId);
    const run = this.#runs.get(sessionId);
    if (run) run.parkedAt = Date.now();
  }

  /**
   * Moves a connection from `current` to the parked session `requested`
   * (`hello {session_id}`).
   *
   * @param current The session the connection speaks for now.
   * @param requested The session it asks for.
   * @returns The session id it speaks for from now on.
   * @throws {ChannelError} When `requested` is not a string, has a live
   * connection, or holds no task.
   */
  resume(current: string, requested: unknown): string {
    if (requested === undefined || requested === null) return current;
    if (requested === current) return current;
    if (typeof requested !== "string") {
      throw new ChannelError(
        ErrorCode.InvalidParams,
        "hello: session_id must be a string",
      );
    }
    if (this.#live.has(requested)) {
      throw new ChannelError(
        ErrorCode.InvalidRequest,
        `Session "${requested.slice(0, 200)}" has a live connection`,
      );
    }
    const run = this.#runs.get(requested);
    if (!run) {
      throw new ChannelError(
        ErrorCode.InvalidRequest,
        `Unknown session "${
          requested.slice(0, 200)
        }": no parked task has that id`,
      );
    }
    this.#live.delete(current);
    this.#authorised.delete(current);
    // The task this connection leaves behind parks, as on a drop: left
    // neither live nor parked, no sweep would ever end it.
    const left = this.#runs.get(current);
    if (left) left.parkedAt = Date.now();
    this.#live.add(requested);
    run.parkedAt = undefined;
    return requested;
  }

  /**
   * Marks the session as the harness when `token` is the harness token.
   *
   * @param sessionId The session.
   * @param token What its `hello` sent as `harness_token`.
   * @param expected The harness token; unset: nobody is marked.
   */
  authorise(sessionId: string, token: unknown, expected?: string): void {
    if (
      expected && typeof token === "string" &&
      constantTimeEqual(token, expected)
    ) {
      this.#authorised.add(sessionId);
    }
  }

  /**
   * Whether the session proved it is the harness.
   *
   * @param sessionId The session.
   * @returns `true` once its `hello` carried the harness token.
   */
  authorised(sessionId: string): boolean {
    return this.#authorised.has(sessionId);
  }

  /**
   * Runs a task's setup for the session (cancelling the task it held) and
   * holds the task, parked if the connection dropped meanwhile.
   *
   * @param sessionId The session.
   * @param task The task.
   * @param args Its arguments.
   * @returns The prompt frame.
   * @throws {ChannelError} When {@linkcode MAX_TASKS} are held and none is parked.
   */
  async start(
    sessionId: string,
    task: TaskDefinition,
    args: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    this.cancel(sessionId);
    this.#expire();
    this.#starting++;
    let started;
    try {
      started = await TaskRun.start(task, args, taskContext(sessionId));
    } finally {
      this.#starting--;
    }
    const { run, prompt } = started;
    // The connection may have dropped while setup ran: the task parks.
    if (!this.#live.has(sessionId)) run.parkedAt = Date.now();
    this.#runs.set(sessionId, run);
    this.#filters?.set(
      taskContext(sessionId).run,
      task.options.name,
      task.options,
    );
    return prompt;
  }

  /**
   * Grades the session's task, or the one parked task when the session
   * holds none, and lets it go.
   *
   * @param sessionId The session.
   * @param answer The agent's answer.
   * @returns The grade frame.
   * @throws {ChannelError} When there is no task to grade, or several parked.
   */
  async grade(sessionId: string, answer: unknown): Promise<GradeFrame> {
    let run = this.#runs.get(sessionId);
    let owner = sessionId;
    if (!run) {
      const parked = [...this.#runs.keys()].filter((id) => !this.#live.has(id))
        .sort();
      if (parked.length === 0) {
        throw new ChannelError(ErrorCode.InvalidRequest, "No task in progress");
      }
      if (parked.length > 1) {
        throw new ChannelError(
          ErrorCode.InvalidRequest,
          `${parked.length} parked sessions (${
            parked.join(", ")
          }): resume one by sending hello with its session_id`,
        );
      }
      owner = parked[0];
      run = this.#runs.get(owner)!;
    }
    this.#forget(owner, run);
    return await run.grade(answer);
  }

  /**
   * Cancels the session's task, if it holds one.
   *
   * @param sessionId The session.
   */
  cancel(sessionId: string): void {
    const run = this.#runs.get(sessionId);
    if (!run) return;
    this.#forget(sessionId, run);
    run.cancel();
  }

  /** Cancels every task. */
  cancelAll(): void {
    for (const [id, run] of [...this.#runs]) {
      this.#forget(id, run);
      run.cancel();
    }
  }

  /**
   * Cancels parked tasks idle for longer than {@linkcode PARKED_TTL_MS}.
   *
   * @param now The current time.
   */
  sweep(now: number = Date.now()): void {
    for (const [id, run] of [...this.#runs]) {
      if (run.parkedAt !== undefined && now - run.parkedAt > PARKED_TTL_MS) {
        this.cancel(id);
      }
    }
  }

  /** Drops a task from the table, and its tool filters. */
  #forget(sessionId: string, run: TaskRun): void {
    this.#runs.delete(sessionId);
    this.#filters?.delete(taskContext(sessionId).run, run.name);
  }

  /** Cancels parked tasks past their time, and the oldest parked past the cap. */
  #expire(now = Date.now()): void {
    const parked = [...this.#runs].filter(([, run]) =>
      run.parkedAt !== undefined
    )
      .sort(([, a], [, b]) => a.parkedAt! - b.parkedAt!);
    let excess = this.#runs.size + this.#starting + 1 - MAX_TASKS;
    for (const [id, run] of parked) {
      if (now - run.parkedAt! > PARKED_TTL_MS || excess > 0) {
        this.cancel(id);
        excess--;
      }
    }
    if (this.#runs.size + this.#starting >= MAX_TASKS) {
      throw new ChannelError(
        ErrorCode.ServerError,
        `Too many tasks in progress (${MAX_TASKS}): finish or cancel one`,
      );
    }
  }
}

function newSessionId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `sess-${
    Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")
  }`;
}

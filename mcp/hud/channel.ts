/**
 * The control session: JSON-RPC 2.0 over one connection (`hello`,
 * `tasks.list`, `tasks.start`, `tasks.grade`, `tasks.cancel`, `bye`), and the
 * suspended tasks (`task_run.ts`), one per session id, that outlive their
 * connection. A dropped connection parks its session's task;
 * `hello {session_id}` resumes it, and a plain `tasks.grade` adopts the
 * parked task when exactly one is parked.
 *
 * @module
 */
import { shapeToJsonSchema } from "../primitives/_schema.ts";
import { constantTimeEqual } from "../harness.ts";
import type { Capability } from "./capability.ts";
import type { RunToolFilters } from "../scenarios/run_tools.ts";
import { type DisplayRequest, displayRequest } from "./display.ts";
import {
  type FrameRead,
  type FrameReader,
  oversizedMessage,
  writeAll,
} from "./framing.ts";
import { readWithin } from "./frame_wait.ts";
import {
  ChannelError,
  encodeReply,
  errorBody,
  ErrorCode,
  errorFrame,
  messageOf,
  requestId,
} from "./rpc.ts";
import {
  type GradeFrame,
  taskContext,
  type TaskDefinition,
  TaskRun,
} from "./task_run.ts";

/** What the channel needs from the environment. */
export interface ChannelHost {
  /** Name and version, for `hello`. */
  info: { name: string; version: string };
  /** The tasks, by name. */
  tasks(): ReadonlyMap<string, TaskDefinition>;
  /** The capability bindings `hello` publishes. */
  bindings(): readonly Capability[];
  /** When set, task methods answer only a session whose `hello` carried it as `harness_token`. */
  harnessToken?: string;
  /** Where each held task's tool filters are kept, for the server to enforce. */
  filters?: RunToolFilters;
  /** Hands a display size `hello` asks for to the tools that take one. */
  display?(request: DisplayRequest): void;
}

/** Options of {@linkcode ControlChannel.session}. */
export interface SessionOptions {
  /**
   * A frame begun and not finished within one to two of these periods
   * closes the connection, ms (0 or unset: no limit).
   */
  frameTimeoutMs?: number;
  /**
   * A session that begins no frame for this long is closed, ms (0 or unset:
   * no limit), unless it proved it is the harness or holds a task.
   */
  idleTimeoutMs?: number;
  /** Called after each message once the session proved it is the harness (its token). */
  onHarness?: () => void;
}

/** How long a parked task is kept before it is cancelled, ms. */
export const PARKED_TTL_MS = 30 * 60_000;
/** The most tasks held at once (live and parked); past it the oldest parked goes. */
export const MAX_TASKS = 256;

/**
 * The serving-time state of one control channel: the tasks by session id,
 * and which sessions have a live connection.
 */
export class ControlChannel {
  readonly #host: ChannelHost;
  readonly #runs = new Map<string, TaskRun>();
  readonly #live = new Set<string>();
  readonly #authorised = new Set<string>();
  #draining = false;
  #inFlight = 0;
  /** Tasks whose setup is running: not held yet, but counted toward the cap. */
  #starting = 0;

  /**
   * Creates the channel.
   *
   * @param host The environment's side.
   */
  constructor(host: ChannelHost) {
    this.#host = host;
  }

  /** Tasks held now, live and parked. */
  get tasks(): number {
    return this.#runs.size;
  }

  /**
   * The session id of the one task held, when exactly one is: the run a tool
   * call without `_meta.run_id` belongs to (HUD's own harness sends none,
   * and runs one task per environment).
   */
  get soleTask(): string | undefined {
    return this.#runs.size === 1 ? this.#runs.keys().next().value : undefined;
  }

  /**
   * Whether a task of the channel runs under this session id (a run id a
   * request over the `mcp` capability may name).
   *
   * @param sessionId The id.
   * @returns Whether a task, live or parked, has it.
   */
  holds(sessionId: string): boolean {
    return this.#runs.has(sessionId);
  }

  /** Whether a call is being answered. */
  get busy(): boolean {
    return this.#inFlight > 0;
  }

  /** Refuses new calls from now on (SIGTERM), while running ones finish. */
  drain(): void {
    this.#draining = true;
  }

  /** Cancels every task (the server is stopping). */
  cancelAll(): void {
    for (const [id, run] of [...this.#runs]) {
      this.#forget(id, run);
      run.cancel();
    }
  }

  /**
   * Serves one control session until the peer hangs up, sends `bye`, or
   * sends an oversized frame (answered with the error, then closed). Each
   * frame is let go once answered: nothing a peer sent stays alive while
   * the session waits for its next frame.
   *
   * @param conn The connection.
   * @param reader Its frame reader.
   * @param first The first frame, already read, in a box the session
   * empties (a caller's own variable would keep it alive for the whole
   * session).
   * @param options Time limits, and who to tell when the peer proves it is
   * the harness.
   */
  async session(
    conn: Deno.Conn,
    reader: FrameReader,
    first: { frame: unknown },
    options: SessionOptions = {},
  ): Promise<void> {
    let sessionId = newSessionId();
    this.#live.add(sessionId);
    let message: unknown = first.frame;
    first.frame = undefined;
    const close = () => {
      reader.cancel();
      try {
        conn.close();
      } catch {
        // closed already
      }
    };
    try {
      for (;;) {
        const step = await this.#answer(conn, message, sessionId, options);
        message = undefined;
        sessionId = step.sessionId;
        if (step.end) return;
        let next: FrameRead | undefined = await readWithin(reader, close, {
          frameTimeoutMs: options.frameTimeoutMs ?? 0,
          idleTimeoutMs: options.idleTimeoutMs ?? 0,
          exempt: () =>
            this.#authorised.has(sessionId) || this.#runs.has(sessionId),
        });
        if (next.kind === "end") return;
        if (next.kind === "oversized") {
          await writeAll(
            conn,
            encodeReply(errorFrame(
              null,
              ErrorCode.InvalidRequest,
              oversizedMessage(next.size, next.measured),
              { size: next.size, limit: reader.limit },
            )),
          );
          return;
        }
        if (next.kind === "invalid") {
          await writeAll(
            conn,
            encodeReply(errorFrame(null, ErrorCode.ParseError, next.reason)),
          );
          continue;
        }
        message = next.value;
        next = undefined;
      }
    } finally {
      // The task stays, parked, for a later hello or tasks.grade.
      this.#live.delete(sessionId);
      this.#authorised.delete(sessionId);
      const run = this.#runs.get(sessionId);
      if (run) run.parkedAt = Date.now();
    }
  }

  /** Handles one message and sends its reply; the message is not kept. */
  async #answer(
    conn: Deno.Conn,
    message: unknown,
    sessionId: string,
    options: SessionOptions,
  ): Promise<{ sessionId: string; end?: boolean }> {
    const outcome = await this.#handle(message, sessionId);
    const session = outcome.sessionId ?? sessionId;
    if (this.#authorised.has(session)) options.onHarness?.();
    // A notification gets no reply; a request that could not be read
    // gets its error with id null.
    const id = requestId(message) ?? (outcome.invalid ? null : undefined);
    if (id !== undefined && outcome.reply) {
      await writeAll(
        conn,
        encodeReply({ jsonrpc: "2.0", id, ...outcome.reply }),
      );
    }
    return { sessionId: session, end: outcome.end };
  }

  async #handle(
    message: unknown,
    sessionId: string,
  ): Promise<
    {
      reply?: Record<string, unknown>;
      sessionId?: string;
      end?: boolean;
      invalid?: boolean;
    }
  > {
    if (message === undefined) return {};
    if (
      typeof message !== "object" || message === null ||
      Array.isArray(message) ||
      typeof (message as { method?: unknown }).method !== "string"
    ) {
      return {
        invalid: true,
        reply: errorBody(
          ErrorCode.InvalidRequest,
          "Invalid Request: expected a JSON-RPC 2.0 request object with a method",
        ),
      };
    }
    const { method, params: rawParams } = message as {
      method: string;
      params?: unknown;
    };
    if (this.#draining) {
      return {
        reply: errorBody(ErrorCode.ServerError, "The server is shutting down"),
      };
    }
    const params = rawParams === undefined || rawParams === null
      ? {}
      : rawParams;
    if (typeof params !== "object" || Array.isArray(params)) {
      return {
        reply: errorBody(
          ErrorCode.InvalidParams,
          `${method}: params must be an object`,
        ),
      };
    }
    this.#inFlight++;
    try {
      switch (method) {
        case "hello": {
          const resumed = this.#hello(
            sessionId,
            params as Record<string, unknown>,
          );
          return {
            sessionId: resumed,
            reply: {
              result: {
                session_id: resumed,
                env: {
                  name: this.#host.info.name,
                  version: this.#host.info.version,
                },
                bindings: this.#host.bindings(),
              },
            },
          };
        }
        case "tasks.list":
          return { reply: { result: { tasks: this.#list() } } };
        case "tasks.start":
          this.#requireHarness(sessionId);
          return {
            reply: {
              result: await this.#start(
                sessionId,
                params as Record<string, unknown>,
              ),
            },
          };
        case "tasks.grade":
          this.#requireHarness(sessionId);
          return {
            reply: {
              result: await this.#grade(
                sessionId,
                (params as { answer?: unknown }).answer,
              ),
            },
          };
        case "tasks.cancel":
          this.#requireHarness(sessionId);
          this.#cancel(sessionId);
          return { reply: { result: { cancelled: true } } };
        case "bye":
          this.#cancel(sessionId);
          return { reply: { result: { goodbye: true } }, end: true };
        default:
          return {
            reply: errorBody(
              ErrorCode.MethodNotFound,
              `Method not found: ${method.slice(0, 200)}`,
            ),
          };
      }
    } catch (error) {
      return error instanceof ChannelError
        ? { reply: errorBody(error.code, error.message) }
        : { reply: errorBody(ErrorCode.ServerError, messageOf(error)) };
    } finally {
      this.#inFlight--;
    }
  }

  /** `hello`: the session id this connection speaks for from now on. */
  #hello(current: string, params: Record<string, unknown>): string {
    const token = params.harness_token;
    const requested = params.session_id;
    let sessionId = current;
    if (
      requested !== undefined && requested !== null && requested !== current
    ) {
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
      sessionId = requested;
    }
    const expected = this.#host.harnessToken;
    if (
      expected && typeof token === "string" &&
      constantTimeEqual(token, expected)
    ) {
      this.#authorised.add(sessionId);
    }
    // The screen is the environment's, shared by every task: with a token
    // set, only the harness may size it.
    const display = displayRequest(params);
    if (display && this.#host.display) {
      if (expected && !this.#authorised.has(sessionId)) {
        throw new ChannelError(
          ErrorCode.InvalidRequest,
          "hello: display_width and display_height are for the evaluation harness: send harness_token with them",
        );
      }
      try {
        this.#host.display(display);
      } catch (error) {
        throw new ChannelError(ErrorCode.InvalidParams, messageOf(error));
      }
    }
    return sessionId;
  }

  #requireHarness(sessionId: string): void {
    if (this.#host.harnessToken && !this.#authorised.has(sessionId)) {
      throw new ChannelError(
        ErrorCode.InvalidRequest,
        "Task methods answer only the evaluation harness: send harness_token in hello",
      );
    }
  }

  #list(): Record<string, unknown>[] {
    return [...this.#host.tasks().values()].map(({ options }) => ({
      id: options.name,
      description: options.description ?? "",
      args: {
        ...shapeToJsonSchema(options.input ?? {}),
        additionalProperties: false,
      },
    }));
  }

  async #start(
    sessionId: string,
    params: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    const { id, args = {} } = params;
    if (typeof id !== "string") {
      throw new ChannelError(
        ErrorCode.InvalidParams,
        "tasks.start: id must be a string",
      );
    }
    if (typeof args !== "object" || args === null || Array.isArray(args)) {
      throw new ChannelError(
        ErrorCode.InvalidParams,
        "tasks.start: args must be an object",
      );
    }
    const task = this.#host.tasks().get(id);
    if (!task) {
      throw new ChannelError(
        ErrorCode.InvalidParams,
        `Unknown task "${id.slice(0, 200)}": the environment offers ${
          [...this.#host.tasks().keys()].join(", ") || "none"
        }`,
      );
    }
    this.#cancel(sessionId);
    this.#expire();
    this.#starting++;
    let started;
    try {
      started = await TaskRun.start(
        task,
        args as Record<string, unknown>,
        taskContext(sessionId),
      );
    } finally {
      this.#starting--;
    }
    const { run, prompt } = started;
    // The connection may have dropped while setup ran: the task parks.
    if (!this.#live.has(sessionId)) run.parkedAt = Date.now();
    this.#runs.set(sessionId, run);
    this.#host.filters?.set(
      taskContext(sessionId).run,
      task.options.name,
      task.options,
    );
    return prompt;
  }

  async #grade(sessionId: string, answer: unknown): Promise<GradeFrame> {
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

  #cancel(sessionId: string): void {
    const run = this.#runs.get(sessionId);
    if (!run) return;
    this.#forget(sessionId, run);
    run.cancel();
  }

  /** Drops a task from the table, and its tool filters. */
  #forget(sessionId: string, run: TaskRun): void {
    this.#runs.delete(sessionId);
    this.#host.filters?.delete(taskContext(sessionId).run, run.name);
  }

  /** Cancels parked tasks idle for longer than {@linkcode PARKED_TTL_MS}. */
  sweep(now: number = Date.now()): void {
    for (const [id, run] of [...this.#runs]) {
      if (run.parkedAt !== undefined && now - run.parkedAt > PARKED_TTL_MS) {
        this.#cancel(id);
      }
    }
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
        this.#cancel(id);
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

/**
 * The control session: JSON-RPC 2.0 over one connection (`hello`,
 * `tasks.list`, `tasks.start`, `tasks.grade`, `tasks.cancel`, `bye`): each
 * frame read within its time limits, checked, answered and let go. The
 * suspended tasks (`task_run.ts`), one per session id, that outlive their
 * connection are held by `session_tasks.ts`.
 *
 * @module
 */
import { shapeToJsonSchema } from "../primitives/_schema.ts";
import type { Capability } from "./capability.ts";
import type { RunToolFilters } from "../scenarios/run_tools.ts";
import { type DisplayRequest, displayRequest } from "./display.ts";
import { type FrameRead, type FrameReader, writeAll } from "./framing.ts";
import { readWithin } from "./frame_wait.ts";
import {
  ChannelError,
  encodeReply,
  errorBody,
  ErrorCode,
  errorFrame,
  messageOf,
  oversizedFrame,
  requestId,
} from "./rpc.ts";
import { SessionTasks } from "./session_tasks.ts";
import type { TaskDefinition } from "./task_run.ts";

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

/**
 * One control channel: serves each session's connection and answers its
 * methods; the tasks the sessions hold are a {@linkcode SessionTasks}.
 */
export class ControlChannel {
  readonly #host: ChannelHost;
  readonly #tasks: SessionTasks;
  #draining = false;
  #inFlight = 0;

  /**
   * Creates the channel.
   *
   * @param host The environment's side.
   */
  constructor(host: ChannelHost) {
    this.#host = host;
    this.#tasks = new SessionTasks(host.filters);
  }

  /** Tasks held now, live and parked. */
  get tasks(): number {
    return this.#tasks.size;
  }

  /**
   * The session id of the one task held, when exactly one is: the run a tool
   * call without `_meta.run_id` belongs to (HUD's own harness sends none,
   * and runs one task per environment).
   */
  get soleTask(): string | undefined {
    return this.#tasks.sole;
  }

  /**
   * Whether a task of the channel runs under this session id (a run id a
   * request over the `mcp` capability may name).
   *
   * @param sessionId The id.
   * @returns Whether a task, live or parked, has it.
   */
  holds(sessionId: string): boolean {
    return this.#tasks.holds(sessionId);
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
    this.#tasks.cancelAll();
  }

  /**
   * Cancels parked tasks idle for longer than
   * `PARKED_TTL_MS`.
   *
   * @param now The current time.
   */
  sweep(now: number = Date.now()): void {
    this.#tasks.sweep(now);
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
    let sessionId = this.#tasks.open();
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
            this.#tasks.authorised(sessionId) || this.#tasks.holds(sessionId),
        });
        if (next.kind === "end") return;
        if (next.kind === "oversized") {
          await writeAll(
            conn,
            encodeReply(oversizedFrame(next, reader.limit)),
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
      this.#tasks.close(sessionId);
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
    if (this.#tasks.authorised(session)) options.onHarness?.();
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
              result: await this.#tasks.grade(
                sessionId,
                (params as { answer?: unknown }).answer,
              ),
            },
          };
        case "tasks.cancel":
          this.#requireHarness(sessionId);
          this.#tasks.cancel(sessionId);
          return { reply: { result: { cancelled: true } } };
        case "bye":
          this.#tasks.cancel(sessionId);
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
    const sessionId = this.#tasks.resume(current, params.session_id);
    const expected = this.#host.harnessToken;
    this.#tasks.authorise(sessionId, params.harness_token, expected);
    // The screen is the environment's, shared by every task: with a token
    // set, only the harness may size it.
    const display = displayRequest(params);
    if (display && this.#host.display) {
      if (expected && !this.#tasks.authorised(sessionId)) {
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
    if (this.#host.harnessToken && !this.#tasks.authorised(sessionId)) {
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
    return await this.#tasks.start(
      sessionId,
      task,
      args as Record<string, unknown>,
    );
  }
}

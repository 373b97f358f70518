/**
 * The runner's side of HUD v6's control channel: the client that speaks
 * JSON-RPC over framed TCP (`hello`, `tasks.list`, `tasks.start`,
 * `tasks.grade`, `bye`), the shapes of its answers, and the grade frame read
 * as an evaluation.
 *
 * @module
 */
import { z } from "zod";
import { CapabilitySchema } from "../../mcp/hud/capability.ts";
import {
  encodeFrame,
  FrameReader,
  oversizedMessage,
  writeAll,
} from "../../mcp/hud/framing.ts";
import type { ControlAddress } from "../../mcp/hud/tunnel.ts";
import type { EvaluationResult } from "./contract.ts";
import { EnvironmentError } from "./target.ts";

/** How long one control call may take, ms (setup and grading included). */
export const CONTROL_CALL_TIMEOUT_MS = 300_000;

/** `hello`'s answer. */
export const HelloSchema = z.object({
  session_id: z.string().min(1).max(200),
  env: z.object({
    name: z.string().min(1).max(200),
    version: z.string().max(200).nullish(),
  }),
  bindings: z.array(CapabilitySchema).max(64),
});

/** `tasks.list`'s answer. */
export const TaskListSchema = z.object({
  tasks: z.array(z.object({
    id: z.string().min(1).max(200),
    description: z.string().nullish(),
    args: z.record(z.string(), z.unknown()).nullish(),
  })).max(10_000),
});

/** `tasks.start`'s answer. */
export const StartSchema = z.object({
  prompt: z.union([
    z.string(),
    z.array(z.object({
      role: z.string(),
      content: z.union([z.string(), z.record(z.string(), z.unknown())]),
    })),
  ]),
  _meta: z.object({
    exclude_tools: z.array(z.string()).optional(),
    allowed_tools: z.array(z.string()).optional(),
  }).passthrough().optional(),
}).passthrough();

/** `tasks.grade`'s answer. */
export const GradeSchema = z.object({
  score: z.number(),
  done: z.boolean().optional(),
  content: z.unknown().optional(),
  info: z.record(z.string(), z.unknown()).optional(),
  isError: z.boolean().optional(),
  subscores: z.array(z.object({
    name: z.string(),
    weight: z.number(),
    value: z.number(),
  })).optional(),
}).passthrough();

/**
 * Reads a grade frame (`{score, done?, content?, info?, isError?,
 * subscores?}`) as the runner's evaluation: the score is the reward.
 *
 * @param value The result of `tasks.grade`.
 * @param scenario The task, for the error message.
 * @returns The evaluation.
 * @throws {EnvironmentError} When the frame has no numeric score, or its
 * score is not finite (and grading did not fail).
 */
export function gradeResult(
  value: unknown,
  scenario: string,
): EvaluationResult {
  const graded = GradeSchema.safeParse(value);
  if (!graded.success) {
    throw new EnvironmentError(
      `The grade of "${scenario}" has no numeric score`,
    );
  }
  const { score, done, content, info, isError, subscores } = graded.data;
  if (!isError && !Number.isFinite(score)) {
    throw new EnvironmentError(
      `The score of "${scenario}" is not a finite number`,
    );
  }
  return {
    reward: score,
    done: done ?? true,
    ...(content !== undefined && {
      content: typeof content === "string" ? content : JSON.stringify(content),
    }),
    ...(info && { info }),
    ...(isError && { isError }),
    ...(subscores && { subscores }),
  };
}

/** A JSON-RPC error the control channel answered with. */
export class ControlError extends EnvironmentError {
  /** The JSON-RPC code. */
  readonly code: number;

  /**
   * Creates the error.
   *
   * @param method The method called.
   * @param code The code.
   * @param message The server's message.
   */
  constructor(method: string, code: number, message: string) {
    super(`${method} failed (${code}): ${message}`);
    this.name = "ControlError";
    this.code = code;
  }
}

/**
 * One control session: calls one at a time, each reply matched to its
 * request, frames bounded by the 16 MiB limit both ways.
 */
export class ControlClient {
  readonly #conn: Deno.Conn;
  readonly #reader: FrameReader;
  #nextId = 1;
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(conn: Deno.Conn) {
    this.#conn = conn;
    this.#reader = new FrameReader(conn);
  }

  /**
   * Connects to the control port.
   *
   * @param address Host and port.
   * @returns The client.
   * @throws {EnvironmentError} When nothing answers there.
   */
  static async connect(address: ControlAddress): Promise<ControlClient> {
    try {
      return new ControlClient(await Deno.connect(address));
    } catch (error) {
      throw new EnvironmentError(
        `Cannot reach the environment at tcp://${address.hostname}:${address.port}: ${
          (error as Error).message
        }`,
        { cause: error },
      );
    }
  }

  /**
   * Calls a method and waits for its reply.
   *
   * @param method The method.
   * @param params Its params.
   * @param timeoutMs How long the reply may take.
   * @returns The result.
   * @throws {ControlError} When the server answers with an error.
   * @throws {EnvironmentError} When the channel fails or times out.
   */
  call(
    method: string,
    params: Record<string, unknown> = {},
    timeoutMs = CONTROL_CALL_TIMEOUT_MS,
  ): Promise<unknown> {
    const run = this.#queue.then(() => this.#call(method, params, timeoutMs));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #call(
    method: string,
    params: Record<string, unknown>,
    timeoutMs: number,
  ): Promise<unknown> {
    if (this.#closed) {
      throw new EnvironmentError("The control channel is closed");
    }
    const id = this.#nextId++;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.close();
        reject(
          new EnvironmentError(
            `${method} did not answer within ${timeoutMs / 1000} s`,
          ),
        );
      }, timeoutMs);
    });
    try {
      return await Promise.race([this.#exchange(id, method, params), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  async #exchange(
    id: number,
    method: string,
    params: Record<string, unknown>,
  ): Promise<unknown> {
    let frame: Uint8Array;
    try {
      frame = encodeFrame({ jsonrpc: "2.0", id, method, params });
    } catch (error) {
      throw new EnvironmentError(`${method}: ${(error as Error).message}`);
    }
    try {
      await writeAll(this.#conn, frame);
    } catch (error) {
      throw new EnvironmentError(
        `The environment closed the control channel (${method})`,
        { cause: error },
      );
    }
    for (;;) {
      let read;
      try {
        read = await this.#reader.read();
      } catch (error) {
        throw new EnvironmentError(
          `The control channel failed (${method}): ${(error as Error).message}`,
          { cause: error },
        );
      }
      if (read.kind === "end") {
        throw new EnvironmentError(
          `The environment closed the control channel before answering ${method}`,
        );
      }
      if (read.kind === "oversized") {
        this.close();
        throw new EnvironmentError(
          `The reply to ${method}: ${
            oversizedMessage(read.size, read.measured)
          }`,
        );
      }
      if (read.kind === "invalid") {
        throw new EnvironmentError(`The reply to ${method}: ${read.reason}`);
      }
      const reply = read.value as {
        id?: unknown;
        result?: unknown;
        error?: { code?: unknown; message?: unknown };
      } | null;
      if (typeof reply !== "object" || reply === null) {
        throw new EnvironmentError(`The reply to ${method} is not an object`);
      }
      // An error about a frame the server could not read has id null.
      if (reply.id !== id && reply.id !== null) {
        throw new EnvironmentError(
          `The reply to ${method} has id ${
            JSON.stringify(reply.id)?.slice(0, 40)
          }, not ${id}`,
        );
      }
      if (reply.error) {
        throw new ControlError(
          method,
          typeof reply.error.code === "number" ? reply.error.code : 0,
          String(reply.error.message ?? "no message").slice(0, 2000),
        );
      }
      if (reply.id === null) continue;
      return reply.result;
    }
  }

  /** Closes the connection. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#conn.close();
    } catch {
      // already closed
    }
  }
}

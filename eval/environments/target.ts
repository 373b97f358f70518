/**
 * Where an environment is ({@linkcode EnvironmentTarget},
 * {@linkcode parseTarget}) and how a failure to reach or start it reads:
 * {@linkcode EnvironmentError}, the end of a stdio environment's stderr
 * ({@linkcode OutputTail}) and the one line that says why it did not start.
 *
 * @module
 */

/**
 * The environment failed (a time-out, a closed connection, a protocol
 * error): the run is an error, not a low reward.
 *
 * @example
 * ```ts
 * import { EnvironmentError } from "./target.ts";
 *
 * try {
 *   throw new EnvironmentError("The environment closed the connection");
 * } catch (error) {
 *   if (error instanceof EnvironmentError) console.error(error.message); // an error, not a zero
 * }
 * ```
 */
export class EnvironmentError extends Error {
  /**
   * Creates the error.
   *
   * @param message What failed, in one line.
   * @param options The cause.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "EnvironmentError";
  }
}

/**
 * The end of a stdio environment's stderr kept for error messages, bytes.
 *
 * @example
 * ```ts
 * import { OutputTail, STDERR_TAIL_BYTES } from "./target.ts";
 *
 * const tail = new OutputTail(STDERR_TAIL_BYTES);
 * tail.push("x".repeat(STDERR_TAIL_BYTES) + "\nthe last line");
 * tail.text(1); // "the last line"
 * ```
 */
export const STDERR_TAIL_BYTES = 4096;

/**
 * The last bytes written to a stream, for an error message: a bounded ring,
 * so a chatty environment costs no more than `limit` bytes.
 *
 * @example
 * ```ts
 * import { OutputTail } from "./target.ts";
 *
 * const tail = new OutputTail(18);
 * tail.push("starting\n");
 * tail.push("error: no display\n");
 * tail.text(); // "error: no display"
 * ```
 */
export class OutputTail {
  readonly #limit: number;
  #bytes = new Uint8Array(0);

  /**
   * Creates an empty tail.
   *
   * @param limit Bytes kept at most (default {@linkcode STDERR_TAIL_BYTES}).
   */
  constructor(limit: number = STDERR_TAIL_BYTES) {
    this.#limit = limit;
  }

  /**
   * Keeps a chunk, dropping the oldest bytes past the limit.
   *
   * @param chunk Bytes (or text) written.
   */
  push(chunk: Uint8Array | string): void {
    const bytes = typeof chunk === "string"
      ? new TextEncoder().encode(chunk)
      : chunk;
    const kept = Math.min(
      this.#bytes.length,
      this.#limit - Math.min(bytes.length, this.#limit),
    );
    const next = new Uint8Array(kept + Math.min(bytes.length, this.#limit));
    next.set(this.#bytes.subarray(this.#bytes.length - kept));
    next.set(bytes.subarray(Math.max(0, bytes.length - this.#limit)), kept);
    this.#bytes = next;
  }

  /**
   * The kept text: its last `lines` lines, trimmed of trailing space.
   *
   * @param lines Lines at most (default 20).
   * @returns The text, or `""` when nothing was written.
   */
  text(lines = 20): string {
    return new TextDecoder().decode(this.#bytes).replace(/^\uFFFD+/, "")
      .trimEnd().split("\n").slice(-lines).join("\n");
  }
}

/**
 * One environment a {@linkcode ContainerRuntime} started: the command whose
 * stdio is the environment's, and how to remove it.
 */
export interface LaunchedContainer {
  /** The command (the runtime's CLI). */
  command: string;
  /** Its arguments. */
  args: string[];
  /** Where it runs, for messages (a daemon). */
  where: string;
  /** Removes what was started; safe to call more than once. */
  release(): Promise<void>;
  /**
   * Whether what runs the container has stopped answering (its daemon):
   * a failure there is the infrastructure's, whatever the agent did.
   */
  hostFailed(): Promise<boolean>;
}

/**
 * The networks a scenario may ask its run's container for (its `network`
 * option): none, or the host's. Never a bridge: a container either reaches
 * nothing or what the operator's machine reaches, and only with the
 * operator's leave ({@linkcode ContainerRuntime.networkRefusal}).
 */
export type ContainerNetwork = "none" | "host";

/**
 * Starts an environment per connection in a container
 * (`eval/environments/`): `docker://IMAGE` is one.
 */
export interface ContainerRuntime {
  /** What it runs, for messages (`docker://desktop-env`). */
  readonly name: string;
  /**
   * Starts one environment.
   *
   * @param variables Names of variables to pass in: their values are in the
   * environment of the returned command's process, never on its command line.
   * @param network The container's network (default `none`).
   */
  launch(
    variables: string[],
    network?: ContainerNetwork,
  ): Promise<LaunchedContainer>;
  /**
   * Why a scenario may not have a network, in one line the operator can act
   * on, or `undefined` when the operator allowed it: a scenario never grants
   * itself a network.
   *
   * @param network What the scenario asks for (any text: it comes from the
   * environment).
   */
  networkRefusal(network: string): string | undefined;
}

/**
 * Where the environment is: an `http(s)://…/mcp` URL, a command to spawn,
 * a HUD v6 control channel (`host:port`), or a container per connection.
 */
export type EnvironmentTarget =
  | { url: string }
  | { command: string; args: string[]; cwd?: string }
  | { tcp: string }
  | { runtime: ContainerRuntime };

/**
 * Reads a target from the command line: a URL, a HUD v6 control channel
 * (`tcp://host:port`), a script (run with `deno run -A <file> stdio`), or any
 * other command.
 *
 * @example
 * ```ts
 * import { parseTarget } from "./target.ts";
 *
 * parseTarget("http://127.0.0.1:8765/mcp"); // { url: "http://127.0.0.1:8765/mcp" }
 * parseTarget("tcp://127.0.0.1:9000"); // { tcp: "tcp://127.0.0.1:9000" }
 * parseTarget("python", ["env.py"]); // { command: "python", args: ["env.py"] }
 * ```
 *
 * @param spec What the user typed.
 * @param extraArgs Arguments after it.
 * @returns The target.
 */
export function parseTarget(
  spec: string,
  extraArgs: string[] = [],
): EnvironmentTarget {
  if (/^https?:\/\//.test(spec)) return { url: spec };
  if (spec.startsWith("tcp://")) return { tcp: spec };
  if (/\.(ts|tsx|js|mjs|jsx)$/.test(spec)) {
    return {
      command: Deno.execPath(),
      args: ["run", "-A", spec, ...(extraArgs.length ? extraArgs : ["stdio"])],
    };
  }
  return { command: spec, args: extraArgs };
}

/**
 * Why an environment did not start, in a line, then the end of its stderr.
 */
export function startFailure(
  target: Exclude<
    EnvironmentTarget,
    { tcp: string } | {
      runtime: ContainerRuntime;
    }
  >,
  error: unknown,
  tail: string,
): string {
  const reason = error instanceof Error ? error.message : String(error);
  if ("url" in target) {
    const refused =
      /ECONNREFUSED|Connection refused|fetch failed|error sending request/i
        .test(reason + String((error as Error)?.cause ?? ""));
    return refused
      ? `Cannot reach the environment at ${target.url}: nothing answers there`
      : `Cannot connect to the environment at ${target.url}: ${reason}`;
  }
  const command = [target.command, ...target.args].join(" ");
  return tail
    ? `The environment \`${command}\` did not start (${reason}); the end of its stderr:\n${
      tail.replace(/^/gm, "  | ")
    }`
    : `The environment \`${command}\` did not start (${reason}) and wrote nothing to stderr`;
}

/** The tail once a dying child's last output has had a moment to arrive. */
export async function settledTail(tail: OutputTail): Promise<string> {
  await new Promise((resolve) => setTimeout(resolve, 50));
  return tail.text();
}

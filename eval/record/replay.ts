/**
 * `--replay <dir>` answers each model call from a recording (`recorder.ts`,
 * format `recording.ts`), with no network at all, and fails the task with a
 * {@linkcode ReplayDivergence} naming the step and the first difference when
 * the request the agent would send differs from the recorded one (the
 * environment answered differently). Images are compared by place and type,
 * not pixel by pixel: a blinking caret would otherwise set every desktop
 * replay apart. A replayed call costs nothing and is marked `replayed` in
 * the trajectory.
 *
 * A replayed run is matched to a recorded one by its first request: the
 * recorded task with the lowest number whose first request is the same and
 * that no other replayed run took (so repeats of one task are taken in task
 * order); when every such run was taken (a run tried again after an
 * environment failure), the first of them is played again.
 *
 * @module
 */
import type {
  JsonObject,
  ModelRequest,
  ModelTransport,
} from "../agents/model.ts";
import type { EvalTask } from "../run/tasks.ts";
import {
  exchangeFile,
  extractBlobs,
  readExchange,
  readIndex,
  type RecordedExchange,
  type RecordedTask,
  type RecordingIndex,
  runName,
} from "./recording.ts";

/**
 * The request the agent would send differs from the recorded one.
 *
 * @example
 * ```ts
 * import { ReplayDivergence } from "./replay.ts";
 *
 * const error = new ReplayDivergence(2, "step 2: messages[3].content differs");
 * error.step; // 2
 * error.name; // "ReplayDivergence"
 * ```
 */
export class ReplayDivergence extends Error {
  /** The model call where it diverged. */
  readonly step: number;

  /**
   * Creates the error.
   *
   * @param step The model call where it diverged.
   * @param message What differs.
   */
  constructor(step: number, message: string) {
    super(message);
    this.name = "ReplayDivergence";
    this.step = step;
  }
}

/** What a request is compared by: images by place and type only. */
function comparable(value: unknown): unknown {
  if (typeof value === "string") {
    return value.replace(/@blob:[0-9a-f]{64}/g, "@blob");
  }
  if (Array.isArray(value)) return value.map(comparable);
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, comparable(item)]),
    );
  }
  return value;
}

function short(value: unknown): string {
  if (value === undefined) return "(nothing)";
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}

function shortStrings(recorded: string, now: string): [string, string] {
  let at = 0;
  while (at < recorded.length && recorded[at] === now[at]) at++;
  const from = Math.max(0, at - 20);
  const cut = (text: string) =>
    JSON.stringify(
      `${from > 0 ? "…" : ""}${text.slice(from, at + 40)}${
        text.length > at + 40 ? "…" : ""
      }`,
    );
  return [cut(recorded), cut(now)];
}

/**
 * The first place two JSON values differ, as one short line.
 *
 * @example
 * ```ts
 * import { firstDifference } from "./replay.ts";
 * firstDifference({ a: [1, 2] }, { a: [1, 3] });
 * // 'at a[1]: recorded 2, now 3'
 * ```
 *
 * @param recorded The recorded value.
 * @param now The value now.
 * @param path Where these values are (for the message).
 * @returns The line, or `undefined` when they are equal.
 */
export function firstDifference(
  recorded: unknown,
  now: unknown,
  path = "",
): string | undefined {
  const where = path === "" ? "the top" : path;
  if (Array.isArray(recorded) && Array.isArray(now)) {
    for (let i = 0; i < Math.max(recorded.length, now.length); i++) {
      const found = firstDifference(recorded[i], now[i], `${path}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  const isRecord = (v: unknown): v is JsonObject =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (isRecord(recorded) && isRecord(now)) {
    const keys = [...new Set([...Object.keys(recorded), ...Object.keys(now)])];
    for (const key of keys) {
      const name = /^[A-Za-z_$][\w$]*$/.test(key)
        ? `${path}${path ? "." : ""}${key}`
        : `${path}[${JSON.stringify(key)}]`;
      const found = firstDifference(recorded[key], now[key], name);
      if (found) return found;
    }
    return undefined;
  }
  if (recorded === now) return undefined;
  if (typeof recorded === "string" && typeof now === "string") {
    const [a, b] = shortStrings(recorded, now);
    return `at ${where}: recorded ${a}, now ${b}`;
  }
  return `at ${where}: recorded ${short(recorded)}, now ${short(now)}`;
}

/**
 * Answers model calls from a recording (`--replay <dir>`): no network.
 *
 * @example
 * ```ts ignore
 * import { Replayer } from "./replay.ts";
 * const replay = await Replayer.open("runs/today");
 * const { results } = await runEval({
 *   ..., tasks: replay.tasks, convention: replay.index.convention,
 *   endpoint: { gatewayUrl: "replay:", key: "", model: replay.index.model, transport: replay.transport },
 * });
 * ```
 */
export class Replayer {
  /** The folder. */
  readonly dir: string;
  /** What was recorded. */
  readonly index: RecordingIndex;
  /** Each recorded run's first request (by its place in `tasks`), compared as the replay compares. */
  readonly #first: Map<number, unknown>;
  /** Trace ids of replayed runs → the recorded task each plays. */
  readonly #runs = new Map<string, RecordedTask>();
  readonly #claimed = new Set<number>();

  private constructor(
    dir: string,
    index: RecordingIndex,
    first: Map<number, unknown>,
  ) {
    this.dir = dir;
    this.index = index;
    this.#first = first;
  }

  /**
   * Opens a recording.
   *
   * @param dir The folder `--record` wrote.
   * @returns The replayer.
   * @throws {Error} In one line, when the folder holds no readable recording.
   */
  static async open(dir: string): Promise<Replayer> {
    const root = dir.replace(/\/$/, "");
    const text = await Deno.readTextFile(`${root}/recording.json`).catch(
      (error) => {
        throw new Error(
          `${dir} holds no recording (${
            error instanceof Deno.errors.NotFound
              ? "no recording.json"
              : error.message
          })`,
        );
      },
    );
    const index = readIndex(text, dir);
    const first = new Map<number, unknown>();
    for (const [at, task] of index.tasks.entries()) {
      if (task.steps < 1) continue;
      const exchange = await Replayer.#read(root, task.trace_id, 1);
      if (exchange) first.set(at, Replayer.#comparable(exchange));
    }
    return new Replayer(root, index, first);
  }

  /** The tasks of the recording, in task order, once each (to run them again). */
  get tasks(): EvalTask[] {
    const tasks = new Map<number, EvalTask>();
    for (const t of this.index.tasks) {
      if (!tasks.has(t.task)) {
        tasks.set(t.task, { scenario: t.scenario, args: t.args });
      }
    }
    return [...tasks].sort(([a], [b]) => a - b).map(([, task]) => task);
  }

  /** How many times each task was run (`--repeat`). */
  get repeat(): number {
    return Math.max(1, ...this.index.tasks.map((t) => (t.repeat ?? 0) + 1));
  }

  static async #read(
    dir: string,
    traceId: string,
    step: number,
  ): Promise<RecordedExchange | undefined> {
    const file = exchangeFile(dir, traceId, step);
    const text = await Deno.readTextFile(file).catch((error) => {
      if (error instanceof Deno.errors.NotFound) return undefined;
      throw error;
    });
    return text === undefined ? undefined : readExchange(text, file);
  }

  static #comparable(
    request: Pick<RecordedExchange, "path" | "request" | "headers">,
  ): unknown {
    return comparable({
      path: request.path,
      "anthropic-beta": request.headers?.["anthropic-beta"],
      body: request.request,
    });
  }

  /** The transport that answers from the recording. */
  readonly transport: ModelTransport = async (request) => {
    request.signal?.throwIfAborted();
    const now = Replayer.#comparable({
      path: request.path,
      headers: request.headers,
      request: await extractBlobs(
        request.body,
        () => Promise.resolve(),
      ) as JsonObject,
    });
    const task = this.#runs.get(request.traceId) ??
      this.#claim(request, now);
    const exchange = await Replayer.#read(
      this.dir,
      task.trace_id,
      request.step,
    );
    if (!exchange) {
      throw new ReplayDivergence(
        request.step,
        `Replay diverged at step ${request.step} (${
          runName(task)
        }): the recording ended after ${task.steps} model call(s)`,
      );
    }
    const difference = firstDifference(
      Replayer.#comparable(exchange),
      now,
    );
    if (difference) {
      throw new ReplayDivergence(
        request.step,
        `Replay diverged at step ${request.step} (${
          runName(task)
        }): the request differs ${difference}`,
      );
    }
    const headers = { ...exchange.response_headers };
    delete headers["x-gateway-cost"];
    return {
      status: exchange.status,
      statusText: exchange.status_text ?? "",
      headers,
      body: exchange.response,
      replayed: true,
    };
  };

  #claim(request: ModelRequest, now: unknown): RecordedTask {
    const open = [...this.#first.keys()].filter((at) => !this.#claimed.has(at));
    const starts = (at: number) =>
      firstDifference(this.#first.get(at), now) === undefined;
    // The run's own recording first (its task and repetition), so runs
    // whose first requests are alike do not take each other's, whatever
    // order they start in; then any open one that starts alike; then one
    // played already (a run tried again).
    const place = request.run;
    const own = (at: number) =>
      place !== undefined && starts(at) &&
      this.index.tasks[at].task === place.task &&
      (this.index.tasks[at].repeat ?? 0) === place.repeat;
    const all = [...this.#first.keys()];
    const same = open.find(own) ?? all.find(own) ?? open.find(starts) ??
      all.find(starts);
    if (same === undefined || request.step !== 1) {
      const closest = open[0] ?? [...this.#first.keys()][0];
      const why = request.step !== 1
        ? `no replayed run has trace id ${request.traceId}`
        : closest === undefined
        ? "the recording holds no model call"
        : `against ${runName(this.index.tasks[closest])}'s first request ${
          firstDifference(this.#first.get(closest), now)
        }`;
      throw new ReplayDivergence(
        request.step,
        `Replay diverged at step ${request.step}: no recorded task starts with this request (${why})`,
      );
    }
    this.#claimed.add(same);
    const task = this.index.tasks[same];
    this.#runs.set(request.traceId, task);
    return task;
  }
}

/**
 * Record and replay of model calls, at the agents' one seam (the
 * `ModelTransport` of the endpoint). `--record <dir>` keeps every exchange of
 * a run: per run (the gateway `trace-id`) and step, the request (path, the
 * convention's headers, body; never the key), and the answer (status,
 * `x-gateway-*` headers, body as sent). Base64 images of the request bodies
 * (every step resends the conversation's screenshots) are kept once each
 * under `blobs/`, named by their SHA-256. At the end, `recording.json` lists
 * the tasks, their trace ids, rewards, the model and the convention.
 *
 * `--replay <dir>` answers each model call from the recording, with no
 * network at all, and fails the task with a {@linkcode ReplayDivergence}
 * naming the step and the first difference when the request the agent
 * would send differs from the recorded one (the environment answered
 * differently). Images are compared by place and type, not pixel by pixel:
 * a blinking caret would otherwise set every desktop replay apart. A
 * replayed call costs nothing and is marked `replayed` in the trajectory.
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
  Convention,
  JsonObject,
  ModelRequest,
  ModelResponse,
  ModelTransport,
} from "./agents/model.ts";
import type { EvalTask } from "./tasks.ts";
import type { EvalResult } from "./result.ts";

/** The recording's format version. */
const VERSION = 1;
/** Strings shorter than this stay in the request body. */
const BLOB_MIN_CHARS = 512;
const BLOB_PREFIX = "@blob:";
const DATA_URL = /^data:([\w.+-]+\/[\w.+-]+);base64,([A-Za-z0-9+/]+={0,2})$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const SAFE_ID = /^[A-Za-z0-9_-]{1,100}$/;
const RECORDED_HEADERS = /^(x-gateway-[a-z0-9-]+|trace-id|content-type)$/;

/** One recorded model exchange, as kept in `exchanges/<trace-id>/<step>.json`. */
export interface RecordedExchange {
  /** The format version. */
  version: number;
  /** The model call's number in the run, from 1. */
  step: number;
  /** The route's path. */
  path: string;
  /** The convention's request headers (`trace-id`, `anthropic-beta`). */
  headers: Record<string, string>;
  /** The request body, base64 images replaced by `@blob:<sha256>`. */
  request: JsonObject;
  /** The answer's status. */
  status: number;
  /** The answer's status text. */
  status_text: string;
  /** The answer's `x-gateway-*`, `trace-id` and `content-type` headers. */
  response_headers: Record<string, string>;
  /** The answer's body, as the gateway sent it. */
  response: string;
}

/** A recorded task, a line of `recording.json`'s `tasks`. */
export interface RecordedTask {
  /** The task's number in the run. */
  task: number;
  /** Its scenario. */
  scenario: string;
  /** Its arguments. */
  args: Record<string, unknown>;
  /** The run's trace id (the folder of its exchanges). */
  trace_id: string;
  /** Which repetition of the task it was. */
  repeat?: number;
  /** The reward it got (`null`: an error). */
  reward: number | null;
  /** Its model calls. */
  steps: number;
  /** Its error, if it had one. */
  error?: string;
}

/** `recording.json`. */
export interface RecordingIndex {
  /** The format version. */
  version: number;
  /** The model the run called. */
  model: string;
  /** The convention it was spoken to in. */
  convention: Convention;
  /** The tasks, in task order. */
  tasks: RecordedTask[];
}

/** The request the agent would send differs from the recorded one. */
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

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(text),
  );
  return Array.from(
    new Uint8Array(digest),
    (byte) => byte.toString(16).padStart(2, "0"),
  ).join("");
}

/**
 * A request body with every long base64 string (an image, alone or in a
 * data URL) replaced by `@blob:<sha256>`; `keep` receives each blob.
 */
async function extractBlobs(
  value: unknown,
  keep: (sha: string, data: string) => Promise<void>,
): Promise<unknown> {
  if (typeof value === "string") {
    if (value.length < BLOB_MIN_CHARS) return value;
    const url = DATA_URL.exec(value);
    if (url) {
      const sha = await sha256(url[2]);
      await keep(sha, url[2]);
      return `data:${url[1]};base64,${BLOB_PREFIX}${sha}`;
    }
    if (BASE64.test(value)) {
      const sha = await sha256(value);
      await keep(sha, value);
      return `${BLOB_PREFIX}${sha}`;
    }
    return value;
  }
  if (Array.isArray(value)) {
    const out = [];
    for (const item of value) out.push(await extractBlobs(item, keep));
    return out;
  }
  if (typeof value === "object" && value !== null) {
    const out: JsonObject = {};
    for (const [key, item] of Object.entries(value)) {
      out[key] = await extractBlobs(item, keep);
    }
    return out;
  }
  return value;
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
 * import { firstDifference } from "./record.ts";
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

function runName(task: RecordedTask): string {
  return `recorded task ${task.task}${
    task.repeat ? ` repeat ${task.repeat}` : ""
  } ${JSON.stringify(task.scenario.slice(0, 60))}`;
}

function exchangeFile(dir: string, traceId: string, step: number): string {
  return `${dir}/exchanges/${traceId}/${String(step).padStart(3, "0")}.json`;
}

/** The trace id as a folder name: itself when safe, else its hash. */
async function folderOf(traceId: string): Promise<string> {
  return SAFE_ID.test(traceId) ? traceId : (await sha256(traceId)).slice(0, 32);
}

/**
 * Keeps every model exchange of a run in a folder (`--record <dir>`).
 *
 * @example
 * ```ts ignore
 * import { Recorder } from "./record.ts";
 * import { gatewayTransport } from "./agents/model.ts";
 *
 * const recorder = await Recorder.create("runs/today");
 * const endpoint = { gatewayUrl, key, model };
 * const transport = recorder.wrap(gatewayTransport(endpoint));
 * const { results } = await runEval({ ..., endpoint: { ...endpoint, transport } });
 * await recorder.finish(model, "chat", results);
 * ```
 */
export class Recorder {
  /** The folder. */
  readonly dir: string;
  readonly #folders = new Map<string, string>();

  private constructor(dir: string) {
    this.dir = dir.replace(/\/$/, "");
  }

  /**
   * Makes (or reuses) the folder; a recording already in it is refused, so
   * one run's answers never mix with another's.
   *
   * @param dir The folder.
   * @returns The recorder.
   * @throws {Error} When the folder holds a recording or cannot be made.
   */
  static async create(dir: string): Promise<Recorder> {
    const recorder = new Recorder(dir);
    for (const name of ["recording.json", "exchanges"]) {
      const found = await Deno.stat(`${recorder.dir}/${name}`).then(
        () => true,
        () => false,
      );
      if (found) {
        throw new Error(
          `${dir} already holds a recording: record into a new folder`,
        );
      }
    }
    await Deno.mkdir(`${recorder.dir}/blobs`, { recursive: true });
    await Deno.mkdir(`${recorder.dir}/exchanges`, { recursive: true });
    return recorder;
  }

  /**
   * A transport that sends through `inner` and keeps each exchange.
   *
   * @param inner The real transport (the gateway).
   * @returns The recording transport.
   */
  wrap(inner: ModelTransport): ModelTransport {
    return async (request) => {
      const response = await inner(request);
      await this.#keep(request, response);
      return response;
    };
  }

  async #keep(request: ModelRequest, response: ModelResponse): Promise<void> {
    let folder = this.#folders.get(request.traceId);
    if (!folder) {
      folder = await folderOf(request.traceId);
      this.#folders.set(request.traceId, folder);
      await Deno.mkdir(`${this.dir}/exchanges/${folder}`, { recursive: true });
    }
    const body = await extractBlobs(request.body, async (sha, data) => {
      await Deno.writeTextFile(`${this.dir}/blobs/${sha}`, data, {
        createNew: true,
      }).catch((error) => {
        if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
      });
    }) as JsonObject;
    const exchange: RecordedExchange = {
      version: VERSION,
      step: request.step,
      path: request.path,
      headers: request.headers,
      request: body,
      status: response.status,
      status_text: response.statusText,
      response_headers: Object.fromEntries(
        Object.entries(response.headers).filter(([name]) =>
          RECORDED_HEADERS.test(name.toLowerCase())
        ),
      ),
      response: response.body,
    };
    await Deno.writeTextFile(
      exchangeFile(this.dir, folder, request.step),
      JSON.stringify(exchange, null, 1) + "\n",
    );
  }

  /**
   * Writes `recording.json`: the tasks (in task order), their trace ids,
   * rewards, the model and the convention.
   *
   * @param model The model.
   * @param convention The convention.
   * @param results The run's results.
   */
  async finish(
    model: string,
    convention: Convention,
    results: EvalResult[],
  ): Promise<void> {
    const index: RecordingIndex = {
      version: VERSION,
      model,
      convention,
      tasks: await Promise.all(
        [...results].sort((a, b) => a.task - b.task).map(async (r) => ({
          task: r.task,
          ...(r.repeat !== undefined && { repeat: r.repeat }),
          scenario: r.scenario,
          args: r.args,
          trace_id: this.#folders.get(r.trace_id) ?? await folderOf(r.trace_id),
          reward: r.reward,
          steps: r.steps,
          ...(r.error && { error: r.error }),
        })),
      ),
    };
    await Deno.writeTextFile(
      `${this.dir}/recording.json`,
      JSON.stringify(index, null, 1) + "\n",
    );
  }
}

function readIndex(text: string, dir: string): RecordingIndex {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`${dir}/recording.json is not JSON`);
  }
  const index = value as RecordingIndex;
  const valid = typeof index === "object" && index !== null &&
    index.version === VERSION && typeof index.model === "string" &&
    typeof index.convention === "string" && Array.isArray(index.tasks) &&
    index.tasks.every((t) =>
      typeof t === "object" && t !== null &&
      Number.isSafeInteger(t.task) && typeof t.scenario === "string" &&
      typeof t.args === "object" && t.args !== null &&
      !Array.isArray(t.args) && typeof t.trace_id === "string" &&
      SAFE_ID.test(t.trace_id) && Number.isSafeInteger(t.steps)
    );
  if (!valid) {
    throw new Error(
      `${dir}/recording.json is not a recording of version ${VERSION}`,
    );
  }
  return index;
}

function readExchange(text: string, file: string): RecordedExchange {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`The recorded exchange ${file} is not JSON`);
  }
  const exchange = value as RecordedExchange;
  if (
    typeof exchange !== "object" || exchange === null ||
    typeof exchange.path !== "string" ||
    typeof exchange.request !== "object" ||
    !Number.isSafeInteger(exchange.status) ||
    typeof exchange.response !== "string"
  ) {
    throw new Error(`The recorded exchange ${file} is malformed`);
  }
  return exchange;
}

/**
 * Answers model calls from a recording (`--replay <dir>`): no network.
 *
 * @example
 * ```ts ignore
 * import { Replayer } from "./record.ts";
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

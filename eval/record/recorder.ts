/**
 * Recording model calls, at the agents' one seam (the `ModelTransport` of
 * the endpoint). `--record <dir>` keeps every exchange of a run: per run (the
 * gateway `trace-id`) and step, the request (path, the convention's headers,
 * body; never the key), and the answer (status, `x-gateway-*` headers, body
 * as sent). Base64 images of the request bodies (every step resends the
 * conversation's screenshots) are kept once each under `blobs/`, named by
 * their SHA-256. At the end, `recording.json` lists the tasks, their trace
 * ids, rewards, the model and the convention. The format is `recording.ts`;
 * playing a recording back is `replay.ts`.
 *
 * @module
 */
import type {
  Convention,
  JsonObject,
  ModelFacts,
  ModelRequest,
  ModelResponse,
  ModelTransport,
} from "../agents/model.ts";
import { wireFacts } from "../agents/convention.ts";
import type { EvalResult } from "../run/result.ts";
import {
  exchangeFile,
  extractBlobs,
  folderOf,
  RECORDED_HEADERS,
  type RecordedExchange,
  type RecordingIndex,
  VERSION,
} from "./recording.ts";

/**
 * Keeps every model exchange of a run in a folder (`--record <dir>`).
 *
 * @example
 * ```ts ignore
 * import { Recorder } from "./recorder.ts";
 * import { gatewayTransport } from "../agents/model.ts";
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
   * @param facts How the model's computer use was reached, and what it refuses.
   */
  async finish(
    model: string,
    convention: Convention,
    results: EvalResult[],
    facts: Pick<ModelFacts, "computerUse" | "features"> = {},
  ): Promise<void> {
    const index: RecordingIndex = {
      version: VERSION,
      model,
      convention,
      ...wireFacts(facts),
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

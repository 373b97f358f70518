/**
 * The recording's format on disk, shared by the recorder and the replayer:
 * `recording.json` (the index), one file per exchange by run and step, and
 * `blobs/` with each base64 image of the request bodies once, named by its
 * SHA-256; and reading them back, checked (a recording may come from
 * anywhere).
 *
 * @module
 */
import type {
  ComputerUseWire,
  Convention,
  JsonObject,
} from "../agents/model.ts";

/** The recording's format version. */
export const VERSION = 1;

/** Strings shorter than this stay in the request body. */
const BLOB_MIN_CHARS = 512;

const BLOB_PREFIX = "@blob:";

const DATA_URL = /^data:([\w.+-]+\/[\w.+-]+);base64,([A-Za-z0-9+/]+={0,2})$/;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

const SAFE_ID = /^[A-Za-z0-9_-]{1,100}$/;

/** The answer headers a recording keeps: the gateway's own, the trace id, the content type. */
export const RECORDED_HEADERS =
  /^(x-gateway-[a-z0-9-]+|trace-id|content-type)$/;

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
  /** How its computer use was reached, as `GET /v1/models` said (a replay drives the same wire). */
  computer_use?: ComputerUseWire;
  /** What it refuses, as `GET /v1/models` said. */
  features?: Record<string, boolean>;
  /** The tasks, in task order. */
  tasks: RecordedTask[];
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
export async function extractBlobs(
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

/** A recorded task in messages: its number, repeat and scenario. */
export function runName(task: RecordedTask): string {
  return `recorded task ${task.task}${
    task.repeat ? ` repeat ${task.repeat}` : ""
  } ${JSON.stringify(task.scenario.slice(0, 60))}`;
}

/** The file of one exchange: `<dir>/exchanges/<run folder>/<step>.json`. */
export function exchangeFile(
  dir: string,
  traceId: string,
  step: number,
): string {
  return `${dir}/exchanges/${traceId}/${String(step).padStart(3, "0")}.json`;
}

/** The trace id as a folder name: itself when safe, else its hash. */
export async function folderOf(traceId: string): Promise<string> {
  return SAFE_ID.test(traceId) ? traceId : (await sha256(traceId)).slice(0, 32);
}

/** Reads `recording.json`, checked; a bad one is one line naming `dir`. */
export function readIndex(text: string, dir: string): RecordingIndex {
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

/** Reads one exchange file, checked; a bad one is one line naming `file`. */
export function readExchange(text: string, file: string): RecordedExchange {
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

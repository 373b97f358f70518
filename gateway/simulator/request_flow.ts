/**
 * The simulator's request flow, shared by every wire format: record the
 * request, check the provider key, apply the behaviour (latency, hang, error
 * status, garbage), then answer with the format's JSON body or SSE stream.
 *
 * Streams are written by a small pull-based writer rather than Hono's
 * `streamSSE`: `cutStreamAfter` must destroy the connection (error the body
 * stream) and `streamSSE` always ends its stream cleanly.
 *
 * @module
 */

import type { ProviderName } from "../upstream/providers/mod.ts";
import type { BehaviourBook } from "./behaviour.ts";
import { decideReply, type Prompt, type Reply } from "./reply.ts";
import { tokensForChars } from "./tokens.ts";
import type { Json } from "./_json.ts";

/** One request the simulator received. */
export interface SimulatedRequest {
  /** The provider addressed (by path prefix). */
  provider: ProviderName;
  /** The request path, e.g. `/openai/v1/chat/completions`. */
  path: string;
  /** The HTTP method. */
  method: string;
  /** Request headers, names in lower case, the provider key header included. */
  headers: Record<string, string>;
  /** The provider key presented, as read from the provider's auth header (or `?key=`). */
  key: string | undefined;
  /** Query parameters. */
  query: Record<string, string>;
  /** The parsed JSON body; the raw text when it is not JSON; `undefined` when empty. */
  body: unknown;
  /** Epoch ms when it arrived. */
  time: number;
  /** Whether the client went away before the response ended. */
  aborted: boolean;
  /** The status answered (0 until the simulator answers). */
  status: number;
}

/** Thrown by a wire format's parser for a request the provider would reject with 400. */
export class BadRequestError extends Error {
  /**
   * Creates the error.
   *
   * @param message What is wrong, in the provider's words where known.
   */
  constructor(message: string) {
    super(message);
    this.name = "BadRequestError";
  }
}

/**
 * The error that deliberately breaks a response body (cut stream, closing
 * simulator); the server's error handler lets it pass silently.
 */
export class ConnectionCutError extends Error {
  /**
   * Creates the error.
   *
   * @param message Why the connection was cut.
   */
  constructor(message: string) {
    super(message);
    this.name = "ConnectionCutError";
  }
}

/** One server-sent event. */
export interface SimulatedEvent {
  /** The `event:` field, for formats that name events. */
  event?: string;
  /** The `data:` field (serialised JSON, or `[DONE]`). */
  data: string;
}

/** A parsed request, ready to be answered. */
export interface ParsedRequest {
  /** What decides the reply. */
  prompt: Prompt;
  /** Whether to answer with SSE. */
  stream: boolean;
  /**
   * Renders the non-streamed body.
   *
   * @param reply The decided reply.
   * @param id A unique suffix for the response's ids.
   * @returns The JSON body.
   */
  body(reply: Reply, id: string): unknown;
  /**
   * Renders the stream.
   *
   * @param reply The decided reply.
   * @param id A unique suffix for the response's ids.
   * @returns The events, in order.
   */
  events(reply: Reply, id: string): SimulatedEvent[];
}

/** The conventions of one provider family's HTTP API (OpenAI-style, Anthropic, Gemini). */
export interface Wire {
  /** Reads the provider key from a request; `undefined` when none is presented. */
  readKey(request: Request, url: URL): string | undefined;
  /** The provider's error body for a status, with its own default message when none is given. */
  errorBody(status: number, message?: string, retryAfter?: number): unknown;
  /** The message for a request without a key. */
  missingKeyMessage: string;
  /** The message for a key the simulator does not accept. */
  invalidKeyMessage: string;
  /** What separates SSE events on this wire. */
  eventDelimiter: string;
}

/** One endpoint's request format. */
export interface Dialect {
  /** The family conventions. */
  wire: Wire;
  /**
   * Parses a request body.
   *
   * @param body The parsed JSON body.
   * @param url The request URL (Gemini reads the model and `alt` from it).
   * @returns The parsed request.
   * @throws {BadRequestError} When the provider would reject the body.
   */
  parse(body: unknown, url: URL): ParsedRequest;
}

/** Mutable state of one running simulator, shared by its handlers. */
export interface SimulatorState {
  /** Behaviours. */
  book: BehaviourBook;
  /** Recorded requests, oldest first. */
  requests: SimulatedRequest[];
  /** Most records kept; the oldest half is dropped past it. */
  maxRecords: number;
  /** When set, only these provider keys are accepted. */
  validKeys?: ReadonlySet<string>;
  /** Aborted when the simulator closes: ends hangs, sleeps and streams. */
  closing: AbortSignal;
  /** Count of requests the client aborted. */
  aborted: number;
  /** Next id suffix. */
  nextId: number;
  /** Called after any record changes (for `waitFor`). */
  changed(): void;
}

const JSON_HEADERS = { "content-type": "application/json" };
const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
};
const encoder = new TextEncoder();

/** Resolves `true` after `ms`, or `false` as soon as `signal` aborts; leaves no timer behind. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Resolves when `signal` aborts. */
function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(), { once: true })
  );
}

/** A response whose body fails at once: the client sees the connection drop. */
function destroyedResponse(): Response {
  return new Response(
    new ReadableStream({
      start: (controller) =>
        controller.error(
          new ConnectionCutError("Simulator closed the connection"),
        ),
    }),
    { headers: JSON_HEADERS },
  );
}

function parseBody(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Tracks one request from arrival to its last byte, so a client abort is only
 * counted while in flight. `request.signal` is watched only while the
 * simulator waits (latency, hang): Deno's legacy mode also aborts it after a
 * successful response and warns once when it was read, so the common 0 ms
 * path never touches it; streams learn of a departed client from `cancel()`.
 */
class Tracker {
  #done = false;
  #state: SimulatorState;
  #signal: AbortSignal | undefined;
  readonly record: SimulatedRequest;

  constructor(state: SimulatorState, record: SimulatedRequest) {
    this.#state = state;
    this.record = record;
  }

  /** Starts watching the client's signal; returns it. */
  watch(signal: AbortSignal): AbortSignal {
    this.#signal = signal;
    if (signal.aborted) this.abort();
    else signal.addEventListener("abort", this.abort, { once: true });
    return signal;
  }

  /** Marks the request aborted by the client, unless it had already ended. */
  abort = (): void => {
    if (this.#done) return;
    this.#done = true;
    this.record.aborted = true;
    this.#state.aborted += 1;
    this.#state.changed();
  };

  answered(status: number): void {
    this.record.status = status;
    this.#state.changed();
  }

  finished(): void {
    if (this.#done) return;
    this.#done = true;
    this.#signal?.removeEventListener("abort", this.abort);
  }
}

function jsonResponse(
  tracker: Tracker,
  status: number,
  body: unknown,
  headers?: Record<string, string>,
): Response {
  tracker.answered(status);
  tracker.finished();
  return new Response(JSON.stringify(body), {
    status,
    headers: headers ? { ...JSON_HEADERS, ...headers } : JSON_HEADERS,
  });
}

interface StreamOptions {
  delimiter: string;
  chunkDelayMs: number;
  cutAfter: number | undefined;
  closing: AbortSignal;
  tracker: Tracker;
}

/** Writes SSE events, with optional delays, cutting the connection when told to. */
function sseResponse(
  events: SimulatedEvent[],
  options: StreamOptions,
): Response {
  const { delimiter, chunkDelayMs, cutAfter, closing, tracker } = options;
  const frames = events.map((
    e,
  ) => (e.event
    ? `event: ${e.event}\ndata: ${e.data}${delimiter}`
    : `data: ${e.data}${delimiter}`)
  );
  tracker.answered(200);
  if (chunkDelayMs <= 0 && cutAfter === undefined) {
    tracker.finished();
    return new Response(frames.join(""), { headers: SSE_HEADERS });
  }
  let index = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (cutAfter !== undefined && index >= cutAfter) {
        tracker.finished();
        controller.error(
          new ConnectionCutError(
            `Simulator cut the stream after "${cutAfter}" events`,
          ),
        );
        return;
      }
      if (
        index > 0 && chunkDelayMs > 0 && !(await sleep(chunkDelayMs, closing))
      ) {
        controller.error(
          new ConnectionCutError("Simulator closed the connection"),
        );
        return;
      }
      controller.enqueue(encoder.encode(frames[index]));
      index += 1;
      if (index === frames.length) {
        tracker.finished();
        controller.close();
      }
    },
    cancel() {
      tracker.abort();
    },
  });
  return new Response(body, { headers: SSE_HEADERS });
}

function garbageResponse(tracker: Tracker, stream: boolean): Response {
  tracker.answered(200);
  tracker.finished();
  return stream
    ? new Response("data: {not json at all\n\n", { headers: SSE_HEADERS })
    : new Response(
      "<html><body>502 Bad Gateway (simulated garbage)</body></html>",
      { headers: JSON_HEADERS },
    );
}

function wantsStream(body: unknown, url: URL): boolean {
  if (url.pathname.endsWith(":streamGenerateContent")) {
    return url.searchParams.get("alt") === "sse";
  }
  return typeof body === "object" && body !== null &&
    (body as { stream?: unknown }).stream === true;
}

/**
 * Answers one request to one endpoint.
 *
 * @param state The simulator's state.
 * @param request The incoming request.
 * @param provider The provider addressed.
 * @param dialect The endpoint's format.
 * @returns The response.
 */
export async function answerRequest(
  state: SimulatorState,
  request: Request,
  provider: ProviderName,
  dialect: Dialect,
): Promise<Response> {
  const url = new URL(request.url);
  const { wire } = dialect;
  const record: SimulatedRequest = {
    provider,
    path: url.pathname,
    method: request.method,
    headers: Object.fromEntries(request.headers),
    key: wire.readKey(request, url),
    query: Object.fromEntries(url.searchParams),
    body: undefined,
    time: Date.now(),
    aborted: false,
    status: 0,
  };
  if (state.requests.length >= state.maxRecords) {
    state.requests.splice(0, Math.ceil(state.maxRecords / 2));
  }
  state.requests.push(record);
  state.changed();
  const tracker = new Tracker(state, record);

  let text: string;
  try {
    text = await request.text();
  } catch {
    tracker.abort();
    return destroyedResponse();
  }
  record.body = parseBody(text);

  const { key } = record;
  if (key === undefined) {
    return jsonResponse(
      tracker,
      401,
      wire.errorBody(401, wire.missingKeyMessage),
    );
  }
  if (state.validKeys && !state.validKeys.has(key)) {
    return jsonResponse(
      tracker,
      401,
      wire.errorBody(401, wire.invalidKeyMessage),
    );
  }

  const behaviour = state.book.resolve({ provider, key, path: url.pathname });
  const wait = behaviour.hang ? undefined : behaviour.latencyMs ?? 0;
  if (wait === undefined || wait > 0) {
    const signal = AbortSignal.any([
      tracker.watch(request.signal),
      state.closing,
    ]);
    if (wait === undefined) await untilAborted(signal);
    else await sleep(wait, signal);
    if (signal.aborted) {
      tracker.finished();
      return destroyedResponse();
    }
  }

  if (behaviour.status !== undefined && behaviour.status >= 400) {
    const headers = behaviour.retryAfter === undefined
      ? undefined
      : { "retry-after": String(behaviour.retryAfter) };
    return jsonResponse(
      tracker,
      behaviour.status,
      wire.errorBody(behaviour.status, behaviour.message, behaviour.retryAfter),
      headers,
    );
  }
  const stream = wantsStream(record.body, url);
  if (behaviour.garbage) return garbageResponse(tracker, stream);

  if (typeof record.body !== "object" || record.body === null) {
    return jsonResponse(
      tracker,
      400,
      wire.errorBody(400, "The request body is not valid JSON"),
    );
  }
  let parsed: ParsedRequest;
  try {
    parsed = dialect.parse(record.body, url);
  } catch (error) {
    if (error instanceof BadRequestError) {
      return jsonResponse(tracker, 400, wire.errorBody(400, error.message));
    }
    throw error;
  }
  const reply = decideReply(parsed.prompt, behaviour);
  const id = `sim${(state.nextId++).toString(36)}`;
  if (!parsed.stream) {
    return jsonResponse(tracker, 200, parsed.body(reply, id));
  }
  return sseResponse(parsed.events(reply, id), {
    delimiter: wire.eventDelimiter,
    chunkDelayMs: behaviour.chunkDelayMs ?? 0,
    cutAfter: behaviour.cutStreamAfter,
    closing: state.closing,
    tracker,
  });
}

/**
 * Answers a request no endpoint serves, in the provider family's error format.
 *
 * @param state The simulator's state.
 * @param request The request.
 * @param provider The provider addressed.
 * @param wire The family's conventions.
 * @returns A 404 response.
 */
export function notFound(
  state: SimulatorState,
  request: Request,
  provider: ProviderName,
  wire: Wire,
): Response {
  const url = new URL(request.url);
  const record: SimulatedRequest = {
    provider,
    path: url.pathname,
    method: request.method,
    headers: Object.fromEntries(request.headers),
    key: wire.readKey(request, url),
    query: Object.fromEntries(url.searchParams),
    body: undefined,
    time: Date.now(),
    aborted: false,
    status: 404,
  };
  state.requests.push(record);
  state.changed();
  return new Response(
    JSON.stringify(
      wire.errorBody(404, `No route for "${request.method} ${url.pathname}"`),
    ),
    { status: 404, headers: JSON_HEADERS },
  );
}

/**
 * Answers a token-counting request (Anthropic's `count_tokens`, Gemini's
 * `:countTokens`): one token per four characters of the body, recorded like
 * any request; 401 in the family's format without a key.
 *
 * @param state The simulator's state.
 * @param request The request.
 * @param provider The provider addressed.
 * @param wire The family's conventions.
 * @param answer Builds the provider's answer from the count.
 * @returns The response.
 */
export async function answerCountTokens(
  state: SimulatorState,
  request: Request,
  provider: ProviderName,
  wire: Wire,
  answer: (tokens: number) => Json,
): Promise<Response> {
  const url = new URL(request.url);
  const text = await request.text();
  const key = wire.readKey(request, url);
  const status = key ? 200 : 401;
  state.requests.push({
    provider,
    path: url.pathname,
    method: request.method,
    headers: Object.fromEntries(request.headers),
    key,
    query: Object.fromEntries(url.searchParams),
    body: JSON.parse(text),
    time: Date.now(),
    aborted: false,
    status,
  });
  state.changed();
  const body = key
    ? answer(tokensForChars(text.length))
    : wire.errorBody(401, "Missing API key");
  return new Response(JSON.stringify(body), { status, headers: JSON_HEADERS });
}

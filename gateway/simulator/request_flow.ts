/**
 * The simulator's request flow, shared by every wire format: record the
 * request, check the provider key, apply the behaviour (latency, hang, error
 * status, garbage), then answer with the format's JSON body or SSE stream
 * (written by `answers.ts`).
 *
 * @module
 */

import type { ProviderName } from "../upstream/providers/mod.ts";
import type { BehaviourBook } from "./behaviour.ts";
import { decideReply, type Prompt, type Reply } from "./reply.ts";
import {
  type ModelLookup,
  modelLookup,
  type SimulatedModel,
} from "./model_facts.ts";
import type { ResponseStore } from "./response_store.ts";
import type { ConnectionWatch } from "./connection_watch.ts";
import {
  destroyedResponse,
  garbageResponse,
  JSON_HEADERS,
  jsonResponse,
  type SimulatedEvent,
  sleep,
  sseResponse,
  Tracker,
  untilAborted,
} from "./answers.ts";

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

/**
 * The record of a request as it arrived (method, path, headers, query,
 * time), with what its handler read of it and answered; not aborted.
 *
 * @example
 * ```ts
 * import { requestRecord } from "./request_flow.ts";
 *
 * const request = new Request("http://sim/openai/v1/models?limit=1");
 * const record = requestRecord(request, new URL(request.url), {
 *   provider: "openai",
 *   key: undefined,
 *   body: undefined,
 *   status: 401,
 * });
 * record.query; // { limit: "1" }
 * ```
 *
 * @param request The request.
 * @param url Its URL, parsed.
 * @param fields The provider addressed, the key read, the body parsed and the status.
 * @returns The record.
 */
export function requestRecord(
  request: Request,
  url: URL,
  fields: Pick<SimulatedRequest, "provider" | "key" | "body" | "status">,
): SimulatedRequest {
  return {
    provider: fields.provider,
    path: url.pathname,
    method: request.method,
    headers: Object.fromEntries(request.headers),
    key: fields.key,
    query: Object.fromEntries(url.searchParams),
    body: fields.body,
    time: Date.now(),
    aborted: false,
    status: fields.status,
  };
}

/** Where an error points, for wires whose error bodies say it (OpenAI's `param` and `code`). */
export interface ErrorDetails {
  /** The request field at fault. */
  param?: string;
  /** The provider's error code (`null`: none, where the status would give one). */
  code?: string | null;
}

/**
 * Thrown by a wire format's parser for a request the provider would reject
 * (400 unless another status is given).
 */
export class BadRequestError extends Error {
  /** The status to answer. */
  readonly status: number;
  /** The field and code, where the provider's error body names them. */
  readonly details: ErrorDetails;

  /**
   * Creates the error.
   *
   * @param message What is wrong, in the provider's words where known.
   * @param details The field and code the provider names, if any.
   * @param status The status to answer (default 400).
   */
  constructor(message: string, details: ErrorDetails = {}, status = 400) {
    super(message);
    this.name = "BadRequestError";
    this.details = details;
    this.status = status;
  }
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
  errorBody(
    status: number,
    message?: string,
    retryAfter?: number,
    details?: ErrorDetails,
  ): unknown;
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
   * @param context Who asks and what the simulator knows of models and past responses.
   * @returns The parsed request.
   * @throws {BadRequestError} When the provider would reject the body.
   */
  parse(body: unknown, url: URL, context: RequestContext): ParsedRequest;
}

/** What a parser may need beyond the body: the caller, its headers, model facts, stored responses. */
export interface RequestContext {
  /** The provider key presented: the caller's organization. */
  key: string;
  /** The request's headers (`anthropic-beta`, …). */
  headers: Headers;
  /** The facts of a model the request names, from the catalog. */
  model: ModelLookup;
  /** Stored Responses-API responses. */
  responses: ResponseStore;
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
  /** The models whose facts decide refusals (default: the built-in catalog). */
  models?: readonly SimulatedModel[];
  /** Stored Responses-API responses, per organization. */
  responses: ResponseStore;
  /** Notices clients that closed a connection the simulator holds (`connection_watch.ts`). */
  connections: ConnectionWatch;
}

/**
 * A request body as the simulator records it: parsed JSON, the raw text when
 * it is not JSON, `undefined` when empty.
 *
 * @param text The body's text.
 * @returns The body.
 */
export function parseBody(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
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
 * @param client The client's address (Deno.serve's `remoteAddr`), to notice its leaving while the request waits.
 * @returns The response.
 */
export async function answerRequest(
  state: SimulatorState,
  request: Request,
  provider: ProviderName,
  dialect: Dialect,
  client?: Deno.Addr,
): Promise<Response> {
  const url = new URL(request.url);
  const { wire } = dialect;
  const record = requestRecord(request, url, {
    provider,
    key: wire.readKey(request, url),
    body: undefined,
    status: 0,
  });
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
    // The request's signal misses some clients that leave: the socket
    // table is watched too.
    const gone = new AbortController();
    const unwatch = client?.transport === "tcp" && url.port
      ? state.connections.watch(
        Number(url.port),
        client.port,
        () => gone.abort(),
      )
      : () => {};
    const signal = AbortSignal.any([
      tracker.watch(request.signal),
      state.closing,
      gone.signal,
    ]);
    try {
      if (wait === undefined) await untilAborted(signal);
      else await sleep(wait, signal);
    } finally {
      unwatch();
    }
    if (gone.signal.aborted) tracker.abort();
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
    parsed = dialect.parse(record.body, url, {
      key,
      headers: request.headers,
      model: modelLookup(provider, state.models),
      responses: state.responses,
    });
  } catch (error) {
    if (error instanceof BadRequestError) {
      return jsonResponse(
        tracker,
        error.status,
        wire.errorBody(error.status, error.message, undefined, error.details),
      );
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
  const record = requestRecord(request, url, {
    provider,
    key: wire.readKey(request, url),
    body: undefined,
    status: 404,
  });
  state.requests.push(record);
  state.changed();
  return new Response(
    JSON.stringify(
      wire.errorBody(404, `No route for "${request.method} ${url.pathname}"`),
    ),
    { status: 404, headers: JSON_HEADERS },
  );
}

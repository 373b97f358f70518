/**
 * How the simulator writes its answers: a JSON body, an SSE stream (paused
 * between events, or cut after some, when the behaviour says so), garbage,
 * or a connection dropped mid-answer; and the tracker that records each
 * request's status and whether its client left before the last byte.
 *
 * Streams are written by a small pull-based writer rather than Hono's
 * `streamSSE`: `cutStreamAfter` must destroy the connection (error the body
 * stream) and `streamSSE` always ends its stream cleanly.
 *
 * @module
 */

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

/** What a {@linkcode Tracker} counts aborts in: the simulator's state. */
export interface AbortCounter {
  /** Requests whose client left before the answer's last byte. */
  aborted: number;
  /** Called after any change, for `waitFor`. */
  changed(): void;
}

/** The part of a request's record a {@linkcode Tracker} fills in. */
export interface AnswerRecord {
  /** Whether the client left before the answer's last byte. */
  aborted: boolean;
  /** The status answered. */
  status: number;
}

/** The headers of a JSON answer. */
export const JSON_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "application/json",
};
const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
};
const encoder = new TextEncoder();

/**
 * Waits, leaving no timer behind.
 *
 * @param ms How long, ms.
 * @param signal Ends the wait early.
 * @returns `true` after `ms`, or `false` as soon as `signal` aborts.
 */
export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
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

/**
 * Waits for an abort.
 *
 * @param signal The signal.
 * @returns A promise that resolves when `signal` aborts.
 */
export function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(), { once: true })
  );
}

/**
 * A response whose body fails at once: the client sees the connection drop.
 *
 * @returns The response.
 */
export function destroyedResponse(): Response {
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

/**
 * Tracks one request from arrival to its last byte, so a client abort is only
 * counted while in flight. `request.signal` is watched only while the
 * simulator waits (latency, hang): Deno's legacy mode also aborts it after a
 * successful response and warns once when it was read, so the common 0 ms
 * path never touches it; streams learn of a departed client from `cancel()`.
 */
export class Tracker {
  #done = false;
  #state: AbortCounter;
  #signal: AbortSignal | undefined;
  readonly record: AnswerRecord;

  /**
   * Starts tracking a request.
   *
   * @param state The simulator's abort count.
   * @param record The request's record.
   */
  constructor(state: AbortCounter, record: AnswerRecord) {
    this.#state = state;
    this.record = record;
  }

  /**
   * Starts watching the client's signal.
   *
   * @param signal The request's signal.
   * @returns The same signal.
   */
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

  /**
   * Records the status answered.
   *
   * @param status The HTTP status.
   */
  answered(status: number): void {
    this.record.status = status;
    this.#state.changed();
  }

  /** Marks the answer's last byte sent (a later client abort no longer counts). */
  finished(): void {
    if (this.#done) return;
    this.#done = true;
    this.#signal?.removeEventListener("abort", this.abort);
  }
}

/**
 * A JSON answer, recorded as answered and finished.
 *
 * @param tracker The request's tracker.
 * @param status The HTTP status.
 * @param body The JSON body.
 * @param headers Headers beside the content type.
 * @returns The response.
 */
export function jsonResponse(
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

/** How {@linkcode sseResponse} writes a stream. */
export interface StreamOptions {
  /** What ends each event on this wire. */
  delimiter: string;
  /** The pause before each event after the first, ms. */
  chunkDelayMs: number;
  /** Cut the connection after this many events (none: send them all). */
  cutAfter: number | undefined;
  /** Aborted when the simulator closes: ends a paused stream. */
  closing: AbortSignal;
  /** The request's tracker. */
  tracker: Tracker;
}

/**
 * Writes SSE events, with optional delays, cutting the connection when told to.
 *
 * @param events The events, in order.
 * @param options Delimiter, delays, cut and tracking.
 * @returns The streamed response.
 */
export function sseResponse(
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

/**
 * A 200 whose body is not what the wire promises: a broken SSE event, or
 * HTML where JSON was due.
 *
 * @param tracker The request's tracker.
 * @param stream Whether a stream was asked for.
 * @returns The response.
 */
export function garbageResponse(tracker: Tracker, stream: boolean): Response {
  tracker.answered(200);
  tracker.finished();
  return stream
    ? new Response("data: {not json at all\n\n", { headers: SSE_HEADERS })
    : new Response(
      "<html><body>502 Bad Gateway (simulated garbage)</body></html>",
      { headers: JSON_HEADERS },
    );
}

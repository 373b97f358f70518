/**
 * What the runner reads from an environment, bounded before it is buffered,
 * on every transport: a stdio line ({@linkcode BoundedLineBuffer}, which
 * takes the SDK's `ReadBuffer` place), a Streamable HTTP body or server-sent
 * event ({@linkcode boundedFetch}; a HUD environment's MCP rides on it
 * too). A message past {@linkcode MAX_MESSAGE_BYTES} is read no further and
 * answered in its place: a tool call with the start of its text and a
 * marker, any other request with an error, so nothing waits for it. The
 * stdio reach into the SDK's private `_readBuffer` is here and only here.
 *
 * @module
 */
import {
  deserializeMessage,
  type FetchLike,
  type JSONRPCMessage,
} from "@modelcontextprotocol/client";
import type { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

/**
 * One message from an environment read at most, bytes: room for a result
 * with several screenshots in base64, well below what would strain the
 * runner's memory.
 *
 * @example
 * ```ts
 * import { MAX_MESSAGE_BYTES } from "./_bounded_read.ts";
 *
 * MAX_MESSAGE_BYTES / 1024 / 1024; // 24
 * ```
 */
export const MAX_MESSAGE_BYTES = 24 * 1024 * 1024;

/** The start of an oversized message kept, bytes: its text's first part. */
const HEAD_BYTES = 64 * 1024;
/** The end of an oversized message kept, bytes: where its `id` usually is. */
const TAIL_BYTES = 256;

/** The requests sent and not yet answered: id → method. */
export class SentRequests {
  readonly #methods = new Map<string, string>();

  /**
   * Notes a message sent (a request's id and method).
   *
   * @param message The JSON-RPC message.
   */
  sent(message: unknown): void {
    const { id, method } = (message ?? {}) as {
      id?: unknown;
      method?: unknown;
    };
    if (
      (typeof id === "number" || typeof id === "string") &&
      typeof method === "string"
    ) {
      if (this.#methods.size > 10_000) this.#methods.clear();
      this.#methods.set(JSON.stringify(id), method);
    }
  }

  /**
   * The method of a request, forgotten once answered.
   *
   * @param id The request's id.
   * @returns Its method, if it was sent.
   */
  answered(id: unknown): string | undefined {
    const key = JSON.stringify(id);
    const method = this.#methods.get(key);
    this.#methods.delete(key);
    return method;
  }
}

/** What is kept of an oversized message. */
interface Oversized {
  head: Uint8Array;
  tail: Uint8Array;
  size: number;
}

/**
 * The answer given in place of an oversized one: for `tools/call`, a result
 * with the start of its first text and a marker the model reads; for any
 * other request, an error; `undefined` when its request is not known.
 *
 * @param message What was kept of it.
 * @param requests The requests sent.
 * @param limit The limit it went past.
 * @param knownId The request it answers, when the transport knows it.
 * @returns The message to hand on, if any.
 */
export function oversizedReply(
  message: Oversized,
  requests: SentRequests,
  limit: number,
  knownId?: string | number,
): JSONRPCMessage | undefined {
  const text = new TextDecoder();
  const id = knownId ??
    idIn(text.decode(message.tail)) ?? idIn(text.decode(message.head));
  if (id === undefined) return undefined;
  const method = requests.answered(id);
  if (method === undefined) return undefined;
  const why = `the environment's answer to ${method} was over ${limit} bytes (${
    message.size >= limit ? `at least ${message.size}` : message.size
  } read): the runner read no more of it`;
  if (method === "tools/call") {
    return {
      jsonrpc: "2.0",
      id,
      result: {
        // The 2026-07-28 revision's mark of a final result; earlier
        // revisions' clients pass unknown fields through.
        resultType: "complete",
        content: [
          { type: "text", text: firstText(text.decode(message.head)) },
          { type: "text", text: `[truncated: ${why}]` },
        ],
      },
    } as JSONRPCMessage;
  }
  return {
    jsonrpc: "2.0",
    id,
    error: { code: -32603, message: `Cannot read ${why}` },
  } as JSONRPCMessage;
}

/** The request id a JSON-RPC message's text carries, if one is found. */
function idIn(text: string): string | number | undefined {
  const match = /"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")\s*[,}]/.exec(
    text,
  );
  if (!match) return undefined;
  return JSON.parse(match[1]) as string | number;
}

/** The start of the first `"text"` string of a message cut short. */
function firstText(head: string): string {
  const at = head.indexOf('"text":"');
  if (at === -1) return "";
  let raw = head.slice(at + 8);
  const end = /(?<!\\)(?:\\\\)*"/.exec(raw);
  if (end) raw = raw.slice(0, end.index + end[0].length - 1);
  // Cut at most a partial escape off the end until it reads as a string.
  for (let cut = 0; cut < 7 && raw.length > cut; cut++) {
    try {
      return JSON.parse(`"${raw.slice(0, raw.length - cut)}"`) as string;
    } catch {
      // a partial escape at the end: cut one more character
    }
  }
  return "";
}

/**
 * The SDK's stdio read buffer, bounded: lines are kept as the chunks they
 * came in (no copy per chunk), and a line past the limit is dropped as it
 * arrives, its start and end kept to answer it ({@linkcode oversizedReply}).
 */
export class BoundedLineBuffer {
  readonly #limit: number;
  readonly #requests: SentRequests;
  #chunks: Uint8Array[] = [];
  #size = 0;
  #oversized: Oversized | undefined;
  #ready: (Uint8Array | Oversized)[] = [];

  /**
   * Creates the buffer.
   *
   * @param requests The requests sent, to answer an oversized line.
   * @param limit One line's bytes at most.
   */
  constructor(requests: SentRequests, limit: number = MAX_MESSAGE_BYTES) {
    this.#requests = requests;
    this.#limit = limit;
  }

  /**
   * Takes bytes the process wrote.
   *
   * @param chunk The bytes.
   */
  append(chunk: Uint8Array): void {
    let from = 0;
    while (from < chunk.length) {
      const newline = chunk.indexOf(10, from);
      const end = newline === -1 ? chunk.length : newline;
      this.#take(chunk.subarray(from, end));
      if (newline === -1) break;
      this.#endLine();
      from = newline + 1;
    }
  }

  #take(part: Uint8Array): void {
    if (part.length === 0) return;
    this.#size += part.length;
    if (this.#oversized) {
      this.#oversized.size = this.#size;
      this.#oversized.tail = lastBytes(this.#oversized.tail, part);
      return;
    }
    this.#chunks.push(part.slice());
    if (this.#size > this.#limit) {
      const head = join(this.#chunks, HEAD_BYTES);
      this.#oversized = {
        head,
        tail: lastBytes(new Uint8Array(0), part),
        size: this.#size,
      };
      this.#chunks = [];
    }
  }

  #endLine(): void {
    if (this.#oversized) this.#ready.push(this.#oversized);
    else if (this.#size > 0) this.#ready.push(join(this.#chunks));
    this.#chunks = [];
    this.#size = 0;
    this.#oversized = undefined;
  }

  /**
   * The next message, if a whole line is in (one that is not JSON-RPC is
   * skipped, as the SDK's buffer does).
   *
   * @returns The message, or `null`.
   */
  readMessage(): JSONRPCMessage | null {
    for (;;) {
      const next = this.#ready.shift();
      if (next === undefined) return null;
      if (!(next instanceof Uint8Array)) {
        const reply = oversizedReply(next, this.#requests, this.#limit);
        if (reply) return reply;
        continue;
      }
      try {
        const message = deserializeMessage(
          new TextDecoder().decode(next).replace(/\r$/, ""),
        );
        if ("id" in message && !("method" in message)) {
          this.#requests.answered(message.id);
        }
        return message;
      } catch (error) {
        if (error instanceof SyntaxError) continue;
        throw error;
      }
    }
  }

  /** Drops everything. */
  clear(): void {
    this.#chunks = [];
    this.#ready = [];
    this.#size = 0;
    this.#oversized = undefined;
  }
}

/**
 * Bounds what a stdio transport reads: its line buffer becomes a
 * {@linkcode BoundedLineBuffer}, and what it sends is noted to answer an
 * oversized line.
 *
 * @param transport The SDK's stdio transport, before it starts.
 * @param limit One line's bytes at most.
 * @returns The transport.
 */
export function boundStdio(
  transport: StdioClientTransport,
  limit: number = MAX_MESSAGE_BYTES,
): StdioClientTransport {
  const requests = new SentRequests();
  // The SDK's ReadBuffer copies the whole line on every chunk and gives up
  // past 10 MB by closing the connection; its field is private.
  (transport as unknown as { _readBuffer: BoundedLineBuffer })._readBuffer =
    new BoundedLineBuffer(requests, limit);
  const send = transport.send.bind(transport);
  transport.send = (message: JSONRPCMessage) => {
    requests.sent(message);
    return send(message);
  };
  return transport;
}

/**
 * A fetch whose responses are read bounded: a JSON body, or each event of a
 * server-sent event stream, past the limit is read no further and answered
 * in its place ({@linkcode oversizedReply}); any other body past the limit
 * ends in an error.
 *
 * @example
 * ```ts
 * import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
 * import { boundedFetch } from "./_bounded_read.ts";
 *
 * new StreamableHTTPClientTransport(new URL("http://127.0.0.1:8765/mcp"), {
 *   fetch: boundedFetch(),
 * });
 * ```
 *
 * @param limit One message's bytes at most.
 * @returns The fetch to give the transport.
 */
export function boundedFetch(limit: number = MAX_MESSAGE_BYTES): FetchLike {
  return async (url, init) => {
    const requests = new SentRequests();
    let id: string | number | undefined;
    if (typeof init?.body === "string") {
      try {
        const message = JSON.parse(init.body);
        requests.sent(message);
        id = (message as { id?: string | number }).id;
      } catch {
        // not one JSON-RPC request: nothing to answer in its place
      }
    }
    const response = await fetch(url, init);
    if (!response.body) return response;
    const type = response.headers.get("content-type") ?? "";
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    const rebuilt = (body: ReadableStream<Uint8Array> | string) =>
      new Response(body, {
        status: response.status,
        statusText: response.statusText,
        headers,
      });
    if (type.includes("text/event-stream")) {
      return rebuilt(
        response.body.pipeThrough(boundedEvents(requests, limit, id)),
      );
    }
    const read = await readAtMost(response.body, limit);
    if (!read.over) return rebuilt(new TextDecoder().decode(read.bytes));
    const reply = type.includes("json")
      ? oversizedReply(
        { head: read.bytes, tail: new Uint8Array(0), size: read.size },
        requests,
        limit,
        id,
      )
      : undefined;
    if (reply) return rebuilt(JSON.stringify(reply));
    throw new RangeError(
      `The environment's answer was over ${limit} bytes: the runner read no more of it`,
    );
  };
}

/** A body's bytes up to the limit (then its start only, and it is cancelled). */
async function readAtMost(
  body: ReadableStream<Uint8Array>,
  limit: number,
): Promise<{ bytes: Uint8Array; size: number; over: boolean }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return { bytes: join(chunks, HEAD_BYTES), size, over: true };
    }
    chunks.push(value);
  }
  return { bytes: join(chunks), size, over: false };
}

/**
 * Server-sent events passed on whole, each at most `limit` bytes: one past
 * it is dropped as it arrives and answered in its place.
 */
function boundedEvents(
  requests: SentRequests,
  limit: number,
  id: string | number | undefined,
): TransformStream<Uint8Array, Uint8Array> {
  let event: Uint8Array[] = [];
  let size = 0;
  let oversized: Oversized | undefined;
  // Whether the event's current line has had any byte but "\r".
  let lineEmpty = true;
  const encoder = new TextEncoder();
  const endEvent = (
    controller: TransformStreamDefaultController<Uint8Array>,
  ) => {
    if (oversized) {
      const reply = oversizedReply(oversized, requests, limit, id);
      if (reply) {
        controller.enqueue(
          encoder.encode(`event: message\ndata: ${JSON.stringify(reply)}\n\n`),
        );
      }
    } else if (size > 0) controller.enqueue(join(event));
    event = [];
    size = 0;
    oversized = undefined;
  };
  const take = (part: Uint8Array) => {
    if (part.length === 0) return;
    size += part.length;
    if (oversized) {
      oversized.size = size;
      oversized.tail = lastBytes(oversized.tail, part);
      return;
    }
    event.push(part.slice());
    if (size > limit) {
      oversized = {
        head: dataOf(join(event, HEAD_BYTES)),
        tail: lastBytes(new Uint8Array(0), part),
        size,
      };
      event = [];
    }
  };
  // The answer to this POST's request: given now, and the stream ends (an
  // event that never ends would otherwise keep the request waiting).
  const answerNow = (
    controller: TransformStreamDefaultController<Uint8Array>,
  ): boolean => {
    if (!oversized || id === undefined) return false;
    const reply = oversizedReply(oversized, requests, limit, id);
    if (reply) {
      controller.enqueue(
        encoder.encode(`event: message\ndata: ${JSON.stringify(reply)}\n\n`),
      );
    }
    controller.terminate();
    return true;
  };
  return new TransformStream({
    transform(chunk, controller) {
      let from = 0;
      while (from < chunk.length) {
        const newline = chunk.indexOf(10, from);
        const end = newline === -1 ? chunk.length : newline + 1;
        const part = chunk.subarray(from, end);
        if (part.some((byte) => byte !== 10 && byte !== 13)) lineEmpty = false;
        take(part);
        if (answerNow(controller)) return;
        if (newline === -1) break;
        if (lineEmpty) endEvent(controller);
        lineEmpty = true;
        from = end;
      }
    },
    flush(controller) {
      endEvent(controller);
    },
  });
}

/** An event's `data:` text, for finding its message's start. */
function dataOf(event: Uint8Array): Uint8Array {
  const text = new TextDecoder().decode(event);
  const at = text.indexOf("data:");
  return new TextEncoder().encode(
    at === -1 ? text : text.slice(at + 5).trimStart(),
  );
}

/** The last {@linkcode TAIL_BYTES} of what was kept and a new part. */
function lastBytes(kept: Uint8Array, part: Uint8Array): Uint8Array {
  if (part.length >= TAIL_BYTES) return part.slice(part.length - TAIL_BYTES);
  const both = new Uint8Array(Math.min(TAIL_BYTES, kept.length + part.length));
  const fromKept = both.length - part.length;
  both.set(kept.subarray(kept.length - fromKept), 0);
  both.set(part, fromKept);
  return both;
}

/** The chunks joined, at most `max` bytes of them. */
function join(chunks: Uint8Array[], max = Infinity): Uint8Array {
  const size = Math.min(
    max,
    chunks.reduce((sum, chunk) => sum + chunk.length, 0),
  );
  const all = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    if (at >= size) break;
    const part = chunk.subarray(0, size - at);
    all.set(part, at);
    at += part.length;
  }
  return all;
}

/**
 * What the runner reads from an environment, bounded before it is buffered,
 * on every transport: a stdio line ({@linkcode BoundedLineBuffer}, which
 * takes the SDK's `ReadBuffer` place), a Streamable HTTP body or server-sent
 * event (`_bounded_http.ts`; a HUD environment's MCP rides on it too). A
 * message past {@linkcode MAX_MESSAGE_BYTES} is read no further and
 * answered in its place: a tool call with the start of its text and a
 * marker, any other request with an error, so nothing waits for it. The
 * stdio reach into the SDK's private `_readBuffer` is here and only here.
 *
 * @module
 */
import {
  deserializeMessage,
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
export const HEAD_BYTES = 64 * 1024;
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
export interface Oversized {
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

export function lastBytes(kept: Uint8Array, part: Uint8Array): Uint8Array {
  if (part.length >= TAIL_BYTES) return part.slice(part.length - TAIL_BYTES);
  const both = new Uint8Array(Math.min(TAIL_BYTES, kept.length + part.length));
  const fromKept = both.length - part.length;
  both.set(kept.subarray(kept.length - fromKept), 0);
  both.set(part, fromKept);
  return both;
}

/** The chunks joined, at most `max` bytes of them. */
export function join(chunks: Uint8Array[], max = Infinity): Uint8Array {
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

/**
 * A stdio transport on Deno's own streams. The SDK's `StdioServerTransport`
 * never notices stdin closing, so a server run under an agent harness would
 * outlive its client; this one closes on EOF.
 *
 * @module
 */
import { serializeMessage } from "../_sdk.ts";
import type { Transport } from "../_sdk.ts";
import type { JSONRPCMessage } from "../_sdk.ts";
import {
  inputError,
  INVALID_REQUEST,
  type JsonRpcInputError,
  readMessage,
} from "./_jsonrpc.ts";

/** Longest line read (the SDK's stdio default); longer ones are refused and skipped. */
export const MAX_LINE_BYTES: number = 10 * 1024 * 1024;
const NEWLINE = 0x0a;

/**
 * Newline-delimited JSON-RPC over stdin/stdout that closes when stdin ends.
 * A line that is not JSON (-32700), not a JSON-RPC message or a batch
 * (-32600), or longer than {@linkcode MAX_LINE_BYTES} (-32600, the rest of
 * the line skipped) is answered with a JSON-RPC error and reading goes on:
 * the SDK's `ReadBuffer` only reported such lines, and ended the connection
 * on an oversized one.
 */
export class DenoStdioTransport implements Transport {
  /** Called when stdin ends or `close()` is called. */
  onclose?: () => void;
  /** Called on a read or parse error. */
  onerror?: (error: Error) => void;
  /** Called for every message read from stdin. */
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #input: ReadableStream<Uint8Array>;
  readonly #output?: WritableStream<Uint8Array>;
  readonly #decoder = new TextDecoder();
  readonly #encoder = new TextEncoder();
  #line: Uint8Array[] = [];
  #lineBytes = 0;
  #skippingLine = false;
  #reader?: ReadableStreamDefaultReader<Uint8Array>;
  // One writer for the transport's life: its writes keep their order, and a
  // writer per message cost more than the message (bench/mcp).
  #writer?: WritableStreamDefaultWriter<Uint8Array>;
  #writes: Promise<void> = Promise.resolve();
  #closed = false;
  #draining = false;
  readonly #done = Promise.withResolvers<void>();

  /** Resolves once the transport has closed (stdin ended or `close()`); whoever owns `onclose`. */
  readonly closed: Promise<void> = this.#done.promise;

  /**
   * Creates the transport.
   *
   * @param input Stream of client messages; defaults to stdin.
   * @param output Stream for server messages; defaults to stdout, written
   * synchronously as Node writes to a pipe on Linux (an async write per
   * message cost a third of a tool call's round trip in bench/mcp).
   */
  constructor(
    input: ReadableStream<Uint8Array> = Deno.stdin.readable,
    output?: WritableStream<Uint8Array>,
  ) {
    this.#input = input;
    this.#output = output;
  }

  /** Starts reading stdin in the background. */
  start(): Promise<void> {
    this.#reader = this.#input.getReader();
    this.#read();
    return Promise.resolve();
  }

  async #read(): Promise<void> {
    const reader = this.#reader!;
    try {
      while (true) {
        const { value, done } = await reader.read();
        if (done) break;
        this.#append(value);
      }
    } catch (error) {
      if (!this.#closed) this.onerror?.(error as Error);
    }
    await this.close();
  }

  #append(chunk: Uint8Array): void {
    let start = 0;
    while (true) {
      const end = chunk.indexOf(NEWLINE, start);
      if (end === -1) return this.#hold(chunk.subarray(start));
      this.#hold(chunk.subarray(start, end));
      this.#endLine();
      start = end + 1;
    }
  }

  #hold(part: Uint8Array): void {
    if (this.#skippingLine || part.length === 0) return;
    if (this.#lineBytes + part.length > MAX_LINE_BYTES) {
      this.#skippingLine = true;
      this.#line = [];
      this.#lineBytes = 0;
      this.#refuse(inputError(
        INVALID_REQUEST,
        `Invalid Request: message longer than ${MAX_LINE_BYTES} bytes`,
      ));
      return;
    }
    this.#line.push(part);
    this.#lineBytes += part.length;
  }

  #endLine(): void {
    if (this.#skippingLine) {
      this.#skippingLine = false;
      return;
    }
    let bytes = this.#line[0] ?? new Uint8Array();
    if (this.#line.length > 1) {
      bytes = new Uint8Array(this.#lineBytes);
      let offset = 0;
      for (const part of this.#line) {
        bytes.set(part, offset);
        offset += part.length;
      }
    }
    this.#line = [];
    this.#lineBytes = 0;
    const text = this.#decoder.decode(bytes).replace(/\r$/, "");
    if (text.trim() === "") return;
    const read = readMessage(text);
    if ("error" in read) return this.#refuse(read.error);
    if (this.#draining && isRequest(read.message)) {
      return this.#refuse(
        inputError(-32000, "The server is shutting down", read.message),
      );
    }
    try {
      this.onmessage?.(read.message);
    } catch (error) {
      this.onerror?.(error as Error);
    }
  }

  #refuse(response: JsonRpcInputError): void {
    this.onerror?.(new Error(response.error.message));
    this.send(response as unknown as JSONRPCMessage).catch((error) =>
      this.onerror?.(error as Error)
    );
  }

  /**
   * Stops taking new requests: each is answered with a JSON-RPC error while
   * the server finishes what it has (SIGTERM). Responses and notifications
   * still pass.
   */
  drain(): void {
    this.#draining = true;
  }

  /**
   * Writes one message to stdout; writes keep their order.
   *
   * @param message The message to send.
   */
  send(message: JSONRPCMessage): Promise<void> {
    const bytes = this.#encoder.encode(serializeMessage(message));
    if (!this.#output) {
      try {
        for (let written = 0; written < bytes.length;) {
          written += Deno.stdout.writeSync(bytes.subarray(written));
        }
        return Promise.resolve();
      } catch (error) {
        return Promise.reject(error);
      }
    }
    this.#writer ??= this.#output.getWriter();
    this.#writes = this.#writer.write(bytes);
    return this.#writes;
  }

  /** Stops reading and reports the close once. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#reader?.cancel().catch(() => {});
    await this.#writes.catch(() => {});
    this.#writer?.releaseLock();
    this.#line = [];
    this.onclose?.();
    this.#done.resolve();
  }
}

function isRequest(message: JSONRPCMessage): message is JSONRPCMessage & {
  id: string | number;
  method: string;
} {
  return "method" in message && "id" in message;
}

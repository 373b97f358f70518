/**
 * A stdio transport on Deno's own streams. The SDK's `StdioServerTransport`
 * never notices stdin closing, so a server run under an agent harness would
 * outlive its client; this one closes on EOF.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { ReadBuffer, serializeMessage } from "./_sdk.ts";
import type { Transport } from "./_sdk.ts";
import type { JSONRPCMessage } from "./_sdk.ts";

/** Newline-delimited JSON-RPC over stdin/stdout that closes when stdin ends. */
export class DenoStdioTransport implements Transport {
  /** Called when stdin ends or `close()` is called. */
  onclose?: () => void;
  /** Called on a read or parse error. */
  onerror?: (error: Error) => void;
  /** Called for every message read from stdin. */
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #input: ReadableStream<Uint8Array>;
  readonly #output: WritableStream<Uint8Array>;
  readonly #buffer = new ReadBuffer();
  #reader?: ReadableStreamDefaultReader<Uint8Array>;
  #writes: Promise<void> = Promise.resolve();
  #closed = false;

  /**
   * Creates the transport.
   *
   * @param input Stream of client messages; defaults to stdin.
   * @param output Stream for server messages; defaults to stdout.
   */
  constructor(
    input: ReadableStream<Uint8Array> = Deno.stdin.readable,
    output: WritableStream<Uint8Array> = Deno.stdout.writable,
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
        this.#buffer.append(Buffer.from(value));
        this.#drain();
      }
    } catch (error) {
      if (!this.#closed) this.onerror?.(error as Error);
    }
    await this.close();
  }

  #drain(): void {
    while (true) {
      try {
        const message = this.#buffer.readMessage();
        if (message === null) return;
        this.onmessage?.(message);
      } catch (error) {
        this.onerror?.(error as Error);
      }
    }
  }

  /**
   * Writes one message to stdout; writes keep their order.
   *
   * @param message The message to send.
   */
  send(message: JSONRPCMessage): Promise<void> {
    const bytes = new TextEncoder().encode(serializeMessage(message));
    this.#writes = this.#writes.then(async () => {
      const writer = this.#output.getWriter();
      try {
        await writer.write(bytes);
      } finally {
        writer.releaseLock();
      }
    });
    return this.#writes;
  }

  /** Stops reading and reports the close once. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#reader?.cancel().catch(() => {});
    await this.#writes.catch(() => {});
    this.#buffer.clear();
    this.onclose?.();
  }
}

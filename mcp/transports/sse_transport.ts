/**
 * The legacy HTTP+SSE transport (protocol 2024-11-05) on web-standard
 * streams. The SDK's `SSEServerTransport` needs Node's `http` objects; this one
 * writes to a Hono SSE stream and takes posted messages from any handler.
 *
 * @module
 */
import type { SSEStreamingApi } from "hono/streaming";
import type { Transport } from "../_sdk.ts";
import { type JSONRPCMessage, JSONRPCMessageSchema } from "../_sdk.ts";

/**
 * One legacy SSE session: server messages go out as `event: message` on the
 * GET stream, client messages arrive through {@linkcode SseServerTransport.handleMessage}.
 */
export class SseServerTransport implements Transport {
  /** Session id, sent to the client in the `endpoint` event. */
  readonly sessionId: string = crypto.randomUUID();
  /** Called once when the stream ends or `close()` is called. */
  onclose?: () => void;
  /** Called on a malformed posted message. */
  onerror?: (error: Error) => void;
  /** Called for every posted message. */
  onmessage?: (message: JSONRPCMessage) => void;
  /** Resolves once the session has closed. */
  readonly closed: Promise<void>;
  readonly #stream: SSEStreamingApi;
  readonly #endpoint: string;
  #resolveClosed!: () => void;
  #isClosed = false;

  /**
   * Creates the session on an open SSE stream.
   *
   * @param endpoint Path clients post messages to, e.g. `/messages`.
   * @param stream The Hono SSE stream of the GET request.
   */
  constructor(endpoint: string, stream: SSEStreamingApi) {
    this.#endpoint = endpoint;
    this.#stream = stream;
    this.closed = new Promise((resolve) => this.#resolveClosed = resolve);
    stream.onAbort(() => this.close());
  }

  /** Sends the `endpoint` event that tells the client where to post. */
  async start(): Promise<void> {
    const url = `${this.#endpoint}?sessionId=${
      encodeURIComponent(this.sessionId)
    }`;
    await this.#stream.writeSSE({ event: "endpoint", data: url });
  }

  /**
   * Sends one message on the SSE stream.
   *
   * @param message The message to send.
   */
  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#isClosed) {
      throw new Error(`Cannot send on closed SSE session "${this.sessionId}"`);
    }
    await this.#stream.writeSSE({
      event: "message",
      data: JSON.stringify(message),
    });
  }

  /**
   * Takes one posted message.
   *
   * @param body The parsed JSON body of the POST.
   * @throws {Error} When the body is not a JSON-RPC message.
   */
  handleMessage(body: unknown): void {
    const parsed = JSONRPCMessageSchema.safeParse(body);
    if (!parsed.success) {
      const error = new Error(
        `Invalid JSON-RPC message: ${parsed.error.message}`,
      );
      this.onerror?.(error);
      throw error;
    }
    this.onmessage?.(parsed.data);
  }

  /** Ends the stream and reports the close once. */
  async close(): Promise<void> {
    if (this.#isClosed) return;
    this.#isClosed = true;
    await this.#stream.close().catch(() => {});
    this.onclose?.();
    this.#resolveClosed();
  }
}

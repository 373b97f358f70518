/**
 * A HUD v6 control-channel client written from HUD's public contract
 * (`docs/v6/internals/control-channel.mdx`): raw newline-delimited JSON-RPC
 * over a TCP socket, no code of ours on the client side.
 *
 * @module
 */
import assert from "node:assert/strict";

/** A reply as the contract describes it: fields read by name, checked by the test. */
// deno-lint-ignore no-explicit-any
export type Reply = Record<string, any>;

/** A control-channel client from the contract: one JSON value per line. */
export class Wire {
  readonly conn: Deno.Conn;
  #buffer = new Uint8Array(0);
  #nextId = 1;

  private constructor(conn: Deno.Conn) {
    this.conn = conn;
  }

  static async open(port: number): Promise<Wire> {
    return new Wire(await Deno.connect({ hostname: "127.0.0.1", port }));
  }

  async sendRaw(text: string | Uint8Array): Promise<void> {
    let bytes = typeof text === "string"
      ? new TextEncoder().encode(text)
      : text;
    while (bytes.length > 0) {
      bytes = bytes.subarray(await this.conn.write(bytes));
    }
  }

  /** Reads one line; `null` when the server closed the connection. */
  async line(): Promise<string | null> {
    for (;;) {
      const newline = this.#buffer.indexOf(0x0a);
      if (newline >= 0) {
        const line = new TextDecoder().decode(
          this.#buffer.subarray(0, newline),
        );
        this.#buffer = this.#buffer.slice(newline + 1);
        return line;
      }
      const chunk = new Uint8Array(65536);
      const n = await this.conn.read(chunk).catch(() => null);
      if (n === null) return null;
      const next = new Uint8Array(this.#buffer.length + n);
      next.set(this.#buffer);
      next.set(chunk.subarray(0, n), this.#buffer.length);
      this.#buffer = next;
    }
  }

  async reply(): Promise<Reply> {
    const line = await this.line();
    assert.ok(line !== null, "the server closed the connection");
    return JSON.parse(line);
  }

  /** Sends a request and returns its reply (the id checked). */
  async call(method: string, params?: unknown): Promise<Reply> {
    const id = this.#nextId++;
    await this.sendRaw(
      JSON.stringify({
        jsonrpc: "2.0",
        id,
        method,
        ...(params !== undefined && { params }),
      }) +
        "\n",
    );
    const reply = await this.reply();
    assert.equal(reply.jsonrpc, "2.0");
    assert.equal(reply.id, id);
    return reply;
  }

  async result(method: string, params?: unknown): Promise<Reply> {
    const reply = await this.call(method, params);
    assert.ok(!reply.error, `${method}: ${JSON.stringify(reply.error)}`);
    return reply.result;
  }

  close(): void {
    try {
      this.conn.close();
    } catch {
      // closed by the server
    }
  }
}

/**
 * The control channel's framing: one JSON value per line, UTF-8, at most
 * {@linkcode MAX_FRAME_BYTES} bytes of encoded JSON (the newline excluded),
 * as HUD v6 (hud-python 0.6) defines it. Both ends use it: the server in
 * `mcp/hud/` and the runner's client in `eval/hud_environment.ts`.
 *
 * @module
 */

/** The largest frame either side accepts: 16 MiB of encoded JSON, without the newline. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

/** How far past the limit an oversized frame is read to measure it before giving up. */
const MEASURE_LIMIT_BYTES = 4 * MAX_FRAME_BYTES;

const NEWLINE = 0x0a;
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** A JSON-RPC 2.0 message as it travels on the channel. */
export type Frame = Record<string, unknown>;

/** What one read of a frame gives. */
export type FrameRead =
  | { kind: "frame"; value: unknown }
  | { kind: "invalid"; reason: string }
  | { kind: "oversized"; size: number; measured: boolean }
  | { kind: "end" };

/**
 * Encodes one frame: compact JSON and a newline.
 *
 * @example
 * ```ts
 * import { encodeFrame } from "./framing.ts";
 *
 * const bytes = encodeFrame({ jsonrpc: "2.0", id: 1, method: "hello" });
 * console.log(new TextDecoder().decode(bytes)); // {"jsonrpc":"2.0","id":1,"method":"hello"}\n
 * ```
 *
 * @param frame The message.
 * @returns Its bytes, newline included.
 * @throws {RangeError} When the encoded JSON is over {@linkcode MAX_FRAME_BYTES}.
 */
export function encodeFrame(frame: unknown): Uint8Array {
  const body = encoder.encode(JSON.stringify(frame));
  if (body.length > MAX_FRAME_BYTES) {
    throw new RangeError(oversizedMessage(body.length, true));
  }
  const bytes = new Uint8Array(body.length + 1);
  bytes.set(body);
  bytes[body.length] = NEWLINE;
  return bytes;
}

/**
 * The message of an oversized frame: its encoded size and the limit.
 *
 * @param size The bytes counted.
 * @param measured Whether `size` is the whole frame (else: at least that many).
 * @returns The message.
 */
export function oversizedMessage(size: number, measured: boolean): string {
  return `Frame of ${
    measured ? "" : "more than "
  }${size} bytes exceeds the ${MAX_FRAME_BYTES}-byte limit`;
}

/**
 * Reads newline-delimited frames from a byte source, never holding more than
 * one frame's limit. After the first frame, {@linkcode FrameReader.rest}
 * hands over what was read past it (a tunnel's first bytes).
 */
export class FrameReader {
  readonly #source: { read(p: Uint8Array): Promise<number | null> };
  readonly #limit: number;
  /** Bytes read and not yet looked at for a newline. */
  #buffer = new Uint8Array(0);
  /**
   * The start of the current line, bytes without a newline, in one buffer
   * that doubles as it fills (so a line that trickles in a byte a read holds
   * at most twice its size, not an object per read).
   */
  #pending = new Uint8Array(0);
  #pendingSize = 0;
  #ended = false;
  /** The one buffer reads land in. */
  readonly #chunk = new Uint8Array(64 * 1024);

  /**
   * Creates the reader.
   *
   * @param source A connection (anything with `read`).
   * @param limit The largest frame, bytes (default {@linkcode MAX_FRAME_BYTES}).
   */
  constructor(
    source: { read(p: Uint8Array): Promise<number | null> },
    limit: number = MAX_FRAME_BYTES,
  ) {
    this.#source = source;
    this.#limit = limit;
  }

  /**
   * Reads the next frame. A line that is not UTF-8 JSON is `invalid` (the
   * next read goes on after it); a line over the limit is `oversized`, with
   * its size measured up to four times the limit.
   *
   * @returns The frame, why it is not one, or the end of the stream.
   */
  async read(): Promise<FrameRead> {
    for (;;) {
      const newline = this.#buffer.indexOf(NEWLINE);
      if (newline >= 0) {
        const line = this.#takeLine(this.#buffer.subarray(0, newline));
        this.#buffer = this.#buffer.slice(newline + 1);
        const end = line.length > 0 && line[line.length - 1] === 0x0d
          ? line.length - 1
          : line.length;
        if (end > this.#limit) {
          return { kind: "oversized", size: end, measured: true };
        }
        if (end === 0) continue;
        return parse(line.subarray(0, end));
      }
      if (this.#buffer.length > 0) {
        this.#append(this.#buffer);
        this.#buffer = new Uint8Array(0);
      }
      if (this.#pendingSize > this.#limit) return await this.#measure();
      if (!await this.#fill()) {
        if (this.#pendingSize === 0) return { kind: "end" };
        return parse(this.#takeLine(new Uint8Array(0)));
      }
    }
  }

  /** Bytes of a frame begun and not yet finished (0 between frames). */
  get pendingBytes(): number {
    return this.#pendingSize + this.#buffer.length;
  }

  /** The largest frame it accepts, bytes. */
  get limit(): number {
    return this.#limit;
  }

  /** The bytes read past the last frame, handed over once. */
  rest(): Uint8Array {
    const rest = this.#takeLine(this.#buffer);
    this.#buffer = new Uint8Array(0);
    return rest;
  }

  /** The pending chunks and `tail` as one line; pending is emptied. */
  #takeLine(tail: Uint8Array): Uint8Array {
    if (this.#pendingSize === 0) return tail;
    const line = new Uint8Array(this.#pendingSize + tail.length);
    line.set(this.#pending.subarray(0, this.#pendingSize));
    line.set(tail, this.#pendingSize);
    this.#pending = new Uint8Array(0);
    this.#pendingSize = 0;
    return line;
  }

  /** Reads on to the end of an oversized line, counting, up to a bound. */
  async #measure(): Promise<FrameRead> {
    let size = this.#pendingSize;
    this.#pending = new Uint8Array(0);
    this.#pendingSize = 0;
    const chunk = new Uint8Array(64 * 1024);
    while (size <= MEASURE_LIMIT_BYTES) {
      const n = this.#ended ? null : await this.#source.read(chunk);
      if (n === null) {
        this.#ended = true;
        return { kind: "oversized", size, measured: true };
      }
      const newline = chunk.subarray(0, n).indexOf(NEWLINE);
      if (newline >= 0) {
        this.#buffer = chunk.slice(newline + 1, n);
        return { kind: "oversized", size: size + newline, measured: true };
      }
      size += n;
    }
    return { kind: "oversized", size: MEASURE_LIMIT_BYTES, measured: false };
  }

  /** Adds bytes to the pending line, growing its buffer by doubling. */
  #append(bytes: Uint8Array): void {
    const size = this.#pendingSize + bytes.length;
    if (size > this.#pending.length) {
      const doubled = Math.min(this.#pending.length * 2, this.#limit + 1);
      const grown = new Uint8Array(Math.max(size, doubled));
      grown.set(this.#pending.subarray(0, this.#pendingSize));
      this.#pending = grown;
    }
    this.#pending.set(bytes, this.#pendingSize);
    this.#pendingSize = size;
  }

  /** Reads the next chunk into the buffer; false at the end of the stream. */
  async #fill(): Promise<boolean> {
    if (this.#ended) return false;
    const chunk = this.#chunk;
    const n = await this.#source.read(chunk);
    if (n === null) {
      this.#ended = true;
      return false;
    }
    // A copy of what was read: a view would keep the whole 64 KiB alive
    // for each byte of a line that trickles in a byte at a time.
    this.#buffer = chunk.slice(0, n);
    return true;
  }
}

function parse(line: Uint8Array): FrameRead {
  try {
    return { kind: "frame", value: JSON.parse(decoder.decode(line)) };
  } catch {
    return {
      kind: "invalid",
      reason: "Parse error: the frame is not UTF-8 JSON",
    };
  }
}

/**
 * Writes all of `bytes` to a connection (a single `write` may take part of them).
 *
 * @param conn The connection.
 * @param bytes What to write.
 */
export async function writeAll(
  conn: { write(p: Uint8Array): Promise<number> },
  bytes: Uint8Array,
): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) {
    offset += await conn.write(bytes.subarray(offset));
  }
}

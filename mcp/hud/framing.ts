/**
 * The control channel's framing: one JSON value per line, UTF-8, at most
 * {@linkcode MAX_FRAME_BYTES} bytes of encoded JSON (the newline excluded),
 * as HUD v6 (hud-python 0.6) defines it. Both ends use it: the server in
 * `mcp/hud/` and the runner's client in `eval/environments/hud_control.ts`.
 *
 * @module
 */
import { type FrameBudget, FREE_FRAME_BYTES } from "./frame_budget.ts";

/** The largest frame either side accepts: 16 MiB of encoded JSON, without the newline. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

/** How far past the limit an oversized frame is read to measure it before giving up. */
const MEASURE_LIMIT_BYTES = 4 * MAX_FRAME_BYTES;

/**
 * The most JSON values (objects, arrays and the members between commas) a
 * frame may hold. Bytes alone do not bound what a frame costs once parsed:
 * 16 MiB of `[{},{},…]` is five million objects, about 230 MiB. A frame
 * over this count is refused before it is parsed; 100,000 values cost at
 * most about 10 MiB beside the frame's own strings.
 */
export const MAX_FRAME_VALUES = 100_000;

/** The deepest nesting of arrays and objects a frame may have. */
export const MAX_FRAME_DEPTH = 64;

const NEWLINE = 0x0a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
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

/** Options of {@linkcode FrameReader}. */
export interface FrameReaderOptions {
  /** The largest frame, bytes (default {@linkcode MAX_FRAME_BYTES}). */
  limit?: number;
  /** The most JSON values a frame may hold (default {@linkcode MAX_FRAME_VALUES}). */
  maxValues?: number;
  /**
   * The budget a frame past its first 64 KiB draws on (none: the reader
   * holds any frame up to the limit on its own).
   */
  budget?: FrameBudget;
}

/**
 * Reads newline-delimited frames from a byte source, never holding more than
 * one frame's limit. After the first frame, {@linkcode FrameReader.rest}
 * hands over what was read past it (a tunnel's first bytes).
 */
export class FrameReader {
  readonly #source: { read(p: Uint8Array): Promise<number | null> };
  readonly #limit: number;
  readonly #maxValues: number;
  #budget: FrameBudget | undefined;
  /** Bytes of the budget this reader holds for the frame in progress. */
  #held = 0;
  /** Aborted by {@linkcode FrameReader.cancel}: a wait for the budget ends. */
  readonly #cancelled = new AbortController();
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
  /**
   * The one buffer reads land in: 16 KiB, since every open connection keeps
   * one while it waits for its peer.
   */
  readonly #chunk = new Uint8Array(16 * 1024);

  /**
   * Creates the reader.
   *
   * @param source A connection (anything with `read`).
   * @param limit The largest frame, bytes, or the options.
   */
  constructor(
    source: { read(p: Uint8Array): Promise<number | null> },
    limit: number | FrameReaderOptions = {},
  ) {
    const options = typeof limit === "number" ? { limit } : limit;
    this.#source = source;
    this.#limit = options.limit ?? MAX_FRAME_BYTES;
    this.#maxValues = options.maxValues ?? MAX_FRAME_VALUES;
    this.#budget = options.budget;
  }

  /**
   * Reads the next frame. A line that is not UTF-8 JSON, or holds more than
   * the most values, is `invalid` (the next read goes on after it); a line
   * over the limit is `oversized`, with its size measured up to four times
   * the limit.
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
        return parse(line.subarray(0, end), this.#maxValues);
      }
      if (this.#buffer.length > 0) {
        this.#append(this.#buffer);
        this.#buffer = new Uint8Array(0);
      }
      if (this.#pendingSize > this.#limit) return await this.#measure();
      if (this.#pendingSize > FREE_FRAME_BYTES) await this.#borrow();
      if (!await this.#fill()) {
        if (this.#pendingSize === 0) return { kind: "end" };
        return parse(this.#takeLine(new Uint8Array(0)), this.#maxValues);
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

  /**
   * Stops drawing on the budget (a connection that proved it is the
   * harness): what it holds goes back, later frames are its own.
   */
  leaveBudget(): void {
    this.#giveBack();
    this.#budget = undefined;
  }

  /** Ends a wait for the budget, and gives back what it holds (the connection closed). */
  cancel(): void {
    this.#cancelled.abort();
    this.#giveBack();
  }

  /** The bytes read past the last frame, handed over once. */
  rest(): Uint8Array {
    const rest = this.#takeLine(this.#buffer);
    this.#buffer = new Uint8Array(0);
    return rest;
  }

  /** Takes a whole frame's share of the budget, waiting for it. */
  async #borrow(): Promise<void> {
    if (!this.#budget || this.#held > 0) return;
    const share = this.#limit + 1;
    await this.#budget.acquire(share, this.#cancelled.signal);
    this.#held = share;
    // The share is a whole frame: one buffer of that size now, rather than
    // a chain of doublings whose copies the collector must find later.
    const whole = new Uint8Array(share);
    whole.set(this.#pending.subarray(0, this.#pendingSize));
    this.#pending = whole;
  }

  #giveBack(): void {
    if (this.#held > 0) this.#budget?.release(this.#held);
    this.#held = 0;
  }

  /**
   * The pending bytes and `tail` as one line; pending is emptied and its
   * share of the budget given back. The tail is added to the pending
   * buffer, so a 16 MiB line is not copied a second time.
   */
  #takeLine(tail: Uint8Array): Uint8Array {
    if (this.#pendingSize === 0) return tail;
    this.#append(tail);
    const line = this.#pending.subarray(0, this.#pendingSize);
    this.#pending = new Uint8Array(0);
    this.#pendingSize = 0;
    this.#giveBack();
    return line;
  }

  /** Reads on to the end of an oversized line, counting, up to a bound. */
  async #measure(): Promise<FrameRead> {
    let size = this.#pendingSize;
    this.#pending = new Uint8Array(0);
    this.#pendingSize = 0;
    this.#giveBack();
    const chunk = this.#chunk;
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
    // A copy of what was read: a view would keep the whole chunk alive
    // for each byte of a line that trickles in a byte at a time.
    this.#buffer = chunk.slice(0, n);
    return true;
  }
}

function parse(line: Uint8Array, maxValues: number): FrameRead {
  const shape = measureShape(line);
  if (shape.values > maxValues || shape.depth > MAX_FRAME_DEPTH) {
    return {
      kind: "invalid",
      reason: shape.depth > MAX_FRAME_DEPTH
        ? `Frame nests deeper than ${MAX_FRAME_DEPTH} levels: refused before parsing`
        : `Frame holds more than ${maxValues} JSON values: refused before parsing`,
    };
  }
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
 * Counts what a JSON text would parse to without parsing it: objects,
 * arrays and comma-separated members outside strings, and the deepest
 * nesting. Malformed text is counted as far as it goes (the parser then
 * refuses it).
 */
function measureShape(line: Uint8Array): { values: number; depth: number } {
  let values = 1;
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < line.length; i++) {
    const byte = line[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
      continue;
    }
    if (byte === QUOTE) inString = true;
    else if (byte === COMMA) values++;
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      values++;
      if (++depth > deepest) deepest = depth;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) depth--;
  }
  return { values, depth: deepest };
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

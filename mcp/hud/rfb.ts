/**
 * A minimal RFB (VNC, protocol 3.8, RFC 6143) client for HUD's `rfb`
 * capability: the handshake with security type None, a 32-bit true-colour
 * pixel format, Raw-encoded framebuffer updates, pointer and key events.
 * `rfb_executor.ts` lets the `computer` tool of `@org/mcpkit/tools` drive a
 * screen over it.
 *
 * Everything the server sends is bounded: a screen up to 8192×8192, update
 * rectangles inside it, names and cut text capped.
 *
 * @module
 */
import { writeAll } from "./framing.ts";

const MAX_SIDE = 8192;
const MAX_TEXT = 1 << 20;

/** Reads exact byte counts from a connection. */
class ByteReader {
  readonly #conn: Deno.Conn;
  #buffer: Uint8Array;

  constructor(conn: Deno.Conn, early: Uint8Array) {
    this.#conn = conn;
    this.#buffer = early;
  }

  async read(n: number): Promise<Uint8Array> {
    const chunks: Uint8Array[] = [];
    let have = 0;
    while (have < n) {
      if (this.#buffer.length === 0) {
        const chunk = new Uint8Array(
          Math.max(65536, Math.min(n - have, 1 << 22)),
        );
        const got = await this.#conn.read(chunk);
        if (got === null) {
          throw new Error("The VNC server closed the connection");
        }
        this.#buffer = chunk.subarray(0, got);
      }
      const take = Math.min(n - have, this.#buffer.length);
      chunks.push(this.#buffer.subarray(0, take));
      this.#buffer = this.#buffer.subarray(take);
      have += take;
    }
    if (chunks.length === 1) return chunks[0];
    const out = new Uint8Array(n);
    let offset = 0;
    for (const chunk of chunks) {
      out.set(chunk, offset);
      offset += chunk.length;
    }
    return out;
  }

  async u8(): Promise<number> {
    return (await this.read(1))[0];
  }

  async u16(): Promise<number> {
    const b = await this.read(2);
    return (b[0] << 8) | b[1];
  }

  async u32(): Promise<number> {
    const b = await this.read(4);
    return new DataView(b.buffer, b.byteOffset, 4).getUint32(0);
  }

  async text(limit: number, what: string): Promise<string> {
    const length = await this.u32();
    if (length > limit) {
      throw new Error(`The VNC server sent a ${what} of ${length} bytes`);
    }
    return new TextDecoder().decode(await this.read(length));
  }
}

/**
 * One RFB connection: the screen's size and name, its pixels (RGBX, 4
 * bytes a pixel, kept up to date by {@linkcode RfbClient.refresh}), and the
 * events that drive it.
 */
export class RfbClient {
  /** The screen's width, pixels. */
  readonly width: number;
  /** The screen's height, pixels. */
  readonly height: number;
  /** The desktop's name. */
  readonly name: string;
  /** The pixels, row by row, 4 bytes each: red, green, blue, unused. */
  readonly pixels: Uint8Array;
  readonly #conn: Deno.Conn;
  readonly #reader: ByteReader;
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(
    conn: Deno.Conn,
    reader: ByteReader,
    init: { width: number; height: number; name: string },
  ) {
    this.#conn = conn;
    this.#reader = reader;
    this.width = init.width;
    this.height = init.height;
    this.name = init.name;
    this.pixels = new Uint8Array(init.width * init.height * 4);
  }

  /**
   * Shakes hands on a connection to a VNC server (security type None), asks
   * for 32-bit RGB pixels in Raw encoding.
   *
   * @param conn The connection (a tunnel, or a direct one).
   * @param early Bytes already read from it.
   * @returns The client.
   * @throws {Error} When the server speaks another version, wants a password, or refuses.
   */
  static async connect(
    conn: Deno.Conn,
    early: Uint8Array = new Uint8Array(),
  ): Promise<RfbClient> {
    const reader = new ByteReader(conn, early);
    const version = new TextDecoder().decode(await reader.read(12));
    const match = /^RFB (\d{3})\.(\d{3})\n$/.exec(version);
    if (!match || Number(match[1]) !== 3 || Number(match[2]) < 8) {
      throw new Error(
        `The VNC server speaks ${JSON.stringify(version)}, not RFB 3.8`,
      );
    }
    await writeAll(conn, new TextEncoder().encode("RFB 003.008\n"));
    const count = await reader.u8();
    if (count === 0) {
      throw new Error(
        `The VNC server refused: ${await reader.text(MAX_TEXT, "reason")}`,
      );
    }
    const types = await reader.read(count);
    if (!types.includes(1)) {
      throw new Error(
        `The VNC server needs authentication (security types ${
          [...types].join(", ")
        }); only None is supported`,
      );
    }
    await writeAll(conn, new Uint8Array([1]));
    if (await reader.u32() !== 0) {
      throw new Error(
        `The VNC server refused: ${await reader.text(MAX_TEXT, "reason")}`,
      );
    }
    await writeAll(conn, new Uint8Array([1])); // ClientInit: share the desktop
    const width = await reader.u16();
    const height = await reader.u16();
    await reader.read(16); // the server's pixel format: replaced below
    const name = await reader.text(4096, "desktop name");
    if (width < 1 || height < 1 || width > MAX_SIDE || height > MAX_SIDE) {
      throw new Error(`The VNC server's screen is ${width}x${height}`);
    }
    const client = new RfbClient(conn, reader, { width, height, name });
    // SetPixelFormat: 32 bits, depth 24, little endian, true colour, 8 bits
    // a channel, red in the lowest byte: memory order R, G, B, X.
    const format = new Uint8Array(20);
    format.set([0, 0, 0, 0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 0, 8, 16]);
    // SetEncodings: Raw only.
    const encodings = new Uint8Array([2, 0, 0, 1, 0, 0, 0, 0]);
    await writeAll(conn, concat(format, encodings));
    return client;
  }

  /**
   * Asks for the whole screen and reads until it arrived.
   *
   * @returns The pixels (the same array as {@linkcode RfbClient.pixels}).
   */
  refresh(): Promise<Uint8Array> {
    return this.#serial(async () => {
      const request = new Uint8Array(10);
      const view = new DataView(request.buffer);
      request[0] = 3;
      request[1] = 0; // not incremental: the whole screen
      view.setUint16(6, this.width);
      view.setUint16(8, this.height);
      await writeAll(this.#conn, request);
      while (!(await this.#readMessage())) { /* other messages: read on */ }
      return this.pixels;
    });
  }

  /**
   * Sends a pointer event.
   *
   * @param x Column.
   * @param y Row.
   * @param buttons Mask: 1 left, 2 middle, 4 right, 8/16 wheel up/down, 32/64 left/right.
   */
  pointer(x: number, y: number, buttons: number): Promise<void> {
    const event = new Uint8Array(6);
    const view = new DataView(event.buffer);
    event[0] = 5;
    event[1] = buttons & 0xff;
    view.setUint16(2, clamp(x, this.width));
    view.setUint16(4, clamp(y, this.height));
    return this.#serial(() => writeAll(this.#conn, event));
  }

  /**
   * Sends a key event.
   *
   * @param keysym The X keysym.
   * @param down Pressed or released.
   */
  key(keysym: number, down: boolean): Promise<void> {
    const event = new Uint8Array(8);
    event[0] = 4;
    event[1] = down ? 1 : 0;
    new DataView(event.buffer).setUint32(4, keysym);
    return this.#serial(() => writeAll(this.#conn, event));
  }

  /** Closes the connection. */
  close(): void {
    try {
      this.#conn.close();
    } catch {
      // closed already
    }
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn);
    this.#queue = run.catch(() => {});
    return run;
  }

  /** Reads one server message; true when it was a framebuffer update. */
  async #readMessage(): Promise<boolean> {
    const type = await this.#reader.u8();
    if (type === 0) {
      await this.#reader.read(1);
      const rects = await this.#reader.u16();
      for (let i = 0; i < rects; i++) await this.#readRect();
      return true;
    }
    if (type === 1) { // SetColourMapEntries: not used with true colour
      await this.#reader.read(3);
      await this.#reader.read((await this.#reader.u16()) * 6);
      return false;
    }
    if (type === 2) return false; // Bell
    if (type === 3) { // ServerCutText
      await this.#reader.read(3);
      await this.#reader.text(MAX_TEXT, "cut text");
      return false;
    }
    throw new Error(
      `The VNC server sent message type ${type}, which this client does not read`,
    );
  }

  async #readRect(): Promise<void> {
    const head = await this.#reader.read(12);
    const view = new DataView(head.buffer, head.byteOffset, 12);
    const x = view.getUint16(0), y = view.getUint16(2);
    const w = view.getUint16(4), h = view.getUint16(6);
    const encoding = view.getInt32(8);
    if (encoding !== 0) {
      throw new Error(
        `The VNC server sent encoding ${encoding}; only Raw was asked for`,
      );
    }
    if (x + w > this.width || y + h > this.height) {
      throw new Error(`The VNC server sent a rectangle outside the screen`);
    }
    const data = await this.#reader.read(w * h * 4);
    for (let row = 0; row < h; row++) {
      this.pixels.set(
        data.subarray(row * w * 4, (row + 1) * w * 4),
        ((y + row) * this.width + x) * 4,
      );
    }
  }
}

function clamp(value: number, limit: number): number {
  return Math.max(0, Math.min(limit - 1, Math.round(value)));
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

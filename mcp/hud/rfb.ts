/**
 * A minimal RFB (VNC, protocol 3.8, RFC 6143) client for HUD's `rfb`
 * capability: the handshake with security type None, a 32-bit true-colour
 * pixel format, Raw-encoded framebuffer updates, pointer and key events;
 * and {@linkcode RfbExecutor}, which lets the `computer` tool of
 * `@org/mcpkit/tools` drive a screen over it.
 *
 * Everything the server sends is bounded: a screen up to 8192×8192, update
 * rectangles inside it, names and cut text capped.
 *
 * @module
 */
import type { Executor, MouseButton, Point } from "../../tools/executor.ts";
import { keysyms } from "../../tools/keys.ts";
import { encodePng, type Size } from "../../tools/png.ts";
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

const BUTTONS: Record<MouseButton, number> = { left: 1, middle: 2, right: 4 };

const KEYSYMS: Record<string, number> = {
  ctrl: 0xffe3,
  shift: 0xffe1,
  alt: 0xffe9,
  super: 0xffeb,
  Return: 0xff0d,
  Escape: 0xff1b,
  Tab: 0xff09,
  space: 0x20,
  BackSpace: 0xff08,
  Delete: 0xffff,
  Insert: 0xff63,
  Up: 0xff52,
  Down: 0xff54,
  Left: 0xff51,
  Right: 0xff53,
  Page_Up: 0xff55,
  Page_Down: 0xff56,
  Home: 0xff50,
  End: 0xff57,
  Caps_Lock: 0xffe5,
  Print: 0xff61,
  Menu: 0xff67,
  Pause: 0xff13,
  Num_Lock: 0xff7f,
  Scroll_Lock: 0xff14,
  KP_Add: 0xffab,
  KP_Subtract: 0xffad,
  KP_Multiply: 0xffaa,
  KP_Divide: 0xffaf,
  KP_Decimal: 0xffae,
  XF86AudioMute: 0x1008ff12,
  XF86AudioRaiseVolume: 0x1008ff13,
  XF86AudioLowerVolume: 0x1008ff11,
};
for (let n = 1; n <= 24; n++) KEYSYMS[`F${n}`] = 0xffbe + n - 1;
for (let n = 0; n <= 9; n++) KEYSYMS[`KP_${n}`] = 0xffb0 + n;
// X's names of the printable ASCII characters that are not their own name.
const ASCII_NAMES = [
  "exclam",
  "quotedbl",
  "numbersign",
  "dollar",
  "percent",
  "ampersand",
  "apostrophe",
  "parenleft",
  "parenright",
  "asterisk",
  "plus",
  "comma",
  "minus",
  "period",
  "slash",
];
ASCII_NAMES.forEach((name, i) => KEYSYMS[name] = 0x21 + i);
for (
  const [name, code] of Object.entries({
    colon: 0x3a,
    semicolon: 0x3b,
    less: 0x3c,
    equal: 0x3d,
    greater: 0x3e,
    question: 0x3f,
    at: 0x40,
    bracketleft: 0x5b,
    backslash: 0x5c,
    bracketright: 0x5d,
    asciicircum: 0x5e,
    underscore: 0x5f,
    grave: 0x60,
    braceleft: 0x7b,
    bar: 0x7c,
    braceright: 0x7d,
    asciitilde: 0x7e,
  })
) KEYSYMS[name] = code;

/**
 * The X keysym of a key name (`ctrl`, `Return`, `a`, `comma`) or a character.
 *
 * @param name A name as `keysyms()` gives it, or one character.
 * @returns The keysym.
 * @throws {RangeError} For a name without one.
 */
export function keysymCode(name: string): number {
  if (Object.hasOwn(KEYSYMS, name)) return KEYSYMS[name];
  const chars = [...name];
  if (chars.length === 1) {
    const code = chars[0].codePointAt(0)!;
    if (code === 0x0a) return KEYSYMS.Return;
    if (code === 0x09) return KEYSYMS.Tab;
    // Latin-1 keysyms are the code point; the rest are 0x01000000 + it.
    return code >= 0x20 && code <= 0xff ? code : 0x01000000 + code;
  }
  throw new RangeError(`Cannot press "${name}": no X keysym of that name`);
}

/**
 * An `Executor` (`@org/mcpkit/tools`) over an RFB connection, so the
 * `computer` tool drives a VNC screen: what a harness needs to act on a
 * HUD `rfb` capability.
 */
export class RfbExecutor implements Executor {
  readonly #rfb: RfbClient;
  #cursor: Point = { x: 0, y: 0 };

  /**
   * Creates the executor.
   *
   * @param rfb A connected client.
   */
  constructor(rfb: RfbClient) {
    this.#rfb = rfb;
  }

  /** The screen's size. */
  screenSize(): Promise<Size> {
    return Promise.resolve({
      width: this.#rfb.width,
      height: this.#rfb.height,
    });
  }

  /** Moves there and clicks `count` times. */
  async click(at: Point, button: MouseButton, count: number): Promise<void> {
    await this.move(at);
    for (let i = 0; i < count; i++) {
      await this.#rfb.pointer(at.x, at.y, BUTTONS[button]);
      await this.#rfb.pointer(at.x, at.y, 0);
    }
  }

  /** Moves the pointer. */
  async move(to: Point): Promise<void> {
    this.#cursor = { ...to };
    await this.#rfb.pointer(to.x, to.y, 0);
  }

  /** Presses at the first point, moves through the rest, releases at the last. */
  async drag(path: readonly Point[]): Promise<void> {
    await this.move(path[0]);
    for (const point of path) await this.#rfb.pointer(point.x, point.y, 1);
    const last = path[path.length - 1];
    this.#cursor = { ...last };
    await this.#rfb.pointer(last.x, last.y, 0);
  }

  /** Turns the wheel: buttons 4/5 (up/down) and 6/7 (left/right), one press a click. */
  async scroll(at: Point | undefined, dx: number, dy: number): Promise<void> {
    if (at) await this.move(at);
    const { x, y } = this.#cursor;
    const turns: [number, number][] = [
      [dy < 0 ? 8 : 16, Math.abs(dy)],
      [dx < 0 ? 32 : 64, Math.abs(dx)],
    ];
    for (const [mask, clicks] of turns) {
      for (let i = 0; i < clicks; i++) {
        await this.#rfb.pointer(x, y, mask);
        await this.#rfb.pointer(x, y, 0);
      }
    }
  }

  /** Types each character as a key press. */
  async type(text: string): Promise<void> {
    for (const char of text) {
      const code = keysymCode(char);
      await this.#rfb.key(code, true);
      await this.#rfb.key(code, false);
    }
  }

  /** Presses a combination, releases it in reverse. */
  async key(keys: readonly string[]): Promise<void> {
    const codes = keysyms(keys).map(keysymCode);
    for (const code of codes) await this.#rfb.key(code, true);
    for (const code of codes.toReversed()) await this.#rfb.key(code, false);
  }

  /** Holds keys down for `durationMs`. */
  async holdKey(keys: readonly string[], durationMs: number): Promise<void> {
    const codes = keysyms(keys).map(keysymCode);
    for (const code of codes) await this.#rfb.key(code, true);
    await new Promise((resolve) => setTimeout(resolve, durationMs));
    for (const code of codes.toReversed()) await this.#rfb.key(code, false);
  }

  /** Where this executor last put the pointer. */
  cursorPosition(): Promise<Point> {
    return Promise.resolve({ ...this.#cursor });
  }

  /** The whole screen, scaled (nearest pixel) to `size`, as PNG. */
  async screenshot(size: Size): Promise<Uint8Array> {
    const pixels = await this.#rfb.refresh();
    const { width, height } = this.#rfb;
    return await encodePng(size, {
      pixel: (x, y) => {
        const sx = Math.min(width - 1, Math.floor(x * width / size.width));
        const sy = Math.min(height - 1, Math.floor(y * height / size.height));
        const at = (sy * width + sx) * 4;
        return [pixels[at], pixels[at + 1], pixels[at + 2]];
      },
    });
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

/**
 * {@linkcode RfbExecutor}: an `Executor` of `@org/mcpkit/tools` over an RFB
 * connection, so the `computer` tool drives a VNC screen, and the X keysyms
 * its key presses send.
 *
 * @module
 */
import type {
  Executor,
  MouseButton,
  Point,
  Region,
} from "../../tools/executor.ts";
import { keysyms } from "../../tools/keys.ts";
import { encodePng, type Size } from "../../tools/png.ts";
import type { RfbClient } from "./rfb.ts";

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

  /** Presses keys and keeps them down. */
  async keysDown(keys: readonly string[]): Promise<void> {
    for (const code of keysyms(keys).map(keysymCode)) {
      await this.#rfb.key(code, true);
    }
  }

  /** Releases held keys, in reverse. */
  async keysUp(keys: readonly string[]): Promise<void> {
    for (const code of keysyms(keys).map(keysymCode).toReversed()) {
      await this.#rfb.key(code, false);
    }
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
    return await this.screenshotRegion(
      { x: 0, y: 0, width: this.#rfb.width, height: this.#rfb.height },
      size,
    );
  }

  /** A region of the screen (the `computer` tool's `zoom`), scaled (nearest pixel) to `size`, as PNG. */
  async screenshotRegion(region: Region, size: Size): Promise<Uint8Array> {
    const pixels = await this.#rfb.refresh();
    const { width, height } = this.#rfb;
    return await encodePng(size, {
      pixel: (x, y) => {
        const sx = Math.min(
          width - 1,
          region.x + Math.floor(x * region.width / size.width),
        );
        const sy = Math.min(
          height - 1,
          region.y + Math.floor(y * region.height / size.height),
        );
        const at = (sy * width + sx) * 4;
        return [pixels[at], pixels[at + 1], pixels[at + 2]];
      },
    });
  }
}

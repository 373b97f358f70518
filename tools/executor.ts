/**
 * The {@linkcode Executor} interface the `computer` tool drives, and
 * {@linkcode RecordingExecutor}: an in-process screen that records every
 * action and answers screenshots with a real PNG, for unit tests.
 *
 * Executors work in real screen pixels and take keys as xdotool keysym names
 * (see `keys.ts`); the `computer` tool does the scaling and key aliases.
 *
 * @module
 */
import { encodePng, type Rgb, type Size } from "./png.ts";

export type { Size } from "./png.ts";

/** A point in screen pixels. */
export interface Point {
  /** Pixels from the left edge. */
  x: number;
  /** Pixels from the top edge. */
  y: number;
}

/** A rectangle of the screen: its top-left corner and its size, pixels. */
export interface Region {
  /** Pixels from the left edge to its left side. */
  x: number;
  /** Pixels from the top edge to its top side. */
  y: number;
  /** Its width (at least 1). */
  width: number;
  /** Its height (at least 1). */
  height: number;
}

/** A mouse button. */
export type MouseButton = "left" | "right" | "middle";

/** What a real screen does; every coordinate is in real screen pixels. */
export interface Executor {
  /**
   * The real screen's size.
   *
   * @returns Width and height in pixels.
   */
  screenSize(): Promise<Size>;
  /**
   * Moves the pointer to a point and clicks there.
   *
   * @param at Where.
   * @param button Which button.
   * @param count 1, 2 or 3 clicks.
   */
  click(at: Point, button: MouseButton, count: number): Promise<void>;
  /**
   * Moves the pointer.
   *
   * @param to Where.
   */
  move(to: Point): Promise<void>;
  /**
   * Presses the left button at the first point, moves through the others and
   * releases at the last.
   *
   * @param path Two or more points.
   */
  drag(path: readonly Point[]): Promise<void>;
  /**
   * Turns the wheel, at a point or where the pointer is.
   *
   * @param at Where to scroll, or `undefined` for the pointer's place.
   * @param dx Wheel clicks right (negative: left).
   * @param dy Wheel clicks down (negative: up).
   */
  scroll(at: Point | undefined, dx: number, dy: number): Promise<void>;
  /**
   * Types text as keystrokes.
   *
   * @param text The text.
   */
  type(text: string): Promise<void>;
  /**
   * Presses a key combination (all together, released in reverse).
   *
   * @param keys Keysym names, e.g. `["ctrl", "a"]`.
   */
  key(keys: readonly string[]): Promise<void>;
  /**
   * Holds keys down for a while, then releases them.
   *
   * @param keys Keysym names.
   * @param durationMs How long.
   */
  holdKey(keys: readonly string[], durationMs: number): Promise<void>;
  /**
   * Where the pointer is.
   *
   * @returns The point.
   */
  cursorPosition(): Promise<Point>;
  /**
   * A screenshot of the whole screen, scaled to `size`.
   *
   * @param size The picture's size (the agent's screen).
   * @returns PNG bytes.
   */
  screenshot(size: Size): Promise<Uint8Array>;
  /**
   * A picture of one region of the screen, scaled to `size` (the `computer`
   * tool's `zoom`). Optional: without it, `zoom` answers that this screen
   * cannot zoom.
   *
   * @param region The region, in real pixels, inside the screen.
   * @param size The picture's size.
   * @returns PNG bytes.
   */
  screenshotRegion?(region: Region, size: Size): Promise<Uint8Array>;
  /**
   * Presses keys and keeps them down (a click with a modifier held).
   * Optional, with {@linkcode Executor.keysUp}: without them an action with
   * `hold_keys` answers that this screen cannot hold keys.
   *
   * @param keys Keysym names.
   */
  keysDown?(keys: readonly string[]): Promise<void>;
  /**
   * Releases keys {@linkcode Executor.keysDown} pressed, in reverse.
   *
   * @param keys Keysym names.
   */
  keysUp?(keys: readonly string[]): Promise<void>;
}

/** One action a {@linkcode RecordingExecutor} saw, in real pixels. */
export type RecordedAction =
  | { action: "click"; at: Point; button: MouseButton; count: number }
  | { action: "move"; to: Point }
  | { action: "drag"; path: Point[] }
  | { action: "scroll"; at?: Point; dx: number; dy: number }
  | { action: "type"; text: string }
  | { action: "key"; keys: string[] }
  | { action: "hold_key"; keys: string[]; durationMs: number }
  | { action: "screenshot"; size: Size }
  | { action: "zoom"; region: Region; size: Size }
  | { action: "keys_down" | "keys_up"; keys: string[] };

/** Options of {@linkcode RecordingExecutor}. */
export interface RecordingExecutorOptions {
  /** The pretend screen's size (default 1280×800). */
  size?: Size;
  /** Colour of the screenshots (default light grey). */
  fill?: Rgb;
}

/**
 * An executor without a screen: it records what it is asked to do, tracks the
 * pointer, and answers screenshots with a PNG of the requested size. Holding
 * keys does not wait.
 *
 * @example
 * ```ts
 * import { RecordingExecutor } from "./executor.ts";
 * const screen = new RecordingExecutor({ size: { width: 1000, height: 500 } });
 * await screen.click({ x: 10, y: 20 }, "left", 1);
 * screen.actions; // [{ action: "click", at: { x: 10, y: 20 }, button: "left", count: 1 }]
 * ```
 */
export class RecordingExecutor implements Executor {
  /** Every action so far, oldest first. */
  readonly actions: RecordedAction[] = [];
  readonly #size: Size;
  readonly #fill: Rgb;
  #pointer: Point;

  /**
   * Creates the executor.
   *
   * @param options Screen size and screenshot colour.
   */
  constructor(options: RecordingExecutorOptions = {}) {
    this.#size = options.size ?? { width: 1280, height: 800 };
    this.#fill = options.fill ?? [230, 230, 230];
    this.#pointer = {
      x: Math.floor(this.#size.width / 2),
      y: Math.floor(this.#size.height / 2),
    };
  }

  /**
   * The pretend screen's size.
   *
   * @returns Width and height.
   */
  screenSize(): Promise<Size> {
    return Promise.resolve({ ...this.#size });
  }

  /** Records a click and moves the pointer there. */
  click(at: Point, button: MouseButton, count: number): Promise<void> {
    this.#pointer = { ...at };
    this.actions.push({ action: "click", at: { ...at }, button, count });
    return Promise.resolve();
  }

  /** Records a move. */
  move(to: Point): Promise<void> {
    this.#pointer = { ...to };
    this.actions.push({ action: "move", to: { ...to } });
    return Promise.resolve();
  }

  /** Records a drag; the pointer ends at its last point. */
  drag(path: readonly Point[]): Promise<void> {
    this.#pointer = { ...path[path.length - 1] };
    this.actions.push({ action: "drag", path: path.map((p) => ({ ...p })) });
    return Promise.resolve();
  }

  /** Records a scroll. */
  scroll(at: Point | undefined, dx: number, dy: number): Promise<void> {
    if (at) this.#pointer = { ...at };
    this.actions.push({
      action: "scroll",
      ...(at && { at: { ...at } }),
      dx,
      dy,
    });
    return Promise.resolve();
  }

  /** Records typed text. */
  type(text: string): Promise<void> {
    this.actions.push({ action: "type", text });
    return Promise.resolve();
  }

  /** Records a key combination. */
  key(keys: readonly string[]): Promise<void> {
    this.actions.push({ action: "key", keys: [...keys] });
    return Promise.resolve();
  }

  /** Records held keys (without waiting). */
  holdKey(keys: readonly string[], durationMs: number): Promise<void> {
    this.actions.push({ action: "hold_key", keys: [...keys], durationMs });
    return Promise.resolve();
  }

  /**
   * The pointer's last position.
   *
   * @returns The point.
   */
  cursorPosition(): Promise<Point> {
    return Promise.resolve({ ...this.#pointer });
  }

  /** Records the request and answers with a one-colour PNG of `size`. */
  screenshot(size: Size): Promise<Uint8Array> {
    this.actions.push({ action: "screenshot", size: { ...size } });
    return encodePng(size, { fill: this.#fill });
  }

  /** Records keys pressed and held. */
  keysDown(keys: readonly string[]): Promise<void> {
    this.actions.push({ action: "keys_down", keys: [...keys] });
    return Promise.resolve();
  }

  /** Records held keys released. */
  keysUp(keys: readonly string[]): Promise<void> {
    this.actions.push({ action: "keys_up", keys: [...keys] });
    return Promise.resolve();
  }

  /** Records the region and answers with a one-colour PNG of `size`. */
  screenshotRegion(region: Region, size: Size): Promise<Uint8Array> {
    this.actions.push({
      action: "zoom",
      region: { ...region },
      size: { ...size },
    });
    return encodePng(size, { fill: this.#fill });
  }
}

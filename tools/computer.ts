/**
 * The `computer` tool: screenshots, mouse and keyboard for an agent, in the
 * screen size the agent was told, on top of an {@linkcode Executor}.
 *
 * @module
 */
import { z } from "zod";
import { BaseTool, type ToolExtra } from "../mcp/mod.ts";
import type { CallToolResult } from "@modelcontextprotocol/server";
import type { Executor, MouseButton, Point, Size } from "./executor.ts";
import { keysyms } from "./keys.ts";
import { pngSize } from "./png.ts";

/** The agent's screen when the client names none (the MCP description's fallback). */
export const DEFAULT_AGENT_SIZE: Readonly<Size> = Object.freeze({
  width: 1920,
  height: 1080,
});

/** The actions of the `computer` tool. */
export const COMPUTER_ACTIONS = [
  "screenshot",
  "click",
  "double_click",
  "triple_click",
  "move",
  "drag",
  "scroll",
  "type",
  "key",
  "hold_key",
  "wait",
  "cursor_position",
] as const;

/** One of {@linkcode COMPUTER_ACTIONS}. */
export type ComputerAction = typeof COMPUTER_ACTIONS[number];

const MAX_SIDE = 8192;
const MAX_TEXT = 10_000;
const MAX_SCROLL = 50;
const MAX_PATH = 100;

const point = z.object({ x: z.number(), y: z.number() });

/** The `computer` tool's input shape (zod). */
export type ComputerInputShape = {
  /** What to do. */
  action: z.ZodEnum<{ [A in ComputerAction]: A }>;
  /** Agent pixels from the left. */
  x: z.ZodOptional<z.ZodNumber>;
  /** Agent pixels from the top. */
  y: z.ZodOptional<z.ZodNumber>;
  /** Mouse button of a click. */
  button: z.ZodOptional<
    z.ZodEnum<{ left: "left"; right: "right"; middle: "middle" }>
  >;
  /** A drag's points. */
  path: z.ZodOptional<
    z.ZodArray<z.ZodObject<{ x: z.ZodNumber; y: z.ZodNumber }>>
  >;
  /** Wheel clicks to the right. */
  scroll_x: z.ZodOptional<z.ZodNumber>;
  /** Wheel clicks down. */
  scroll_y: z.ZodOptional<z.ZodNumber>;
  /** Text to type. */
  text: z.ZodOptional<z.ZodString>;
  /** One key combination. */
  keys: z.ZodOptional<z.ZodArray<z.ZodString>>;
  /** How long to wait or hold. */
  duration_ms: z.ZodOptional<z.ZodNumber>;
  /** Whether to answer with a screenshot. */
  screenshot: z.ZodOptional<z.ZodBoolean>;
};

const INPUT: ComputerInputShape = {
  action: z.enum(COMPUTER_ACTIONS).describe("What to do"),
  x: z.number().optional().describe(
    "Pixels from the left (click, double_click, triple_click, move, scroll)",
  ),
  y: z.number().optional().describe(
    "Pixels from the top (click, double_click, triple_click, move, scroll)",
  ),
  button: z.enum(["left", "right", "middle"]).optional().describe(
    "Mouse button for clicks (default left)",
  ),
  path: z.array(point).optional().describe(
    "Drag: two or more points [{x, y}, …], pressed at the first, released at the last",
  ),
  scroll_x: z.number().int().optional().describe(
    "Scroll: wheel clicks to the right (negative: left)",
  ),
  scroll_y: z.number().int().optional().describe(
    "Scroll: wheel clicks down (negative: up)",
  ),
  text: z.string().optional().describe("Type: the text to type"),
  keys: z.array(z.string()).optional().describe(
    'Key / hold_key: one combination pressed together, e.g. ["ctrl", "a"] or ["Return"]',
  ),
  duration_ms: z.number().optional().describe(
    "Wait / hold_key: how long, in milliseconds (at most 30 000)",
  ),
  screenshot: z.boolean().optional().describe(
    "Answer with a screenshot after the action (default true)",
  ),
};

/** The `computer` tool's parsed input. */
export type ComputerInput = z.output<z.ZodObject<ComputerInputShape>>;

/** The agent-size keys of an initialize request's `_meta`. */
export interface DisplayMeta {
  /** The agent's screen width in pixels. */
  display_width?: unknown;
  /** The agent's screen height in pixels. */
  display_height?: unknown;
}

/** Options of {@linkcode ComputerTool}. */
export interface ComputerToolOptions {
  /** What carries the actions out on the real screen. */
  executor: Executor;
  /** Tool name (default `computer`). */
  name?: string;
  /** Pause after an action before its screenshot, so the screen can redraw (ms, default 150). */
  settleMs?: number;
  /** The longest `wait` or `hold_key` (ms, default 30 000). */
  maxDurationMs?: number;
}

function sideFrom(value: unknown, name: string, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  const number = typeof value === "string" ? Number(value) : value;
  if (
    typeof number !== "number" || !Number.isInteger(number) || number < 1 ||
    number > MAX_SIDE
  ) {
    throw new RangeError(
      `Cannot use ${name} ${
        JSON.stringify(value)
      }: expected an integer from 1 to ${MAX_SIDE}`,
    );
  }
  return number;
}

/**
 * The agent's screen size from an initialize request's `_meta`: each of
 * `display_width` and `display_height` that is missing falls back to
 * 1920×1080's.
 *
 * @param meta The `_meta` (`ctx.meta` of an initialize hook), possibly absent.
 * @returns The size.
 * @throws {RangeError} When a value is not an integer from 1 to 8192.
 * @example
 * ```ts
 * import { agentSize } from "./computer.ts";
 * agentSize({ display_width: 1280, display_height: 800 }); // { width: 1280, height: 800 }
 * agentSize(undefined); // { width: 1920, height: 1080 }
 * ```
 */
export function agentSize(meta: DisplayMeta | undefined): Size {
  return {
    width: sideFrom(
      meta?.display_width,
      "display_width",
      DEFAULT_AGENT_SIZE.width,
    ),
    height: sideFrom(
      meta?.display_height,
      "display_height",
      DEFAULT_AGENT_SIZE.height,
    ),
  };
}

/**
 * Maps a coordinate between two sizes of the same screen, pixel centre to
 * pixel centre, so every pixel of one lands inside the other.
 *
 * @param value The coordinate in `from` pixels.
 * @param from The side's length it is measured in.
 * @param to The side's length to convert to.
 * @returns The coordinate in `to` pixels, from 0 to `to - 1`.
 * @example
 * ```ts
 * import { scaleCoordinate } from "./computer.ts";
 * scaleCoordinate(640, 1280, 1920); // 960
 * scaleCoordinate(1279, 1280, 1920); // 1919
 * ```
 */
export function scaleCoordinate(
  value: number,
  from: number,
  to: number,
): number {
  const scaled = Math.floor((value + 0.5) * to / from);
  return Math.min(to - 1, Math.max(0, scaled));
}

/**
 * The `computer` tool: the actions of {@linkcode COMPUTER_ACTIONS} in agent
 * coordinates, each answered with a text item and (unless `screenshot:
 * false`) a PNG screenshot the size of the agent's screen.
 *
 * The agent's size comes from the client: call {@linkcode ComputerTool.configure}
 * with the initialize request's `_meta` from an initialize hook. Until then,
 * and without `display_width`/`display_height`, it is 1920×1080.
 *
 * @example A computer-use environment on a real display
 * ```ts ignore
 * import { MCPServer } from "@org/mcpkit/mcp";
 * import { ComputerTool, startXvfb, X11Executor } from "@org/mcpkit/tools";
 *
 * const xvfb = await startXvfb({ width: 1280, height: 800 });
 * const computer = new ComputerTool({ executor: new X11Executor({ display: xvfb.display }) });
 * const mcp = new MCPServer({ name: "desktop" });
 * mcp.addTool(computer);
 * mcp.initialize((ctx) => computer.configure(ctx.meta));
 * mcp.shutdown(() => xvfb.close());
 * ```
 */
export class ComputerTool extends BaseTool<ComputerInputShape> {
  /** What the tool does, for the agent. */
  override description: string =
    "Use the computer's screen, mouse and keyboard. Coordinates are pixels of the " +
    "screen size you were told, from the top-left corner. Every action answers with " +
    "a screenshot unless screenshot is false.";
  /** The input shape: the action and its arguments. */
  override input: ComputerInputShape = INPUT;
  /** What carries the actions out. */
  readonly executor: Executor;
  readonly #settleMs: number;
  readonly #maxDurationMs: number;
  #agent: Size = { ...DEFAULT_AGENT_SIZE };

  /**
   * Creates the tool.
   *
   * @param options The executor, and optionally name, settle time and longest wait.
   */
  constructor(options: ComputerToolOptions) {
    super();
    this.name = options.name ?? "computer";
    this.executor = options.executor;
    this.#settleMs = options.settleMs ?? 150;
    this.#maxDurationMs = options.maxDurationMs ?? 30_000;
  }

  /** The agent's screen size: the one coordinates and screenshots are in. */
  get agentSize(): Size {
    return { ...this.#agent };
  }

  /**
   * Sets the agent's screen size from an initialize request's `_meta`
   * (`display_width`, `display_height`; 1920×1080 for what is missing).
   * Call it from an initialize hook: `mcp.initialize((ctx) =>
   * computer.configure(ctx.meta))`.
   *
   * @param meta The `_meta`, possibly absent.
   * @throws {RangeError} When a value is not an integer from 1 to 8192.
   */
  configure(meta: DisplayMeta | undefined): void {
    this.#agent = agentSize(meta);
  }

  /**
   * Converts a point on the real screen to the agent's coordinates.
   *
   * @param point A point in real pixels.
   * @returns The point in agent pixels.
   */
  async toAgent(point: Point): Promise<Point> {
    const real = await this.executor.screenSize();
    return {
      x: scaleCoordinate(point.x, real.width, this.#agent.width),
      y: scaleCoordinate(point.y, real.height, this.#agent.height),
    };
  }

  /**
   * Converts a point in the agent's coordinates to the real screen's.
   *
   * @param point A point in agent pixels.
   * @returns The point in real pixels.
   */
  async toReal(point: Point): Promise<Point> {
    const real = await this.executor.screenSize();
    return {
      x: scaleCoordinate(point.x, this.#agent.width, real.width),
      y: scaleCoordinate(point.y, this.#agent.height, real.height),
    };
  }

  /**
   * Runs one action.
   *
   * @param input The action and its arguments.
   * @param extra The request context (its signal cuts `wait` short).
   * @returns Text, then a screenshot unless `screenshot: false`; `isError` with one line on bad input or a failed action.
   */
  async call(input: ComputerInput, extra?: ToolExtra): Promise<CallToolResult> {
    let text: string;
    let structured: Record<string, unknown> | undefined;
    try {
      const done = await this.#act(input, extra?.signal);
      text = done.text;
      structured = done.structured;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { content: [{ type: "text", text: message }], isError: true };
    }
    const content: CallToolResult["content"] = [{ type: "text", text }];
    if (input.screenshot !== false || input.action === "screenshot") {
      if (input.action !== "screenshot" && this.#settleMs > 0) {
        await new Promise((resolve) => setTimeout(resolve, this.#settleMs));
      }
      try {
        content.push(await this.#screenshot());
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        return {
          content: [{
            type: "text",
            text: input.action === "screenshot"
              ? message
              : `${text}, but the screenshot after it failed: ${message}`,
          }],
          isError: true,
        };
      }
    }
    return structured
      ? { content, structuredContent: structured }
      : { content };
  }

  async #screenshot(): Promise<CallToolResult["content"][number]> {
    const size = this.agentSize;
    const png = await this.executor.screenshot(size);
    const got = pngSize(png);
    if (!got || got.width !== size.width || got.height !== size.height) {
      throw new Error(
        `The executor answered ${
          got
            ? `a ${got.width}x${got.height} PNG`
            : "something that is not a PNG"
        } instead of ${size.width}x${size.height}`,
      );
    }
    return {
      type: "image",
      mimeType: "image/png",
      data: base64(png),
    };
  }

  #point(x: number | undefined, y: number | undefined, action: string): Point {
    if (x === undefined || y === undefined) {
      throw new RangeError(`Action "${action}" needs x and y`);
    }
    return this.#inside({ x, y });
  }

  #inside(point: { x: number; y: number }): Point {
    const { width, height } = this.#agent;
    const x = Math.round(point.x);
    const y = Math.round(point.y);
    if (
      !Number.isFinite(x) || !Number.isFinite(y) || x < 0 || y < 0 ||
      x >= width || y >= height
    ) {
      throw new RangeError(
        `Coordinate (${point.x}, ${point.y}) is outside the ${width}x${height} screen`,
      );
    }
    return { x, y };
  }

  #duration(value: number | undefined, action: string): number {
    if (value === undefined) {
      throw new RangeError(`Action "${action}" needs duration_ms`);
    }
    if (!Number.isFinite(value) || value < 0 || value > this.#maxDurationMs) {
      throw new RangeError(
        `duration_ms must be from 0 to ${this.#maxDurationMs}, got ${value}`,
      );
    }
    return Math.round(value);
  }

  #keys(keys: string[] | undefined, action: string): string[] {
    if (!keys || keys.length === 0) {
      throw new RangeError(`Action "${action}" needs keys, e.g. ["ctrl", "a"]`);
    }
    return keysyms(keys);
  }

  async #act(
    input: ComputerInput,
    signal: AbortSignal | undefined,
  ): Promise<{ text: string; structured?: Record<string, unknown> }> {
    const { action } = input;
    switch (action) {
      case "screenshot":
        return { text: "Took a screenshot" };
      case "click":
      case "double_click":
      case "triple_click": {
        const at = this.#point(input.x, input.y, action);
        const button: MouseButton = input.button ?? "left";
        const count = action === "click"
          ? 1
          : action === "double_click"
          ? 2
          : 3;
        await this.executor.click(await this.toReal(at), button, count);
        const what = count === 1
          ? "Clicked"
          : count === 2
          ? "Double-clicked"
          : "Triple-clicked";
        return { text: `${what} ${button} at (${at.x}, ${at.y})` };
      }
      case "move": {
        const to = this.#point(input.x, input.y, action);
        await this.executor.move(await this.toReal(to));
        return { text: `Moved the pointer to (${to.x}, ${to.y})` };
      }
      case "drag": {
        const path = input.path;
        if (!path || path.length < 2 || path.length > MAX_PATH) {
          throw new RangeError(
            `Action "drag" needs a path of 2 to ${MAX_PATH} points [{x, y}, …]`,
          );
        }
        const points = path.map((p) => this.#inside(p));
        const real = [];
        for (const p of points) real.push(await this.toReal(p));
        await this.executor.drag(real);
        const first = points[0];
        const last = points[points.length - 1];
        return {
          text:
            `Dragged from (${first.x}, ${first.y}) to (${last.x}, ${last.y})`,
        };
      }
      case "scroll": {
        const dx = input.scroll_x ?? 0;
        const dy = input.scroll_y ?? 0;
        if (dx === 0 && dy === 0) {
          throw new RangeError(`Action "scroll" needs scroll_x or scroll_y`);
        }
        if (Math.abs(dx) > MAX_SCROLL || Math.abs(dy) > MAX_SCROLL) {
          throw new RangeError(
            `scroll_x and scroll_y must be from -${MAX_SCROLL} to ${MAX_SCROLL}`,
          );
        }
        const at = input.x === undefined && input.y === undefined
          ? undefined
          : this.#point(input.x, input.y, action);
        await this.executor.scroll(
          at && await this.toReal(at),
          dx,
          dy,
        );
        return {
          text: `Scrolled ${dx}, ${dy}${at ? ` at (${at.x}, ${at.y})` : ""}`,
        };
      }
      case "type": {
        const text = input.text;
        if (text === undefined || text === "") {
          throw new RangeError(`Action "type" needs text`);
        }
        if (text.length > MAX_TEXT) {
          throw new RangeError(
            `Text to type is ${text.length} characters; at most ${MAX_TEXT}`,
          );
        }
        if (text.includes("\0")) {
          throw new RangeError("Text to type must not contain NUL characters");
        }
        await this.executor.type(text);
        return { text: `Typed ${JSON.stringify(text)}` };
      }
      case "key": {
        const keys = this.#keys(input.keys, action);
        await this.executor.key(keys);
        return { text: `Pressed ${keys.join("+")}` };
      }
      case "hold_key": {
        const keys = this.#keys(input.keys, action);
        const duration = this.#duration(input.duration_ms, action);
        await this.executor.holdKey(keys, duration);
        return { text: `Held ${keys.join("+")} for ${duration} ms` };
      }
      case "wait": {
        const duration = this.#duration(input.duration_ms, action);
        await sleep(duration, signal);
        return { text: `Waited ${duration} ms` };
      }
      case "cursor_position": {
        const at = await this.toAgent(await this.executor.cursorPosition());
        return { text: JSON.stringify(at), structured: { ...at } };
      }
      default:
        throw new RangeError(
          `Unknown action "${action as string}": expected one of ${
            COMPUTER_ACTIONS.join(", ")
          }`,
        );
    }
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error("The wait was cancelled"));
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener("abort", abort);
      resolve();
    }
    function abort() {
      clearTimeout(timer);
      reject(new Error("The wait was cancelled"));
    }
    signal?.addEventListener("abort", abort, { once: true });
  });
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/**
 * The `computer` tool: screenshots, mouse and keyboard for an agent, in the
 * screen size the agent was told (`display.ts`), on top of an
 * {@linkcode Executor}; its input is `computer_input.ts`.
 *
 * @module
 */
import { BaseTool, type ToolExtra } from "../mcp/mod.ts";
import type { CallToolResult } from "@modelcontextprotocol/server";
import type { Executor, MouseButton, Point, Size } from "./executor.ts";
import { keysyms } from "./keys.ts";
import { pngSize } from "./png.ts";
import {
  COMPUTER_ACTIONS,
  COMPUTER_INPUT,
  type ComputerInput,
  type ComputerInputShape,
  MAX_PATH,
  MAX_SCROLL,
  MAX_TEXT,
} from "./computer_input.ts";
import {
  agentSize,
  DEFAULT_AGENT_SIZE,
  type DisplayMeta,
  scaleCoordinate,
  zoomArea,
} from "./display.ts";

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

/**
 * The `computer` tool: the actions of {@linkcode COMPUTER_ACTIONS} in agent
 * coordinates, each answered with a text item and (unless `screenshot:
 * false`) a PNG screenshot the size of the agent's screen; `zoom` answers
 * with a picture of its region instead, enlarged to fit that size.
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
  override input: ComputerInputShape = COMPUTER_INPUT;
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
    let picture: Uint8Array | undefined;
    try {
      const done = await this.#act(input, extra?.signal);
      text = done.text;
      structured = done.structured;
      picture = done.picture;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { content: [{ type: "text", text: message }], isError: true };
    }
    const content: CallToolResult["content"] = [{ type: "text", text }];
    if (picture) {
      content.push({
        type: "image",
        mimeType: "image/png",
        data: base64(picture),
      });
    } else if (input.screenshot !== false || input.action === "screenshot") {
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

  /**
   * Runs a pointer action (its input already checked) with `hold_keys` held
   * down, released even when the action fails; says which keys in the text.
   */
  async #holding(
    keys: string[] | undefined,
    act: () => Promise<{ text: string }>,
  ): Promise<{ text: string }> {
    if (keys === undefined || keys.length === 0) return await act();
    const held = this.#keys(keys, "hold_keys");
    if (!this.executor.keysDown || !this.executor.keysUp) {
      throw new Error("This screen cannot hold keys during an action");
    }
    await this.executor.keysDown(held);
    try {
      const done = await act();
      return { text: `${done.text}, holding ${held.join("+")}` };
    } finally {
      await this.executor.keysUp(held);
    }
  }

  async #act(
    input: ComputerInput,
    signal: AbortSignal | undefined,
  ): Promise<
    {
      text: string;
      structured?: Record<string, unknown>;
      picture?: Uint8Array;
    }
  > {
    const { action } = input;
    switch (action) {
      case "screenshot":
        return { text: "Took a screenshot" };
      case "click":
      case "double_click":
      case "triple_click": {
        const at = this.#point(input.x, input.y, action);
        const button: MouseButton = input.button ?? "left";
        const count = { click: 1, double_click: 2, triple_click: 3 }[action];
        const real = await this.toReal(at);
        return await this.#holding(input.hold_keys, async () => {
          await this.executor.click(real, button, count);
          const what =
            ["Clicked", "Double-clicked", "Triple-clicked"][count - 1];
          return { text: `${what} ${button} at (${at.x}, ${at.y})` };
        });
      }
      case "move": {
        const to = this.#point(input.x, input.y, action);
        const real = await this.toReal(to);
        return await this.#holding(input.hold_keys, async () => {
          await this.executor.move(real);
          return { text: `Moved the pointer to (${to.x}, ${to.y})` };
        });
      }
      case "drag": {
        const path = input.path;
        if (!path || path.length < 2 || path.length > MAX_PATH) {
          throw new RangeError(
            `Action "drag" needs a path of 2 to ${MAX_PATH} points [{x, y}, …]`,
          );
        }
        const points = path.map((p) => this.#inside(p));
        const real: Point[] = [];
        for (const p of points) real.push(await this.toReal(p));
        const [first, last] = [points[0], points[points.length - 1]];
        return await this.#holding(input.hold_keys, async () => {
          await this.executor.drag(real);
          return {
            text:
              `Dragged from (${first.x}, ${first.y}) to (${last.x}, ${last.y})`,
          };
        });
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
        const real = at && await this.toReal(at);
        return await this.#holding(input.hold_keys, async () => {
          await this.executor.scroll(real, dx, dy);
          return {
            text: `Scrolled ${dx}, ${dy}${at ? ` at (${at.x}, ${at.y})` : ""}`,
          };
        });
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
      case "zoom": {
        const { agent, real, size } = zoomArea(
          input.region,
          this.#agent,
          await this.executor.screenSize(),
        );
        if (!this.executor.screenshotRegion) {
          throw new Error("This screen cannot zoom: take a screenshot instead");
        }
        const picture = await this.executor.screenshotRegion(real, size);
        const got = pngSize(picture);
        if (!got || got.width !== size.width || got.height !== size.height) {
          throw new Error(
            `The executor answered a zoom that is not a ${size.width}x${size.height} PNG`,
          );
        }
        return {
          text: `Zoomed into (${agent.x}, ${agent.y})–(${
            agent.x + agent.width
          }, ${agent.y + agent.height}), shown at ${size.width}x${size.height}`,
          picture,
        };
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

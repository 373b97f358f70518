/**
 * What the `computer` tool takes: its actions, the input schema an agent
 * sees, and the limits a call's input is held to.
 *
 * @module
 */
import { z } from "zod";

/**
 * The actions of the `computer` tool.
 *
 * @example
 * ```ts
 * import { COMPUTER_ACTIONS } from "./computer_input.ts";
 *
 * COMPUTER_ACTIONS.includes("click"); // true
 * COMPUTER_ACTIONS.length; // 13
 * ```
 */
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
  "zoom",
] as const;

/** One of {@linkcode COMPUTER_ACTIONS}. */
export type ComputerAction = typeof COMPUTER_ACTIONS[number];

/** Characters one `type` action may type at most. */
export const MAX_TEXT = 10_000;

/** Scroll steps one `scroll` action may take at most, each way. */
export const MAX_SCROLL = 50;

/** Points one `drag` path may have at most. */
export const MAX_PATH = 100;

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
  /** Keys held down during a click, move, drag or scroll. */
  hold_keys: z.ZodOptional<z.ZodArray<z.ZodString>>;
  /** The part of the screen a `zoom` shows. */
  region: z.ZodOptional<
    z.ZodTuple<[z.ZodNumber, z.ZodNumber, z.ZodNumber, z.ZodNumber], null>
  >;
};

/** The `computer` tool's input schema. */
export const COMPUTER_INPUT: ComputerInputShape = {
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
  hold_keys: z.array(z.string()).optional().describe(
    'Clicks, move, drag, scroll: keys held down during the action, e.g. ["shift"] for a shift-click',
  ),
  region: z.tuple([z.number(), z.number(), z.number(), z.number()])
    .optional().describe(
      "Zoom: [x1, y1, x2, y2], the top-left and bottom-right corners of the part of the screen to show enlarged",
    ),
};

/** The `computer` tool's parsed input. */
export type ComputerInput = z.output<z.ZodObject<ComputerInputShape>>;

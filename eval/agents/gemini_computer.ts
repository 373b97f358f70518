/**
 * Gemini's predefined `computerUse` functions as calls of the environment's
 * `computer` tool: the one place the Gemini convention maps actions
 * (coordinates normalised to 0–999 become pixels of the display).
 *
 * @module
 */
import type { DisplaySize } from "../tool_host.ts";
import type { JsonObject } from "./model.ts";
import type { ComputerPlan } from "./tool_gate.ts";

/** Wheel clicks a `scroll_document` turns (about a page). */
const DOCUMENT_SCROLL_CLICKS = 10;
/** Pixels per wheel click of the `computer` tool. */
const PIXELS_PER_WHEEL_CLICK = 100;

const DIRECTIONS: Record<string, [number, number]> = {
  up: [0, -1],
  down: [0, 1],
  left: [-1, 0],
  right: [1, 0],
};

/** The predefined functions of Gemini's `computerUse` tool. */
export const GEMINI_COMPUTER_FUNCTIONS: readonly string[] = [
  "open_web_browser",
  "wait_5_seconds",
  "go_back",
  "go_forward",
  "search",
  "navigate",
  "click_at",
  "hover_at",
  "type_text_at",
  "key_combination",
  "scroll_document",
  "scroll_at",
  "drag_and_drop",
];

/**
 * A coordinate normalised to 0–999 as a pixel of a side `size` long.
 *
 * @param value The normalised coordinate.
 * @param size The side's length, pixels.
 * @returns The pixel, or `undefined` when the value is not a number in 0–999.
 */
export function denormalise(value: unknown, size: number): number | undefined {
  if (typeof value !== "number" || !Number.isFinite(value)) return undefined;
  if (value < 0 || value > 999) return undefined;
  return Math.min(size - 1, Math.round((value / 1000) * size));
}

/**
 * A predefined `computerUse` function call as calls of the environment's
 * `computer` tool: the one place the Gemini convention maps actions.
 *
 * @example
 * ```ts
 * import { geminiComputerPlan } from "./gemini_computer.ts";
 * geminiComputerPlan("click_at", { x: 500, y: 500 }, { width: 1280, height: 800 });
 * // { calls: [{ action: "click", x: 640, y: 400, button: "left" }] }
 * ```
 *
 * @param name The function's name.
 * @param args Its arguments (coordinates 0–999).
 * @param display The screen size, agent pixels.
 * @returns The calls, or an error the model reads.
 */
export function geminiComputerPlan(
  name: string,
  args: JsonObject,
  display: DisplaySize,
): ComputerPlan {
  const at = (xKey = "x", yKey = "y") => {
    const x = denormalise(args[xKey], display.width);
    const y = denormalise(args[yKey], display.height);
    return x === undefined || y === undefined ? undefined : { x, y };
  };
  const point = at();
  if (
    ["click_at", "hover_at", "type_text_at", "scroll_at", "drag_and_drop"]
      .includes(name) && !point
  ) {
    return { error: `${name} needs "x" and "y" between 0 and 999` };
  }
  switch (name) {
    case "open_web_browser":
      return { calls: [{ action: "screenshot" }] };
    case "wait_5_seconds":
      return { calls: [{ action: "wait", duration_ms: 5000 }] };
    case "go_back":
      return { calls: [{ action: "key", keys: ["alt", "left"] }] };
    case "go_forward":
      return { calls: [{ action: "key", keys: ["alt", "right"] }] };
    case "navigate": {
      if (typeof args.url !== "string" || args.url === "") {
        return { error: 'navigate needs a "url"' };
      }
      return {
        calls: [
          { action: "key", keys: ["ctrl", "l"] },
          { action: "type", text: args.url },
          { action: "key", keys: ["enter"] },
        ],
      };
    }
    case "search":
      return {
        error:
          "search is not available here: there is no search engine, only the task's screen",
      };
    case "click_at":
      return { calls: [{ action: "click", ...point, button: "left" }] };
    case "hover_at":
      return { calls: [{ action: "move", ...point }] };
    case "type_text_at": {
      if (typeof args.text !== "string") {
        return { error: 'type_text_at needs "text"' };
      }
      return {
        calls: [
          { action: "click", ...point, button: "left" },
          ...(args.clear_before_typing === false ? [] : [
            { action: "key", keys: ["ctrl", "a"] },
            { action: "key", keys: ["backspace"] },
          ]),
          { action: "type", text: args.text },
          ...(args.press_enter === false
            ? []
            : [{ action: "key", keys: ["enter"] }]),
        ],
      };
    }
    case "key_combination": {
      const keys = typeof args.keys === "string"
        ? args.keys.split("+").map((key) => key.trim()).filter(Boolean)
        : [];
      if (keys.length === 0) {
        return { error: 'key_combination needs "keys", e.g. "Control+A"' };
      }
      return { calls: [{ action: "key", keys }] };
    }
    case "scroll_document":
    case "scroll_at": {
      const direction = Object.hasOwn(DIRECTIONS, String(args.direction))
        ? DIRECTIONS[String(args.direction)]
        : undefined;
      if (!direction) {
        return {
          error: `${name} needs "direction": up, down, left or right`,
        };
      }
      let clicks = DOCUMENT_SCROLL_CLICKS;
      if (name === "scroll_at") {
        const magnitude = typeof args.magnitude === "number" &&
            Number.isFinite(args.magnitude)
          ? Math.min(999, Math.max(0, args.magnitude))
          : 800;
        const side = direction[0] === 0 ? display.height : display.width;
        clicks = Math.max(
          1,
          Math.round((magnitude / 1000) * side / PIXELS_PER_WHEEL_CLICK),
        );
      }
      const where = point ??
        {
          x: Math.floor(display.width / 2),
          y: Math.floor(display.height / 2),
        };
      return {
        calls: [{
          action: "scroll",
          ...where,
          scroll_x: direction[0] * clicks,
          scroll_y: direction[1] * clicks,
        }],
      };
    }
    case "drag_and_drop": {
      const to = at("destination_x", "destination_y");
      if (!to) {
        return {
          error:
            'drag_and_drop needs "destination_x" and "destination_y" between 0 and 999',
        };
      }
      return { calls: [{ action: "drag", path: [point, to] }] };
    }
    default:
      return { error: `Unknown computer function "${name.slice(0, 50)}"` };
  }
}

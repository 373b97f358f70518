/**
 * The OpenAI Responses computer actions (`computer_call.action`, and each
 * of the GA tool's batched `actions`) as calls of the environment's
 * `computer` tool: the one place the Responses convention maps actions.
 *
 * @module
 */
import { isObject } from "./loop.ts";
import type { JsonObject } from "./model.ts";
import { type ComputerPlan, pixel } from "./tool_gate.ts";

/** Pixels of a Responses scroll per wheel click of the `computer` tool. */
const PIXELS_PER_WHEEL_CLICK = 100;

function wheelClicks(pixels: unknown): number {
  const value = typeof pixels === "number" && Number.isFinite(pixels)
    ? pixels
    : 0;
  if (value === 0) return 0;
  return Math.sign(value) *
    Math.max(1, Math.round(Math.abs(value) / PIXELS_PER_WHEEL_CLICK));
}

function point(value: unknown): { x: number; y: number } | undefined {
  if (!isObject(value)) return undefined;
  const x = pixel(value.x);
  const y = pixel(value.y);
  return x === undefined || y === undefined ? undefined : { x, y };
}

/**
 * A Responses `computer_call` action as calls of the environment's
 * `computer` tool: the one place the Responses convention maps actions.
 *
 * @example
 * ```ts
 * import { responsesComputerPlan } from "./responses_computer.ts";
 * responsesComputerPlan({ type: "keypress", keys: ["CTRL", "A"] });
 * // { calls: [{ action: "key", keys: ["CTRL", "A"] }] }
 * ```
 *
 * @param action The call's `action`.
 * @returns The calls, or an error the model reads.
 */
export function responsesComputerPlan(action: JsonObject): ComputerPlan {
  const type = String(action.type ?? "");
  // Beside a keypress, `keys` are held during the action (a shift-click).
  const held = type !== "keypress" && Array.isArray(action.keys)
    ? action.keys.filter((key) => typeof key === "string")
    : [];
  const holding = held.length > 0 ? { hold_keys: held } : {};
  const at = point(action);
  const needsPoint = ["click", "double_click", "move"].includes(type);
  if (needsPoint && !at) return { error: `${type} needs "x" and "y"` };
  switch (type) {
    case "screenshot":
      return { calls: [{ action: "screenshot" }] };
    case "click": {
      const button = String(action.button ?? "left");
      if (button === "back" || button === "forward") {
        const arrow = button === "back" ? "left" : "right";
        return { calls: [{ action: "key", keys: ["alt", arrow] }] };
      }
      const buttons: Record<string, string> = {
        left: "left",
        right: "right",
        middle: "middle",
        wheel: "middle",
      };
      if (!buttons[button]) {
        return { error: `Unknown button "${button.slice(0, 20)}"` };
      }
      return {
        calls: [{
          action: "click",
          ...at,
          button: buttons[button],
          ...holding,
        }],
      };
    }
    case "double_click":
      return { calls: [{ action: "double_click", ...at, ...holding }] };
    case "move":
      return { calls: [{ action: "move", ...at, ...holding }] };
    case "drag": {
      const path = Array.isArray(action.path) ? action.path.map(point) : [];
      if (path.length < 2 || path.some((p) => p === undefined)) {
        return { error: 'drag needs a "path" of at least two {x, y} points' };
      }
      return { calls: [{ action: "drag", path, ...holding }] };
    }
    case "scroll":
      return {
        calls: [{
          action: "scroll",
          ...at,
          scroll_x: wheelClicks(action.scroll_x),
          scroll_y: wheelClicks(action.scroll_y),
          ...holding,
        }],
      };
    case "type":
      if (typeof action.text !== "string") {
        return { error: 'type needs "text"' };
      }
      return { calls: [{ action: "type", text: action.text }] };
    case "keypress": {
      const keys = Array.isArray(action.keys)
        ? action.keys.filter((key) => typeof key === "string")
        : [];
      if (keys.length === 0) return { error: 'keypress needs "keys"' };
      return { calls: [{ action: "key", keys }] };
    }
    case "wait":
      return { calls: [{ action: "wait", duration_ms: 1000 }] };
    default:
      return { error: `Unknown computer action "${type.slice(0, 50)}"` };
  }
}

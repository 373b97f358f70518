/**
 * Claude's native computer actions as calls of the environment's `computer`
 * tool: the one place the Messages convention maps actions. The same inputs
 * arrive two ways: as `{action, ...}` of the `computer_2025…` tool, and as
 * a member `tool_use` of the `computer_toolset_20260801` toolset, named
 * after the action with the rest of the input the same (Anthropic's SDK
 * types `BetaComputer*Input`, e.g. `left_click {coordinate?, text?}`,
 * `zoom {region}`, `key {text, repeat?}`).
 *
 * @module
 */
import type { JsonObject } from "./model.ts";
import { type ComputerPlan, pixel } from "./tool_gate.ts";

/** Key presses one `key` action may repeat at most. */
const MAX_REPEAT = 100;

/** Where Claude's pointer is and, between `left_mouse_down` and `_up`, the path it pressed along. */
export interface ClaudePointer {
  /** The last position an action put the pointer at. */
  at?: { x: number; y: number };
  /** The path since `left_mouse_down`. */
  pressed?: { x: number; y: number }[];
}

const XDOTOOL_KEYS: Record<string, string> = {
  page_up: "pageup",
  prior: "pageup",
  page_down: "pagedown",
  next: "pagedown",
  kp_enter: "enter",
  super_l: "super",
  super_r: "super",
  control_l: "ctrl",
  control_r: "ctrl",
  shift_l: "shift",
  shift_r: "shift",
  alt_l: "alt",
  alt_r: "alt",
  meta_l: "meta",
  meta_r: "meta",
};

/**
 * An xdotool key string (`ctrl+a`, `Return`, `ctrl+a Delete`) as key
 * combinations of the `computer` tool, one per space-separated chord.
 *
 * @param text What Claude sent.
 * @returns The chords, each a list of keys pressed together.
 */
export function xdotoolChords(text: string): string[][] {
  return text.trim().split(/\s+/).filter(Boolean).map((chord) =>
    chord.split("+").filter(Boolean).map((key) =>
      Object.hasOwn(XDOTOOL_KEYS, key.toLowerCase())
        ? XDOTOOL_KEYS[key.toLowerCase()]
        : key
    )
  );
}

const CLICKS: Record<string, { action: string; button?: string }> = {
  left_click: { action: "click", button: "left" },
  right_click: { action: "click", button: "right" },
  middle_click: { action: "click", button: "middle" },
  double_click: { action: "double_click" },
  triple_click: { action: "triple_click" },
};

const SCROLLS: Record<string, [number, number]> = {
  up: [0, -1],
  down: [0, 1],
  left: [-1, 0],
  right: [1, 0],
};

/**
 * Claude's native computer action as calls of the environment's `computer`
 * tool: the one place the Messages convention maps actions.
 *
 * @example
 * ```ts
 * import { claudeComputerPlan } from "./claude_computer.ts";
 * claudeComputerPlan({ action: "left_click", coordinate: [10, 20] }, {});
 * // { calls: [{ action: "click", x: 10, y: 20, button: "left" }] }
 * ```
 *
 * @param input The `tool_use` block's input.
 * @param pointer The pointer the conversation's earlier actions left (updated).
 * @returns The calls, or an error the model reads.
 */
export function claudeComputerPlan(
  input: JsonObject,
  pointer: ClaudePointer,
): ComputerPlan {
  const action = String(input.action ?? "");
  const point = coordinate(input.coordinate);
  if (input.coordinate !== undefined && !point) {
    return { error: `${action}: "coordinate" must be [x, y] in pixels` };
  }
  const seconds = typeof input.duration === "number" &&
      Number.isFinite(input.duration) && input.duration >= 0
    ? input.duration
    : undefined;
  const text = typeof input.text === "string" ? input.text : undefined;
  // On a click, drag or scroll `text` names keys held during it ("shift").
  const held = text ? xdotoolChords(text) : [];
  const holding = held.length === 1 ? { hold_keys: held[0] } : {};
  const heldError = {
    error: `${action} holds one key combination in "text", e.g. "ctrl+shift"`,
  };
  if (point) pointer.at = point;
  const click = Object.hasOwn(CLICKS, action) ? CLICKS[action] : undefined;
  if (click) {
    if (held.length > 1) return heldError;
    const at = point ?? pointer.at;
    if (!at) return { error: `${action} needs a "coordinate"` };
    pointer.pressed = undefined;
    return {
      calls: [{
        action: click.action,
        ...at,
        ...(click.button && { button: click.button }),
        ...holding,
      }],
    };
  }
  switch (action) {
    case "screenshot":
      return { calls: [{ action: "screenshot" }] };
    case "cursor_position":
      return { calls: [{ action: "cursor_position" }] };
    case "mouse_move":
      if (!point) return { error: 'mouse_move needs a "coordinate"' };
      pointer.pressed?.push(point);
      return { calls: [{ action: "move", ...point }] };
    case "left_click_drag": {
      if (held.length > 1) return heldError;
      const start = coordinate(input.start_coordinate) ?? pointer.at;
      if (!start || !point) {
        return {
          error: 'left_click_drag needs "start_coordinate" and "coordinate"',
        };
      }
      return {
        calls: [{ action: "drag", path: [start, point], ...holding }],
      };
    }
    case "left_mouse_down":
      if (!pointer.at) {
        return {
          error:
            'left_mouse_down needs to know where the pointer is: send "mouse_move" first',
        };
      }
      pointer.pressed = [pointer.at];
      return { calls: [{ action: "screenshot" }] };
    case "left_mouse_up": {
      const path = pointer.pressed;
      pointer.pressed = undefined;
      if (!path) return { error: "left_mouse_up without left_mouse_down" };
      if (point) path.push(point);
      return {
        calls: [
          path.length > 1
            ? { action: "drag", path }
            : { action: "click", ...path[0], button: "left" },
        ],
      };
    }
    case "scroll": {
      if (held.length > 1) return heldError;
      const direction = Object.hasOwn(SCROLLS, String(input.scroll_direction))
        ? SCROLLS[String(input.scroll_direction)]
        : undefined;
      if (!direction) {
        return {
          error: 'scroll needs "scroll_direction": up, down, left or right',
        };
      }
      const amount = typeof input.scroll_amount === "number" &&
          Number.isFinite(input.scroll_amount)
        ? Math.max(0, Math.round(input.scroll_amount))
        : 3;
      return {
        calls: [{
          action: "scroll",
          ...point,
          scroll_x: direction[0] * amount,
          scroll_y: direction[1] * amount,
          ...holding,
        }],
      };
    }
    case "type":
      if (text === undefined) return { error: 'type needs "text"' };
      return { calls: [{ action: "type", text }] };
    case "key": {
      const chords = xdotoolChords(text ?? "");
      if (chords.length === 0) return { error: 'key needs "text"' };
      const repeat = input.repeat === undefined ? 1 : pixel(input.repeat);
      if (repeat === undefined || repeat < 1 || repeat > MAX_REPEAT) {
        return { error: `key "repeat" must be from 1 to ${MAX_REPEAT}` };
      }
      const calls = chords.map((keys) => ({ action: "key", keys }));
      return { calls: Array.from({ length: repeat }, () => calls).flat() };
    }
    case "zoom": {
      const region = Array.isArray(input.region) && input.region.length === 4
        ? input.region.map(pixel)
        : [];
      if (region.length !== 4 || region.some((v) => v === undefined)) {
        return { error: 'zoom needs "region": [x1, y1, x2, y2] in pixels' };
      }
      return { calls: [{ action: "zoom", region }] };
    }
    case "hold_key": {
      const chords = xdotoolChords(text ?? "");
      if (chords.length !== 1 || seconds === undefined) {
        return { error: 'hold_key needs one key in "text" and a "duration"' };
      }
      return {
        calls: [{
          action: "hold_key",
          keys: chords[0],
          duration_ms: Math.round(seconds * 1000),
        }],
      };
    }
    case "wait":
      return {
        calls: [{
          action: "wait",
          duration_ms: Math.round((seconds ?? 1) * 1000),
        }],
      };
    default:
      return { error: `Unknown computer action "${action.slice(0, 50)}"` };
  }
}

function coordinate(value: unknown): { x: number; y: number } | undefined {
  if (!Array.isArray(value) || value.length !== 2) return undefined;
  const [x, y] = value.map(pixel);
  return x === undefined || y === undefined ? undefined : { x, y };
}

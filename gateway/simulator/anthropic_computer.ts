/**
 * Claude's computer use, as the simulator's agent speaks it: the
 * `computer_*` tool (`display_width_px` / `display_height_px` give the
 * screen) and the `tool_use` input of each action: `{action: "screenshot"}`,
 * `{action: "left_click", coordinate: [x, y]}`, `{action: "double_click",
 * coordinate}`, `{action: "type", text}`, `{action: "key", text: "Return"}`
 * (xdotool names, `ctrl+a` for combinations).
 *
 * @module
 */

import type { Json } from "./_json.ts";
import { type ComputerAction, spellKey } from "./computer_use.ts";
import type { ReplyContent } from "./reply.ts";

/**
 * A computer action as the input of Claude's `computer` tool.
 *
 * @param action The action.
 * @returns The `tool_use` input.
 */
export function anthropicComputerInput(action: ComputerAction): Json {
  switch (action.type) {
    case "screenshot":
      return { action: "screenshot" };
    case "click":
      return { action: "left_click", coordinate: [action.x, action.y] };
    case "double_click":
      return { action: "double_click", coordinate: [action.x, action.y] };
    case "type":
      return { action: "type", text: action.text };
    case "key":
      return {
        action: "key",
        text: action.keys.map((key) => spellKey(key, "xdotool")).join("+"),
      };
    case "zoom":
      return { action: "zoom", region: action.region };
  }
}

/**
 * A computer action as a `tool_use` of the declared computer tool; other
 * content unchanged.
 *
 * @param content The reply's content.
 * @param computerName The declared computer tool's name.
 * @returns Text or a tool call.
 */
export function asAnthropicContent(
  content: ReplyContent,
  computerName: string,
): Exclude<ReplyContent, { kind: "computer" }> {
  if (content.kind !== "computer") return content;
  return {
    kind: "tool",
    name: computerName,
    arguments: JSON.stringify(anthropicComputerInput(content.action)),
  };
}

/** The declared `computer_*` tool: its name and the screen it declares. */
export interface ComputerTool {
  /** The tool's name (`computer`). */
  name: string;
  /** `display_width_px` × `display_height_px`, when both are positive integers. */
  screen?: { width: number; height: number };
}

/**
 * The computer tool a `tools` entry declares, if it is one (`computer_20241022`,
 * `computer_20250124`, …).
 *
 * @param tool One entry of `tools`.
 * @returns The tool, or `undefined` for any other.
 */
export function computerToolOf(tool: Json): ComputerTool | undefined {
  if (typeof tool.type !== "string" || !tool.type.startsWith("computer_")) {
    return undefined;
  }
  const width = Number(tool.display_width_px);
  const height = Number(tool.display_height_px);
  return {
    name: String(tool.name),
    screen: Number.isInteger(width) && Number.isInteger(height) &&
        width > 0 && height > 0
      ? { width, height }
      : undefined,
  };
}

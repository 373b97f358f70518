/**
 * Claude's computer use, as the simulator's agent speaks it, on each wire
 * the docs give (https://platform.claude.com/docs/en/agents-and-tools/tool-use/computer-use-tool):
 *
 * - **The toolset** `computer_toolset_20260801`: one `tools[]` entry with no
 *   name or display size; the model calls its members, each `tool_use`
 *   block named after the member (`screenshot`, `left_click`,
 *   `double_click`, `type`, `key`, `zoom`, …) with `toolset_name:
 *   "computer"`, several in one turn (a screenshot first, then the rest
 *   batched); results echo `toolset_name`. Zoom is on unless
 *   `configs.zoom.enabled` is `false`. Member names and inputs: the
 *   official SDK's `ComputerToolUseBlock` (`@anthropic-ai/sdk` 1.12.0).
 * - **A single tool** `computer_20251124` / `computer_20250124` (named
 *   `computer`, `display_width_px` / `display_height_px` give the screen):
 *   one `tool_use` per turn whose input names the action:
 *   `{action: "screenshot"}`, `{action: "left_click", coordinate: [x, y]}`,
 *   `{action: "double_click", coordinate}`, `{action: "type", text}`,
 *   `{action: "key", text: "Return"}` (xdotool names, `ctrl+a` for
 *   combinations), and on `computer_20251124` with `enable_zoom: true`,
 *   `{action: "zoom", region: [x0, y0, x1, y1]}`.
 *
 * A model that thinks between tools (`features.thinkingBetweenTools`) puts
 * one `thinking` block before a turn's tool calls: its narration, empty
 * unless `thinking.display` asks for text (`summarized`, `updates`), as the
 * docs describe for Claude Opus 5.5 and Sonnet 5.5.
 *
 * @module
 */

import { asArray, isObject, type Json } from "./_json.ts";
import { isClaudeComputerTool } from "./anthropic_rules.ts";
import { type ComputerAction, spellKey } from "./computer_use.ts";
import type { ComputerCall } from "./reply.ts";

/** The toolset family a member's `tool_use.toolset_name` carries. */
export const COMPUTER_TOOLSET = "computer";

/** The computer toolset's members (the SDK's `ComputerMemberName`). */
export const COMPUTER_MEMBERS: ReadonlySet<string> = new Set([
  "key",
  "hold_key",
  "type",
  "cursor_position",
  "mouse_move",
  "left_mouse_down",
  "left_mouse_up",
  "left_click",
  "left_click_drag",
  "right_click",
  "middle_click",
  "double_click",
  "triple_click",
  "scroll",
  "wait",
  "screenshot",
  "zoom",
]);

function keyText(keys: readonly string[]): string {
  return keys.map((key) => spellKey(key, "xdotool")).join("+");
}

/**
 * A computer action as the input of Claude's single `computer` tool.
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
      return { action: "key", text: keyText(action.keys) };
    case "zoom":
      return { action: "zoom", region: action.region };
  }
}

/**
 * A computer action as a call of the toolset's member.
 *
 * @param action The action.
 * @returns The member's name and input.
 */
export function toolsetMemberCall(
  action: ComputerAction,
): { name: string; input: Json } {
  switch (action.type) {
    case "screenshot":
      return { name: "screenshot", input: {} };
    case "click":
      return {
        name: "left_click",
        input: { coordinate: [action.x, action.y] },
      };
    case "double_click":
      return {
        name: "double_click",
        input: { coordinate: [action.x, action.y] },
      };
    case "type":
      return { name: "type", input: { text: action.text } };
    case "key":
      return { name: "key", input: { text: keyText(action.keys) } };
    case "zoom":
      return { name: "zoom", input: { region: action.region } };
  }
}

/** The declared computer tool: its name, the screen it declares, what it can do. */
export interface ComputerTool {
  /** The tool's name (`computer`); for the toolset, its family (`computer`). */
  name: string;
  /** Whether it is the toolset (member calls, batched). */
  toolset: boolean;
  /** Whether it has a zoom action. */
  zoom: boolean;
  /** `display_width_px` × `display_height_px`, when both are positive integers. */
  screen?: { width: number; height: number };
}

/**
 * The computer tool a `tools` entry declares, if it is one
 * (`computer_toolset_20260801`, `computer_20251124`, `computer_20250124`, …).
 *
 * @param tool One entry of `tools`.
 * @returns The tool, or `undefined` for any other.
 */
export function computerToolOf(tool: Json): ComputerTool | undefined {
  if (!isClaudeComputerTool(tool)) return undefined;
  const type = String(tool.type);
  if (type.startsWith("computer_toolset_")) {
    const configs = isObject(tool.configs) ? tool.configs : {};
    const zoom = isObject(configs.zoom) ? configs.zoom : {};
    return {
      name: COMPUTER_TOOLSET,
      toolset: true,
      zoom: zoom.enabled !== false,
    };
  }
  const width = Number(tool.display_width_px);
  const height = Number(tool.display_height_px);
  return {
    name: String(tool.name),
    toolset: false,
    // Zoom came with computer_20251124, behind its `enable_zoom` flag.
    zoom: type >= "computer_20251124" && tool.enable_zoom === true,
    screen: Number.isInteger(width) && Number.isInteger(height) &&
        width > 0 && height > 0
      ? { width, height }
      : undefined,
  };
}

/**
 * Whether an assistant `tool_use` block is one of the agent's computer
 * actions: a call of the single tool by name, or of a toolset member.
 *
 * @param block The content block.
 * @param tool The declared computer tool.
 * @returns `true` for a computer action.
 */
export function isComputerToolUse(block: Json, tool: ComputerTool): boolean {
  if (block.type !== "tool_use") return false;
  if (!tool.toolset) return block.name === tool.name;
  return block.toolset_name === COMPUTER_TOOLSET ||
    COMPUTER_MEMBERS.has(String(block.name));
}

/** How a computer turn is written as content blocks. */
export interface ComputerBlocksOptions {
  /** The declared tool. */
  tool: ComputerTool;
  /** The response's id suffix (tool-use ids derive from it). */
  id: string;
  /** Whether a thinking block precedes the calls (`features.thinkingBetweenTools`). */
  thinkingBetweenTools: boolean;
  /** Whether that thinking block carries its text (`thinking.display` asks for it). */
  showThinking: boolean;
}

function narration(actions: readonly ComputerAction[]): string {
  return `Next: ${actions.map((action) => action.type).join(", ")}.`;
}

/**
 * The content blocks of one computer turn: a thinking block where the model
 * thinks between tools, then one `tool_use` per action.
 *
 * @param call The turn's actions.
 * @param options The tool and how to write the turn.
 * @returns The blocks, in order.
 */
export function computerBlocks(
  call: ComputerCall,
  options: ComputerBlocksOptions,
): Json[] {
  const { tool, id } = options;
  const uses = call.actions.map((action, index): Json => {
    const toolUseId = index === 0 ? `toolu_${id}` : `toolu_${id}_${index}`;
    if (!tool.toolset) {
      return {
        type: "tool_use",
        id: toolUseId,
        name: tool.name,
        input: anthropicComputerInput(action),
      };
    }
    const { name, input } = toolsetMemberCall(action);
    return {
      type: "tool_use",
      id: toolUseId,
      caller: { type: "direct" },
      name,
      input,
      toolset_name: COMPUTER_TOOLSET,
    };
  });
  if (!options.thinkingBetweenTools) return uses;
  return [
    thinkingBlock(narration(call.actions), id, options.showThinking),
    ...uses,
  ];
}

/**
 * The thinking block a model that thinks between tools puts before a turn's
 * tool calls: its narration, empty unless the request asks to show it.
 *
 * @param text The narration.
 * @param id The response's id suffix (the signature derives from it).
 * @param show Whether `thinking.display` asks for the text.
 * @returns The block.
 */
export function thinkingBlock(text: string, id: string, show: boolean): Json {
  return {
    type: "thinking",
    thinking: show ? text : "",
    signature: `sig_${id}`,
  };
}

/**
 * Whether the request asks for thinking text to be shown
 * (`thinking.display` `summarized` or `updates`).
 *
 * @param body The Messages request body.
 * @returns `true` when thinking blocks carry their text.
 */
export function showsThinking(body: Json): boolean {
  const thinking = isObject(body.thinking) ? body.thinking : {};
  return thinking.display === "summarized" || thinking.display === "updates";
}

/**
 * How many of the agent's computer actions an assistant turn holds.
 *
 * @param content The assistant message's content.
 * @param tool The declared computer tool.
 * @returns The count.
 */
export function computerActionsIn(
  content: unknown,
  tool: ComputerTool,
): number {
  return asArray(content).filter((block) =>
    isObject(block) && isComputerToolUse(block, tool)
  ).length;
}

/**
 * The Anthropic Messages agent (`POST /v1/messages`, Claude): the
 * environment's `computer`, `bash` and `edit` tools become Claude's native
 * `computer_20250124`, `bash_20250124` and `text_editor_20250728` (named
 * `str_replace_based_edit_tool`); every other tool is a custom tool. Results
 * go back as `tool_result` blocks, screenshots as `image` blocks inside them.
 *
 * @module
 */
import type {
  AgentTool,
  PromptMessage,
  ToolImage,
  ToolResult,
} from "../tool_host.ts";
import {
  addTokens,
  type AgentOutcome,
  type AgentRun,
  callModel,
  emptyOutcome,
  isObject,
  modelSaid,
  promptPart,
  tokenCount,
  traceToolCall,
} from "./loop.ts";
import type { JsonObject } from "./model.ts";
import {
  type ComputerPlan,
  computerTool,
  pixel,
  runComputer,
  ToolGate,
} from "./tool_gate.ts";
import { trajectoryPrompt } from "./trajectory.ts";

/** Output tokens a Messages call may use (the API requires a limit). */
const MAX_TOKENS = 4096;
/** The beta the computer and bash tool versions need. */
const COMPUTER_BETA = "computer-use-2025-01-24";

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
 * import { claudeComputerPlan } from "./messages.ts";
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
  if (point) pointer.at = point;
  const click = Object.hasOwn(CLICKS, action) ? CLICKS[action] : undefined;
  if (click) {
    if (text) {
      return {
        error:
          `${action} while holding "${text}" is not supported here; press keys with "key" or "hold_key"`,
      };
    }
    const at = point ?? pointer.at;
    if (!at) return { error: `${action} needs a "coordinate"` };
    pointer.pressed = undefined;
    return {
      calls: [{
        action: click.action,
        ...at,
        ...(click.button && { button: click.button }),
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
      const start = coordinate(input.start_coordinate) ?? pointer.at;
      if (!start || !point) {
        return {
          error: 'left_click_drag needs "start_coordinate" and "coordinate"',
        };
      }
      return { calls: [{ action: "drag", path: [start, point] }] };
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
      const direction = Object.hasOwn(SCROLLS, String(input.scroll_direction))
        ? SCROLLS[String(input.scroll_direction)]
        : undefined;
      if (!direction) {
        return {
          error: 'scroll needs "scroll_direction": up, down, left or right',
        };
      }
      if (text) {
        return {
          error:
            `scroll while holding "${text}" is not supported here; press keys with "key" or "hold_key"`,
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
        }],
      };
    }
    case "type":
      if (text === undefined) return { error: 'type needs "text"' };
      return { calls: [{ action: "type", text }] };
    case "key": {
      const chords = xdotoolChords(text ?? "");
      if (chords.length === 0) return { error: 'key needs "text"' };
      return { calls: chords.map((keys) => ({ action: "key", keys })) };
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

function hasProperties(tool: AgentTool, names: string[]): boolean {
  const properties = tool.inputSchema.properties;
  return isObject(properties) && names.every((name) => name in properties);
}

/**
 * The tools Claude is given, and the environment tool behind each name it
 * may call.
 *
 * @param run The run (tools, display size).
 * @returns The declarations, the name map, and whether the computer beta is needed.
 */
export function claudeTools(
  run: Pick<AgentRun, "tools" | "display">,
): { declared: JsonObject[]; names: Map<string, string>; beta: boolean } {
  const declared: JsonObject[] = [];
  const names = new Map<string, string>();
  let beta = false;
  const computer = computerTool(run.tools);
  for (const tool of run.tools) {
    if (tool === computer) {
      declared.push({
        type: "computer_20250124",
        name: "computer",
        display_width_px: run.display.width,
        display_height_px: run.display.height,
      });
      names.set("computer", tool.name);
      beta = true;
    } else if (tool.name === "bash" && hasProperties(tool, ["command"])) {
      declared.push({ type: "bash_20250124", name: "bash" });
      names.set("bash", tool.name);
      beta = true;
    } else if (
      tool.name === "edit" && hasProperties(tool, ["command", "path"])
    ) {
      declared.push({
        type: "text_editor_20250728",
        name: "str_replace_based_edit_tool",
      });
      names.set("str_replace_based_edit_tool", tool.name);
    } else {
      declared.push({
        name: tool.name,
        ...(tool.description && { description: tool.description }),
        input_schema: tool.inputSchema,
      });
      names.set(tool.name, tool.name);
    }
  }
  return { declared, names, beta };
}

function imageBlock(image: ToolImage): JsonObject {
  return {
    type: "image",
    source: { type: "base64", media_type: image.mimeType, data: image.data },
  };
}

/**
 * MCP prompt messages as Messages turns: consecutive messages of one role
 * joined into one turn.
 *
 * @param messages The prompt messages.
 * @returns The turns.
 */
export function claudeMessages(messages: PromptMessage[]): JsonObject[] {
  const turns: { role: string; content: JsonObject[] }[] = [];
  for (const message of messages) {
    const part = promptPart(message);
    const block = "text" in part
      ? { type: "text", text: part.text }
      : imageBlock(part.image);
    const last = turns.at(-1);
    if (last?.role === message.role) last.content.push(block);
    else turns.push({ role: message.role, content: [block] });
  }
  return turns;
}

function toolResultBlock(id: unknown, result: ToolResult): JsonObject {
  const content: JsonObject[] = [
    ...(result.text ? [{ type: "text", text: result.text }] : []),
    ...result.images.map(imageBlock),
  ];
  return {
    type: "tool_result",
    tool_use_id: id,
    content: content.length > 0 ? content : [{ type: "text", text: "(done)" }],
    ...(result.isError && { is_error: true }),
  };
}

/**
 * Runs the loop over Anthropic Messages.
 *
 * @param run The environment, model, prompt and tools.
 * @param outcome Filled in as the loop goes, so a run that fails keeps its steps and cost.
 * @returns The answer and what it cost.
 */
export async function runMessages(
  run: AgentRun,
  outcome: AgentOutcome = emptyOutcome(),
): Promise<AgentOutcome> {
  const gate = new ToolGate(run, outcome);
  const { declared, names, beta } = claudeTools(run);
  const computer = names.has("computer") &&
    computerTool(run.tools) !== undefined;
  const messages = claudeMessages(run.prompt);
  outcome.trajectory.prompt = trajectoryPrompt(run.prompt);
  const pointer: ClaudePointer = {};
  while (outcome.steps < run.maxSteps) {
    const body = await callModel(run, outcome, "/v1/messages", {
      model: run.endpoint.model,
      max_tokens: MAX_TOKENS,
      messages,
      ...(declared.length > 0 && { tools: declared }),
    }, beta ? { "anthropic-beta": COMPUTER_BETA } : {});
    const usage = isObject(body.usage) ? body.usage : {};
    addTokens(
      outcome,
      tokenCount(usage.input_tokens) +
        tokenCount(usage.cache_creation_input_tokens) +
        tokenCount(usage.cache_read_input_tokens),
      tokenCount(usage.output_tokens),
    );
    const content = (Array.isArray(body.content) ? body.content : []).filter(
      isObject,
    );
    messages.push({ role: "assistant", content });
    const text = content.filter((block) => block.type === "text").map((
      block,
    ) => String(block.text ?? "")).join("");
    modelSaid(outcome, text);
    const uses = content.filter((block) => block.type === "tool_use");
    if (uses.length === 0) {
      outcome.answer = text;
      return outcome;
    }
    const results: JsonObject[] = [];
    for (const use of uses) {
      const modelName = String(use.name ?? "");
      const envName = names.get(modelName);
      const input = isObject(use.input) ? use.input : {};
      const result = await traceToolCall(outcome, modelName, input, () => {
        if (envName === undefined) return gate.refuse(modelName);
        if (computer && modelName === "computer") {
          return runComputer(gate, claudeComputerPlan(input, pointer));
        }
        return gate.callJson(envName, input);
      });
      results.push(toolResultBlock(use.id, result));
    }
    messages.push({ role: "user", content: results });
  }
  outcome.stepLimitReached = true;
  return outcome;
}

/**
 * The Anthropic Messages agent (`POST /v1/messages`, Claude). The
 * environment's `computer` tool becomes the computer tool the model's
 * `computer_use` names (from `GET /v1/models`, never from the model's name):
 *
 * - `computer_toolset_20260801`: one `tools[]` entry, no beta header; the
 *   model calls members (`left_click`, `type`, `zoom`, …) as `tool_use`
 *   blocks named after the member with `toolset_name: "computer"`, often
 *   several in one turn: they run in order, each answered by its own
 *   `tool_result` carrying `toolset_name`; after one fails the rest of the
 *   turn is answered "Not executed" (as Anthropic's SDK does). An action
 *   answers with text, `screenshot` and `zoom` with a picture.
 * - `computer_20251124` (with zoom) and `computer_20250124`: the `computer`
 *   tool with `{action, …}`, behind the beta header `computer_use.beta`
 *   names; every action answers with a screenshot.
 *
 * A model without `computer_use` (or with a tool this agent does not speak)
 * gets the `computer` tool as a custom tool. `bash` and `edit` become
 * `bash_20250124` and `text_editor_20250728` (named
 * `str_replace_based_edit_tool`); every other tool is a custom tool. The
 * assistant's content goes back whole, thinking blocks and their signatures
 * included, as the docs require with tool use. Sources:
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/computer-use-tool
 * and the SDK types of `anthropics/anthropic-sdk-typescript`
 * (`BetaComputerToolset20260801`, `toolsetResultBlock`).
 *
 * @module
 */
import type {
  AgentTool,
  PromptMessage,
  ToolImage,
  ToolResult,
} from "../tool_host.ts";
import { claudeComputerPlan, type ClaudePointer } from "./claude_computer.ts";
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
import { computerTool, runComputer, ToolGate } from "./tool_gate.ts";
import { trajectoryPrompt } from "./trajectory.ts";

/** Output tokens a Messages call may use (the API requires a limit). */
const MAX_TOKENS = 4096;

/** The `toolset_name` of the computer toolset's member calls. */
const COMPUTER_TOOLSET = "computer";

/** What answers the members of a turn after one failed (Anthropic's SDK text). */
const NOT_EXECUTED =
  "Not executed: an earlier computer action in this turn failed.";

/**
 * How each Claude computer tool version is declared: the toolset as one
 * entry with no name, the single tools as `computer` with the display size
 * (and zoom switched on where the version has it).
 */
const CLAUDE_COMPUTER_TOOLS: Record<
  string,
  { toolset: boolean; declare(display: AgentRun["display"]): JsonObject }
> = {
  computer_toolset_20260801: {
    toolset: true,
    declare: () => ({ type: "computer_toolset_20260801" }),
  },
  computer_20251124: {
    toolset: false,
    declare: (display) => ({
      type: "computer_20251124",
      name: "computer",
      display_width_px: display.width,
      display_height_px: display.height,
      enable_zoom: true,
    }),
  },
  computer_20250124: {
    toolset: false,
    declare: (display) => ({
      type: "computer_20250124",
      name: "computer",
      display_width_px: display.width,
      display_height_px: display.height,
    }),
  },
};

function hasProperties(tool: AgentTool, names: string[]): boolean {
  const properties = tool.inputSchema.properties;
  return isObject(properties) && names.every((name) => name in properties);
}

/** The tools Claude is given, and how its calls reach the environment. */
export interface ClaudeTools {
  /** The `tools[]` entries. */
  declared: JsonObject[];
  /** The environment tool behind each name the model may call (beside toolset members). */
  names: Map<string, string>;
  /** How the computer is reached: a toolset's members, the native `computer` tool, or not natively. */
  computer: "toolset" | "native" | undefined;
  /** The `anthropic-beta` header value, when the computer tool needs one. */
  beta?: string;
}

/**
 * The tools Claude is given, from the environment's tools and the model's
 * `computer_use`.
 *
 * @example
 * ```ts
 * import { claudeTools } from "./messages.ts";
 *
 * const computer = {
 *   name: "computer",
 *   inputSchema: { type: "object", properties: { action: { type: "string" } } },
 * };
 * claudeTools({
 *   tools: [computer],
 *   display: { width: 1280, height: 800 },
 *   computerUse: { tool: "computer_toolset_20260801" },
 * }).declared; // [{ type: "computer_toolset_20260801" }]
 * ```
 *
 * @param run The run (tools, display size, the model's computer use).
 * @returns The declarations, the name map, the computer's wire and beta.
 */
export function claudeTools(
  run: Pick<AgentRun, "tools" | "display" | "computerUse">,
): ClaudeTools {
  const declared: JsonObject[] = [];
  const names = new Map<string, string>();
  const computer = computerTool(run.tools);
  const wire = run.computerUse &&
      Object.hasOwn(CLAUDE_COMPUTER_TOOLS, run.computerUse.tool)
    ? CLAUDE_COMPUTER_TOOLS[run.computerUse.tool]
    : undefined;
  for (const tool of run.tools) {
    if (tool === computer && wire) {
      declared.push(wire.declare(run.display));
      if (!wire.toolset) names.set("computer", tool.name);
    } else if (tool.name === "bash" && hasProperties(tool, ["command"])) {
      declared.push({ type: "bash_20250124", name: "bash" });
      names.set("bash", tool.name);
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
  return {
    declared,
    names,
    computer: computer && wire
      ? (wire.toolset ? "toolset" : "native")
      : undefined,
    ...(computer && wire && run.computerUse?.beta &&
      { beta: run.computerUse.beta }),
  };
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

function toolResultBlock(use: JsonObject, result: ToolResult): JsonObject {
  const content: JsonObject[] = [
    ...(result.text ? [{ type: "text", text: result.text }] : []),
    ...result.images.map(imageBlock),
  ];
  return {
    type: "tool_result",
    tool_use_id: use.id,
    // A member's result names its toolset (the API rejects a mismatch).
    ...(typeof use.toolset_name === "string" &&
      { toolset_name: use.toolset_name }),
    content: content.length > 0 ? content : [{ type: "text", text: "(done)" }],
    ...(result.isError && { is_error: true }),
  };
}

/** The text of blocks of one type (`text`, or `thinking` for its `thinking` field). */
function blockText(content: JsonObject[], type: "text" | "thinking"): string {
  return content.filter((block) => block.type === type)
    .map((block) => String(block[type] ?? "")).join("");
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
  const { declared, names, computer, beta } = claudeTools(run);
  const messages = claudeMessages(run.prompt);
  outcome.trajectory.prompt = trajectoryPrompt(run.prompt);
  const pointer: ClaudePointer = {};
  while (outcome.steps < run.maxSteps) {
    // No `thinking` and no `tool_choice`: the model's defaults, which every
    // model takes (some refuse disabled thinking or a forced tool choice).
    const body = await callModel(run, outcome, "/v1/messages", {
      model: run.endpoint.model,
      max_tokens: MAX_TOKENS,
      messages,
      ...(declared.length > 0 && { tools: declared }),
    }, beta ? { "anthropic-beta": beta } : {});
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
    const text = blockText(content, "text");
    // Models that write between tool calls in thinking blocks show it there.
    modelSaid(outcome, text || blockText(content, "thinking"));
    const uses = content.filter((block) => block.type === "tool_use");
    if (uses.length === 0) {
      outcome.answer = text;
      return outcome;
    }
    const results: JsonObject[] = [];
    let memberFailed = false;
    for (const use of uses) {
      const modelName = String(use.name ?? "");
      const input = isObject(use.input) ? use.input : {};
      const member = use.toolset_name !== undefined;
      const result = await traceToolCall(outcome, modelName, input, () => {
        if (member) {
          if (computer !== "toolset" || use.toolset_name !== COMPUTER_TOOLSET) {
            return gate.refuse(`${String(use.toolset_name)}.${modelName}`);
          }
          if (memberFailed) {
            return { text: NOT_EXECUTED, images: [], isError: true };
          }
          return runComputer(
            gate,
            claudeComputerPlan({ ...input, action: modelName }, pointer),
            { screenshot: false },
          );
        }
        const envName = names.get(modelName);
        if (envName === undefined) return gate.refuse(modelName);
        if (computer === "native" && modelName === "computer") {
          return runComputer(gate, claudeComputerPlan(input, pointer));
        }
        return gate.callJson(envName, input);
      });
      if (computer === "toolset" && use.toolset_name === COMPUTER_TOOLSET) {
        memberFailed ||= result.isError;
      }
      results.push(toolResultBlock(use, result));
    }
    messages.push({ role: "user", content: results });
  }
  outcome.stepLimitReached = true;
  return outcome;
}

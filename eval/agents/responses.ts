/**
 * The OpenAI Responses agent (`POST /v1/responses`, e.g. `operator`): the
 * environment's `computer` tool becomes `computer_use_preview`; every other
 * tool is a function. The whole history goes back as `input` on every call
 * (no `previous_response_id`): each `computer_call` is answered by a
 * `computer_call_output` carrying a `computer_screenshot`, with the call's
 * pending safety checks acknowledged (and recorded in the outcome).
 *
 * @module
 */
import type {
  DisplaySize,
  PromptMessage,
  ToolImage,
  ToolResult,
} from "../tool_host.ts";
import {
  addTokens,
  type AgentOutcome,
  type AgentRun,
  callModel,
  dataUrl,
  emptyOutcome,
  isObject,
  modelSaid,
  promptPart,
  type SafetyCheck,
  tokenCount,
  traceImage,
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
 * import { responsesComputerPlan } from "./responses.ts";
 * responsesComputerPlan({ type: "keypress", keys: ["CTRL", "A"] });
 * // { calls: [{ action: "key", keys: ["CTRL", "A"] }] }
 * ```
 *
 * @param action The call's `action`.
 * @returns The calls, or an error the model reads.
 */
export function responsesComputerPlan(action: JsonObject): ComputerPlan {
  const type = String(action.type ?? "");
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
      return { calls: [{ action: "click", ...at, button: buttons[button] }] };
    }
    case "double_click":
      return { calls: [{ action: "double_click", ...at }] };
    case "move":
      return { calls: [{ action: "move", ...at }] };
    case "drag": {
      const path = Array.isArray(action.path) ? action.path.map(point) : [];
      if (path.length < 2 || path.some((p) => p === undefined)) {
        return { error: 'drag needs a "path" of at least two {x, y} points' };
      }
      return { calls: [{ action: "drag", path }] };
    }
    case "scroll":
      return {
        calls: [{
          action: "scroll",
          ...at,
          scroll_x: wheelClicks(action.scroll_x),
          scroll_y: wheelClicks(action.scroll_y),
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

/**
 * The tools the model is given.
 *
 * @param run The run (tools, display size).
 * @returns The declarations, and whether the computer tool is among them.
 */
export function responsesTools(
  run: Pick<AgentRun, "tools" | "display">,
): { declared: JsonObject[]; computer: boolean } {
  const computer = computerTool(run.tools);
  const declared = run.tools.map((tool): JsonObject =>
    tool === computer ? computerDeclaration(run.display) : {
      type: "function",
      name: tool.name,
      ...(tool.description && { description: tool.description }),
      parameters: tool.inputSchema,
      strict: false,
    }
  );
  return { declared, computer: computer !== undefined };
}

function computerDeclaration(display: DisplaySize): JsonObject {
  return {
    type: "computer_use_preview",
    display_width: display.width,
    display_height: display.height,
    environment: "browser",
  };
}

/**
 * MCP prompt messages as Responses input items.
 *
 * @param messages The prompt messages.
 * @returns The items.
 */
export function responsesInput(messages: PromptMessage[]): JsonObject[] {
  return messages.map((message) => {
    const part = promptPart(message);
    if (message.role === "assistant") {
      return {
        role: "assistant",
        content: [{
          type: "output_text",
          text: "text" in part ? part.text : "(an image)",
        }],
      };
    }
    return {
      role: message.role,
      content: [
        "text" in part
          ? { type: "input_text", text: part.text }
          : { type: "input_image", image_url: dataUrl(part.image) },
      ],
    };
  });
}

/** The safety checks a call raised, in the shape they are acknowledged and recorded. */
function safetyChecks(item: JsonObject): SafetyCheck[] {
  const pending = Array.isArray(item.pending_safety_checks)
    ? item.pending_safety_checks.filter(isObject)
    : [];
  return pending.map((check) => ({
    id: String(check.id ?? ""),
    ...(typeof check.code === "string" && { code: check.code }),
    ...(typeof check.message === "string" && { message: check.message }),
  }));
}

/**
 * Runs the loop over Responses.
 *
 * @param run The environment, model, prompt and tools.
 * @param outcome Filled in as the loop goes, so a run that fails keeps its steps and cost.
 * @returns The answer and what it cost.
 */
export async function runResponses(
  run: AgentRun,
  outcome: AgentOutcome = emptyOutcome(),
): Promise<AgentOutcome> {
  const gate = new ToolGate(run, outcome);
  const { declared, computer } = responsesTools(run);
  const input = responsesInput(run.prompt);
  outcome.trajectory.prompt = trajectoryPrompt(run.prompt);
  while (outcome.steps < run.maxSteps) {
    const body = await callModel(run, outcome, "/v1/responses", {
      model: run.endpoint.model,
      input,
      ...(declared.length > 0 && { tools: declared }),
      ...(computer && { truncation: "auto" }),
    });
    const usage = isObject(body.usage) ? body.usage : {};
    addTokens(
      outcome,
      tokenCount(usage.input_tokens),
      tokenCount(usage.output_tokens),
    );
    const output = (Array.isArray(body.output) ? body.output : []).filter(
      isObject,
    );
    input.push(...output);
    const text = output.filter((item) => item.type === "message")
      .flatMap((item) => Array.isArray(item.content) ? item.content : [])
      .filter((part) => isObject(part) && part.type === "output_text")
      .map((part) => String(part.text ?? "")).join("");
    modelSaid(outcome, text);
    const calls = output.filter((item) =>
      item.type === "computer_call" || item.type === "function_call"
    );
    if (calls.length === 0) {
      outcome.answer = text;
      return outcome;
    }
    // What a call's output cannot carry (an error's text, a function's
    // images) follows all outputs of the turn as one user message.
    const notes: JsonObject[] = [];
    for (const call of calls) {
      if (call.type === "function_call") {
        const name = String(call.name ?? "");
        const result = await traceToolCall(
          outcome,
          name,
          call.arguments,
          () => gate.callJson(name, call.arguments),
        );
        input.push({
          type: "function_call_output",
          call_id: call.call_id,
          output: result.text,
        });
        for (const image of result.images) {
          notes.push({ type: "input_image", image_url: dataUrl(image) });
        }
        continue;
      }
      const checks = safetyChecks(call);
      outcome.safetyChecks.push(...checks);
      const action = isObject(call.action) ? call.action : {};
      const result = await traceToolCall(
        outcome,
        "computer",
        action,
        () =>
          computer
            ? runComputer(gate, responsesComputerPlan(action))
            : gate.refuse("computer"),
        checks,
      );
      if (result.isError) {
        notes.push({ type: "input_text", text: result.text });
      }
      const screenshot = await screenshotOf(gate, result, computer);
      if (computer) traceImage(outcome, screenshot);
      input.push({
        type: "computer_call_output",
        call_id: call.call_id,
        output: {
          type: "computer_screenshot",
          image_url: dataUrl(screenshot),
        },
        ...(checks.length > 0 && {
          acknowledged_safety_checks: call.pending_safety_checks,
        }),
      });
    }
    if (notes.length > 0) input.push({ role: "user", content: notes });
  }
  outcome.stepLimitReached = true;
  return outcome;
}

/** A 1×1 PNG: the screen of a computer the task does not have. */
const NO_SCREEN: ToolImage = {
  mimeType: "image/png",
  data:
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
};

/**
 * The screenshot a `computer_call_output` must carry: the action's own, else
 * a fresh one; a blank pixel when the task has no computer (the refusal's
 * text tells the model why).
 */
async function screenshotOf(
  gate: ToolGate,
  result: ToolResult,
  computer: boolean,
): Promise<ToolImage> {
  if (!computer) return NO_SCREEN;
  const image = result.images.at(-1) ??
    (await gate.call("computer", { action: "screenshot" })).images.at(-1);
  if (!image) {
    throw new Error(
      "The environment's computer tool answered without a screenshot",
    );
  }
  return image;
}

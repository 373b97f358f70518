/**
 * The OpenAI Responses agent (`POST /v1/responses`). The environment's
 * `computer` tool becomes the tool the model's `computer_use` names (from
 * `GET /v1/models`, never from the model's name): the GA `{"type":
 * "computer"}` tool, whose `computer_call` carries a batched `actions` list
 * (run in order), or `computer_use_preview` (one `action` per call, with the
 * display size and environment declared). Without `computer_use` the
 * computer is a function like every other tool. The whole history goes back
 * as `input` on every call (no `previous_response_id`): each
 * `computer_call` is answered by one `computer_call_output` carrying the
 * screenshot after its last action, with the call's pending safety checks
 * acknowledged (and recorded in the outcome). Source: the OpenAI SDK's
 * types (`ComputerTool`, `ComputerUsePreviewTool`, `ResponseComputerToolCall
 * .actions`) and https://developers.openai.com/api/docs/guides/tools-computer-use.
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
import { responsesComputerPlan } from "./responses_computer.ts";
import {
  computerTool,
  errorResult,
  runComputer,
  ToolGate,
} from "./tool_gate.ts";
import { trajectoryPrompt } from "./trajectory.ts";

/**
 * The preview tool's `environment` for the scenario's kind of computer: our
 * desktops are Linux X displays; a browser (or no word) is `browser`.
 */
const PREVIEW_ENVIRONMENTS: Record<string, string> = {
  browser: "browser",
  desktop: "linux",
};

/** How each Responses computer tool is declared. */
const RESPONSES_COMPUTER_TOOLS: Record<
  string,
  (display: DisplaySize, environment: string | undefined) => JsonObject
> = {
  computer: () => ({ type: "computer" }),
  computer_use_preview: (display, environment) => ({
    type: "computer_use_preview",
    display_width: display.width,
    display_height: display.height,
    environment: environment !== undefined &&
        Object.hasOwn(PREVIEW_ENVIRONMENTS, environment)
      ? PREVIEW_ENVIRONMENTS[environment]
      : "browser",
  }),
};

/**
 * The tools the model is given, from the environment's tools and the
 * model's `computer_use`.
 *
 * @example
 * ```ts
 * import { responsesTools } from "./responses.ts";
 *
 * const computer = {
 *   name: "computer",
 *   inputSchema: { type: "object", properties: { action: { type: "string" } } },
 * };
 * responsesTools({
 *   tools: [computer],
 *   display: { width: 1280, height: 800 },
 *   computerUse: { tool: "computer" },
 * }).declared; // [{ type: "computer" }]
 * ```
 *
 * @param run The run (tools, display size, the model's computer use, the scenario's environment).
 * @returns The declarations, and whether the computer is reached natively.
 */
export function responsesTools(
  run: Pick<
    AgentRun,
    "tools" | "display" | "computerUse" | "computerEnvironment"
  >,
): { declared: JsonObject[]; computer: boolean } {
  const computer = computerTool(run.tools);
  const declare = run.computerUse &&
      Object.hasOwn(RESPONSES_COMPUTER_TOOLS, run.computerUse.tool)
    ? RESPONSES_COMPUTER_TOOLS[run.computerUse.tool]
    : undefined;
  const declared = run.tools.map((tool): JsonObject =>
    tool === computer && declare
      ? declare(run.display, run.computerEnvironment)
      : {
        type: "function",
        name: tool.name,
        ...(tool.description && { description: tool.description }),
        parameters: tool.inputSchema,
        strict: false,
      }
  );
  return {
    declared,
    computer: computer !== undefined && declare !== undefined,
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
      // The GA tool batches `actions`; the preview tool sends one `action`.
      const batch = Array.isArray(call.actions)
        ? call.actions.filter(isObject)
        : [isObject(call.action) ? call.action : {}];
      const result = await traceToolCall(
        outcome,
        "computer",
        Array.isArray(call.actions) ? batch : batch[0],
        () => computer ? runBatch(gate, batch) : gate.refuse("computer"),
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

/** Actions one `computer_call` may carry: a hostile model cannot queue an endless batch. */
const MAX_BATCH = 100;

/**
 * Runs a `computer_call`'s actions in order, only the last answering with a
 * screenshot (the one the output carries); the first error stops the rest
 * (the model reads which failed).
 */
async function runBatch(
  gate: ToolGate,
  actions: JsonObject[],
): Promise<ToolResult> {
  if (actions.length > MAX_BATCH) {
    return errorResult(
      `A computer_call may carry at most ${MAX_BATCH} actions; this one has ${actions.length}, none run`,
    );
  }
  const texts: string[] = [];
  for (const [i, action] of actions.entries()) {
    const result = await runComputer(gate, responsesComputerPlan(action), {
      screenshot: i === actions.length - 1,
    });
    if (result.text) texts.push(result.text);
    if (result.isError) {
      const skipped = actions.length - i - 1;
      return {
        ...result,
        text: [
          ...texts,
          ...(skipped > 0
            ? [`(${skipped} later action(s) of this call were not run)`]
            : []),
        ].join("\n"),
      };
    }
    if (i === actions.length - 1) return { ...result, text: texts.join("\n") };
  }
  return { text: "", images: [], isError: false };
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

/**
 * The Gemini native agent (`POST /v1beta/models/{model}:generateContent`).
 * For a model whose `computer_use` (from `GET /v1/models`) names the
 * `computer_use` tool, the environment's `computer` tool becomes the
 * `computerUse` tool, in the environment the scenario asks for (`browser`,
 * `desktop`, `mobile` → `ENVIRONMENT_…`; default the model's
 * `computer_use.environment`), with `excludedPredefinedFunctions` naming
 * the predefined functions the scenario's `exclude_tools` patterns match.
 * The predefined functions take coordinates normalised to 0–999; every
 * other tool is a function declaration. Each call is answered by a
 * `functionResponse` whose `parts` carry the screenshot as `inlineData`; a
 * call that needs the user's confirmation is acknowledged
 * (`safety_acknowledgement`) and recorded in the trajectory. Source:
 * https://ai.google.dev/gemini-api/docs/computer-use and `@google/genai`'s
 * `ComputerUse` and `Environment` types.
 *
 * @module
 */
import { globMatch } from "../../mcp/scenarios/scenario.ts";
import type { PromptMessage, ToolResult } from "../tool_host.ts";
import {
  addTokens,
  type AgentOutcome,
  type AgentRun,
  callModel,
  emptyOutcome,
  isObject,
  modelSaid,
  promptPart,
  type SafetyCheck,
  tokenCount,
  traceToolCall,
} from "./loop.ts";
import type { JsonObject } from "./model.ts";
import {
  GEMINI_COMPUTER_FUNCTIONS,
  geminiComputerPlan,
} from "./gemini_computer.ts";
import { computerTool, runComputer, ToolGate } from "./tool_gate.ts";
import { trajectoryPrompt } from "./trajectory.ts";

/** The `computer_use` tool type of `/v1/models` that this agent speaks. */
const GEMINI_COMPUTER_TOOL = "computer_use";

/**
 * The `computerUse` environment for the scenario's kind of computer, checked
 * against the ones the model documents.
 *
 * @throws {Error} When the model does not offer it: one line naming both.
 */
function geminiEnvironment(
  run: Pick<AgentRun, "computerUse" | "computerEnvironment" | "endpoint">,
): string {
  const offered = run.computerUse?.environments ??
    (run.computerUse?.environment ? [run.computerUse.environment] : []);
  if (run.computerEnvironment === undefined) {
    return run.computerUse?.environment ?? offered[0] ?? "ENVIRONMENT_BROWSER";
  }
  const wanted = `ENVIRONMENT_${run.computerEnvironment.toUpperCase()}`;
  if (!offered.includes(wanted)) {
    throw new Error(
      `The scenario asks for the ${run.computerEnvironment} environment, and ${run.endpoint.model}'s computer use offers ${
        offered.join(", ") || "none"
      }`,
    );
  }
  return wanted;
}

/**
 * The tools the model is given.
 *
 * @example
 * ```ts
 * import { geminiTools } from "./gemini.ts";
 *
 * const computer = {
 *   name: "computer",
 *   inputSchema: { type: "object", properties: { action: { type: "string" } } },
 * };
 * geminiTools({
 *   tools: [computer],
 *   endpoint: { gatewayUrl: "", key: "", model: "gemini-x" },
 *   computerUse: { tool: "computer_use", environment: "ENVIRONMENT_BROWSER" },
 *   excludedTools: ["search"],
 * }).declared;
 * // [{ computerUse: { environment: "ENVIRONMENT_BROWSER", excludedPredefinedFunctions: ["search"] } }]
 * ```
 *
 * @param run The run (tools, the model's computer use, the scenario's environment and exclusions).
 * @returns The tool list, whether `computerUse` is in it, and the predefined functions excluded.
 * @throws {Error} When the scenario asks for an environment the model does not offer.
 */
export function geminiTools(
  run: Pick<
    AgentRun,
    | "tools"
    | "computerUse"
    | "computerEnvironment"
    | "excludedTools"
    | "endpoint"
  >,
): { declared: JsonObject[]; computer: boolean; excluded: string[] } {
  const tool = computerTool(run.tools);
  const computer = tool !== undefined &&
    run.computerUse?.tool === GEMINI_COMPUTER_TOOL;
  const excluded = computer
    ? GEMINI_COMPUTER_FUNCTIONS.filter((name) =>
      (run.excludedTools ?? []).some((pattern) => globMatch(name, pattern))
    )
    : [];
  const functions = run.tools.filter((t) => !computer || t !== tool).map((
    t,
  ) => ({
    name: t.name,
    ...(t.description && { description: t.description }),
    parametersJsonSchema: t.inputSchema,
  }));
  return {
    declared: [
      ...(computer
        ? [{
          computerUse: {
            environment: geminiEnvironment(run),
            ...(excluded.length > 0 &&
              { excludedPredefinedFunctions: excluded }),
          },
        }]
        : []),
      ...(functions.length > 0 ? [{ functionDeclarations: functions }] : []),
    ],
    computer,
    excluded,
  };
}

/**
 * MCP prompt messages as Gemini contents: `assistant` is `model`;
 * consecutive messages of one role are joined.
 *
 * @param messages The prompt messages.
 * @returns The contents.
 */
export function geminiContents(messages: PromptMessage[]): JsonObject[] {
  const contents: { role: string; parts: JsonObject[] }[] = [];
  for (const message of messages) {
    const role = message.role === "assistant" ? "model" : "user";
    const part = promptPart(message);
    const wire = "text" in part ? { text: part.text } : {
      inlineData: { mimeType: part.image.mimeType, data: part.image.data },
    };
    const last = contents.at(-1);
    if (last?.role === role) last.parts.push(wire);
    else contents.push({ role, parts: [wire] });
  }
  return contents;
}

function functionResponse(
  call: JsonObject,
  result: ToolResult,
  acknowledged: boolean,
): JsonObject {
  return {
    functionResponse: {
      name: call.name,
      ...(typeof call.id === "string" && { id: call.id }),
      response: {
        ...(result.isError ? { error: result.text } : { output: result.text }),
        ...(acknowledged && { safety_acknowledgement: "true" }),
      },
      ...(result.images.length > 0 && {
        parts: result.images.map((image) => ({
          inlineData: { mimeType: image.mimeType, data: image.data },
        })),
      }),
    },
  };
}

/** The confirmation a call asks for, if it asks. */
function safetyCheck(
  call: JsonObject,
  args: JsonObject,
): SafetyCheck | undefined {
  const decision = args.safety_decision;
  if (!isObject(decision) || decision.decision !== "require_confirmation") {
    return undefined;
  }
  return {
    id: typeof call.id === "string" ? call.id : String(call.name),
    code: "require_confirmation",
    ...(typeof decision.explanation === "string" &&
      { message: decision.explanation }),
  };
}

/**
 * Runs the loop over Gemini's native route.
 *
 * @param run The environment, model, prompt and tools.
 * @param outcome Filled in as the loop goes, so a run that fails keeps its steps and cost.
 * @returns The answer and what it cost.
 */
export async function runGemini(
  run: AgentRun,
  outcome: AgentOutcome = emptyOutcome(),
): Promise<AgentOutcome> {
  const gate = new ToolGate(run, outcome);
  const { declared, computer, excluded } = geminiTools(run);
  const contents = geminiContents(run.prompt);
  outcome.trajectory.prompt = trajectoryPrompt(run.prompt);
  const path = `/v1beta/models/${run.endpoint.model}:generateContent`;
  while (outcome.steps < run.maxSteps) {
    const body = await callModel(run, outcome, path, {
      contents,
      ...(declared.length > 0 && { tools: declared }),
    });
    const usage = isObject(body.usageMetadata) ? body.usageMetadata : {};
    addTokens(
      outcome,
      tokenCount(usage.promptTokenCount),
      tokenCount(usage.candidatesTokenCount) +
        tokenCount(usage.thoughtsTokenCount),
    );
    const candidate = Array.isArray(body.candidates)
      ? body.candidates[0]
      : undefined;
    const content = isObject(candidate) && isObject(candidate.content)
      ? candidate.content
      : {};
    const parts = (Array.isArray(content.parts) ? content.parts : []).filter(
      isObject,
    );
    contents.push({ role: "model", parts });
    const text = parts.filter((part) =>
      typeof part.text === "string" && part.thought !== true
    ).map((part) => part.text).join("");
    modelSaid(outcome, text);
    const calls = parts.map((part) => part.functionCall).filter(isObject);
    if (calls.length === 0) {
      outcome.answer = text;
      return outcome;
    }
    const responses: JsonObject[] = [];
    for (const call of calls) {
      const name = String(call.name ?? "");
      const { safety_decision: _, ...args } = isObject(call.args)
        ? call.args
        : {};
      const check = safetyCheck(call, isObject(call.args) ? call.args : {});
      if (check) outcome.safetyChecks.push(check);
      const result = await traceToolCall(outcome, name, args, () => {
        if (computer && GEMINI_COMPUTER_FUNCTIONS.includes(name)) {
          return excluded.includes(name)
            ? gate.refuse(name)
            : runComputer(gate, geminiComputerPlan(name, args, run.display));
        }
        // The computer is offered only through `computerUse`.
        if (computer && name === "computer") return gate.refuse(name);
        return gate.callJson(name, args);
      }, check ? [check] : []);
      responses.push(functionResponse(call, result, check !== undefined));
    }
    contents.push({ role: "user", parts: responses });
  }
  outcome.stepLimitReached = true;
  return outcome;
}

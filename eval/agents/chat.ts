/**
 * The chat-completions agent (`POST /v1/chat/completions`): every tool the
 * agent was given is a function; the environment's `computer` tool too, with
 * its own input shape. A tool result is a `tool` message with its text; its
 * images follow in one user message of `image_url` parts, after the turn's
 * last tool message.
 *
 * @module
 */
import type { PromptMessage } from "../tool_host.ts";
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
  tokenCount,
  traceToolCall,
} from "./loop.ts";
import type { JsonObject } from "./model.ts";
import { ToolGate } from "./tool_gate.ts";
import { trajectoryPrompt } from "./trajectory.ts";

/** A chat-completions message (`role`, `content`, `tool_calls`, …). */
export type ChatMessage = Record<string, unknown>;

/**
 * MCP prompt messages as chat messages.
 *
 * @example
 * ```ts
 * import { chatMessages } from "./chat.ts";
 * chatMessages([{ role: "user", content: { type: "text", text: "Hi" } }]);
 * // [{ role: "user", content: "Hi" }]
 * ```
 *
 * @param messages The prompt messages.
 * @returns The chat messages, one per prompt message.
 */
export function chatMessages(messages: PromptMessage[]): ChatMessage[] {
  return messages.map((message) => {
    const part = promptPart(message);
    if ("text" in part) return { role: message.role, content: part.text };
    return {
      role: message.role,
      content: [{ type: "image_url", image_url: { url: dataUrl(part.image) } }],
    };
  });
}

/**
 * Runs the loop over chat completions.
 *
 * @param run The environment, model, prompt and tools.
 * @param outcome Filled in as the loop goes, so a run that fails keeps its steps and cost.
 * @returns The answer and what it cost.
 */
export async function runChat(
  run: AgentRun,
  outcome: AgentOutcome = emptyOutcome(),
): Promise<AgentOutcome> {
  const gate = new ToolGate(run, outcome);
  const messages = chatMessages(run.prompt);
  outcome.trajectory.prompt = trajectoryPrompt(run.prompt);
  const tools = run.tools.map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      ...(tool.description && { description: tool.description }),
      parameters: tool.inputSchema,
    },
  }));
  while (outcome.steps < run.maxSteps) {
    const body = await callModel(run, outcome, "/v1/chat/completions", {
      model: run.endpoint.model,
      messages,
      ...(tools.length > 0 && { tools }),
    });
    const usage = isObject(body.usage) ? body.usage : {};
    addTokens(
      outcome,
      tokenCount(usage.prompt_tokens),
      tokenCount(usage.completion_tokens),
    );
    const choice = Array.isArray(body.choices) ? body.choices[0] : undefined;
    const message: JsonObject = isObject(choice) && isObject(choice.message)
      ? choice.message
      : {};
    messages.push(message);
    modelSaid(
      outcome,
      typeof message.content === "string" ? message.content : "",
    );
    const calls = (Array.isArray(message.tool_calls) ? message.tool_calls : [])
      .filter(isObject);
    if (calls.length === 0) {
      outcome.answer = typeof message.content === "string"
        ? message.content
        : "";
      return outcome;
    }
    const images: JsonObject[] = [];
    for (const call of calls) {
      const fn = isObject(call.function) ? call.function : {};
      const name = String(fn.name ?? "");
      const result = await traceToolCall(
        outcome,
        name,
        fn.arguments,
        () => gate.callJson(name, fn.arguments),
      );
      messages.push({
        role: "tool",
        tool_call_id: call.id,
        content: result.text ||
          (result.images.length > 0 ? "(the image follows)" : ""),
      });
      for (const image of result.images) {
        images.push({ type: "image_url", image_url: { url: dataUrl(image) } });
      }
    }
    if (images.length > 0) messages.push({ role: "user", content: images });
  }
  outcome.stepLimitReached = true;
  return outcome;
}

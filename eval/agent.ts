/**
 * The agent loop: chat completions through the gateway (any OpenAI-convention
 * endpoint), with the environment's tools; tool calls go to the environment
 * over MCP, until the model answers or the step limit is reached.
 *
 * @module
 */
import type { AgentTool, Environment, PromptMessage } from "./environment.ts";

/** Where the model is. */
export interface ModelEndpoint {
  /** Base URL of the gateway, e.g. `http://localhost:8080` (`/v1/chat/completions` is added). */
  gatewayUrl: string;
  /** The caller key. */
  key: string;
  /** The model id. */
  model: string;
}

/** What one run of the loop produced. */
export interface AgentOutcome {
  /** The final answer (empty when the step limit cut it short). */
  answer: string;
  /** Model calls made. */
  steps: number;
  /** Tokens over all calls. */
  tokens: { input: number; output: number };
  /** What the gateway charged, micro-USD (sum of `x-gateway-cost`). */
  costMicros: number;
  /** Whether the step limit ended the loop. */
  stepLimitReached: boolean;
}

/** A chat-completions message (`role`, `content`, `tool_calls`, …). */
export type ChatMessage = Record<string, unknown>;

/** An outcome before any model call. */
export function emptyOutcome(): AgentOutcome {
  return {
    answer: "",
    steps: 0,
    tokens: { input: 0, output: 0 },
    costMicros: 0,
    stepLimitReached: false,
  };
}

/** MCP prompt messages as chat messages. */
export function chatMessages(messages: PromptMessage[]): ChatMessage[] {
  return messages.map(({ role, content }) => {
    if (content.type === "text") return { role, content: content.text };
    if (content.type === "image") {
      return {
        role,
        content: [{
          type: "image_url",
          image_url: { url: `data:${content.mimeType};base64,${content.data}` },
        }],
      };
    }
    const resource = content.resource as { text?: string } | undefined;
    return {
      role,
      content: resource?.text ?? JSON.stringify(content),
    };
  });
}

/** A USD amount as the gateway prints it, in micro-USD. */
export function usdToMicros(text: string | null): number {
  if (!text) return 0;
  const value = Number(text.replace(/^\$/, ""));
  return Number.isFinite(value) ? Math.round(value * 1_000_000) : 0;
}

/**
 * Runs the loop for one prompt.
 *
 * @param env The environment (tool calls).
 * @param endpoint The gateway, key and model.
 * @param prompt The scenario's prompt messages.
 * @param tools The tools the agent may use.
 * @param options Step limit, the trace id every call carries, abort signal.
 * @returns The answer and what it cost.
 */
export async function runAgent(
  env: Environment,
  endpoint: ModelEndpoint,
  prompt: PromptMessage[],
  tools: AgentTool[],
  options: { maxSteps: number; traceId: string; signal?: AbortSignal },
): Promise<AgentOutcome> {
  const messages = chatMessages(prompt);
  const outcome = emptyOutcome();
  const declared = tools.map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      ...(tool.description && { description: tool.description }),
      parameters: tool.inputSchema,
    },
  }));
  while (outcome.steps < options.maxSteps) {
    options.signal?.throwIfAborted();
    outcome.steps++;
    const response = await fetch(
      `${endpoint.gatewayUrl.replace(/\/$/, "")}/v1/chat/completions`,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${endpoint.key}`,
          "content-type": "application/json",
          "trace-id": options.traceId,
        },
        body: JSON.stringify({
          model: endpoint.model,
          messages,
          ...(declared.length > 0 && { tools: declared }),
        }),
        signal: options.signal,
      },
    );
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      const message = body?.error?.message ?? response.statusText;
      throw new Error(`The model call failed (${response.status}): ${message}`);
    }
    outcome.costMicros += usdToMicros(response.headers.get("x-gateway-cost"));
    outcome.tokens.input += body.usage?.prompt_tokens ?? 0;
    outcome.tokens.output += body.usage?.completion_tokens ?? 0;
    const message = body.choices?.[0]?.message ?? {};
    messages.push(message);
    const calls = (message.tool_calls ?? []) as {
      id: string;
      function: { name: string; arguments: string };
    }[];
    if (calls.length === 0) {
      outcome.answer = typeof message.content === "string"
        ? message.content
        : "";
      return outcome;
    }
    for (const call of calls) {
      let text: string;
      try {
        const args = JSON.parse(call.function.arguments || "{}");
        text = (await env.callTool(call.function.name, args, options.signal))
          .text;
      } catch (error) {
        text = `Error: ${error instanceof Error ? error.message : error}`;
      }
      messages.push({ role: "tool", tool_call_id: call.id, content: text });
    }
  }
  outcome.stepLimitReached = true;
  return outcome;
}

/**
 * Anthropic's Messages API (`POST /v1/messages`), as the simulator speaks it,
 * streamed and not.
 *
 * Keys come from `x-api-key` (or `Authorization: Bearer`); errors are
 * `{type: "error", error: {type, message}, request_id}`. As in the real API,
 * `usage.input_tokens` counts only the uncached part of the prompt: the whole
 * prompt is `input_tokens + cache_creation_input_tokens + cache_read_input_tokens`.
 * Images (also inside `tool_result`) are billed from their size.
 *
 * The computer-use agent plays when a computer tool is declared (the
 * `computer_toolset_20260801` toolset, or a `computer_*` tool; see
 * `anthropic_computer.ts`): it answers `tool_use` blocks (several per turn
 * for the toolset's members) and stops with `tool_use`; screenshots come
 * back as `image` blocks in `tool_result`s. What the model's catalog facts
 * say it refuses is refused first (`anthropic_rules.ts`).
 *
 * @module
 */

import { errorTypeOf } from "../conventions.ts";
import { asArray, isObject, type Json } from "./_json.ts";
import {
  computerActionsIn,
  computerBlocks,
  type ComputerTool,
  computerToolOf,
  showsThinking,
  thinkingBlock,
} from "./anthropic_computer.ts";
import { streamBlocks } from "./anthropic_stream.ts";
import { givesInstructions, planComputerUse } from "./computer_use.ts";
import {
  BadRequestError,
  type Dialect,
  type ParsedRequest,
  type RequestContext,
  type Wire,
} from "./request_flow.ts";
import { checkAnthropicRules } from "./anthropic_rules.ts";
import type { SimulatedEvent } from "./answers.ts";
import { imageSizeFromBase64 } from "./image.ts";
import {
  type OutputFormat,
  type Prompt,
  PromptMeter,
  type Reply,
  scriptOf,
  type ToolDeclaration,
} from "./reply.ts";

/**
 * Each status's message, as Anthropic's API writes it; the error `type` is
 * the Anthropic convention's (`conventions.ts`), but for a 503, which the
 * API reports as `overloaded_error` like its 529.
 */
const ERROR_MESSAGES: Record<number, string> = {
  400: "Invalid request",
  401: "invalid x-api-key",
  403: "Your API key does not have permission to use the specified resource",
  404: "Not found",
  413: "Request exceeds the maximum allowed number of bytes",
  429: "Number of requests has exceeded your rate limit",
  500: "Internal server error",
  503: "Overloaded",
  529: "Overloaded",
};

/** Anthropic's HTTP conventions. */
export const anthropicWire: Wire = {
  readKey(request) {
    const key = request.headers.get("x-api-key");
    if (key) return key;
    const match = request.headers.get("authorization")?.match(
      /^Bearer\s+(.+)$/i,
    );
    return match ? match[1].trim() : undefined;
  },
  errorBody(status, message) {
    const type = status === 503
      ? "overloaded_error"
      : errorTypeOf("anthropic", status);
    const known = ERROR_MESSAGES[status] ??
      (status >= 500 ? ERROR_MESSAGES[500] : ERROR_MESSAGES[400]);
    return {
      type: "error",
      error: { type, message: message ?? known },
      request_id: `req_sim${
        crypto.randomUUID().replaceAll("-", "").slice(0, 20)
      }`,
    };
  },
  missingKeyMessage: "x-api-key header is required",
  invalidKeyMessage: "invalid x-api-key",
  eventDelimiter: "\n\n",
};

function blockText(content: unknown): string {
  if (typeof content === "string") return content;
  return asArray(content).map((
    block,
  ) => (isObject(block) && block.type === "text"
    ? String(block.text ?? "")
    : "")
  ).join("");
}

function measureBlocks(meter: PromptMeter, content: unknown): void {
  if (typeof content === "string") return meter.text(content);
  for (const block of asArray(content)) {
    if (!isObject(block)) continue;
    switch (block.type) {
      case "image": {
        const source = isObject(block.source) ? block.source : {};
        meter.image(
          source.type === "base64"
            ? imageSizeFromBase64(source.data)
            : undefined,
        );
        break;
      }
      case "tool_use":
        meter.text(block.name);
        meter.json(block.input);
        break;
      case "tool_result":
        measureBlocks(meter, block.content);
        break;
      case "thinking":
        meter.text(block.thinking);
        break;
      case "document":
        meter.json(block.source);
        break;
      default:
        meter.text(block.text);
    }
  }
}

/**
 * The structured output asked for: `output_config.format` (GA) or the beta's
 * `output_format` (header `structured-outputs-2025-11-13`), both
 * `{type: "json_schema", schema}`.
 */
function outputFormatOf(
  body: Json,
  meter: PromptMeter,
): OutputFormat | undefined {
  const config = body.output_config;
  if (config !== undefined && config !== null && !isObject(config)) {
    throw new BadRequestError("output_config: Input should be an object");
  }
  const [where, format] = isObject(config) && config.format != null
    ? ["output_config.format", config.format]
    : ["output_format", body.output_format];
  if (format === undefined || format === null) return undefined;
  if (!isObject(format) || format.type !== "json_schema") {
    throw new BadRequestError(
      `${where}.type: Input should be 'json_schema'`,
    );
  }
  if (!isObject(format.schema)) {
    throw new BadRequestError(`${where}.schema: Field required`);
  }
  meter.json(format.schema);
  return { kind: "json", schema: format.schema };
}

function parseMessages(
  body: Json,
  context: RequestContext,
): { prompt: Prompt; model: string; computer?: ComputerTool } {
  if (typeof body.model !== "string" || body.model === "") {
    throw new BadRequestError("model: Field required");
  }
  checkAnthropicRules(body, context.headers, context.model(body.model));
  if (
    typeof body.max_tokens !== "number" || !Number.isInteger(body.max_tokens) ||
    body.max_tokens < 1
  ) {
    throw new BadRequestError("max_tokens: Field required");
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    throw new BadRequestError("messages: at least one message is required");
  }
  const meter = new PromptMeter("anthropic");
  measureBlocks(meter, body.system);
  const toolNames = new Map<string, string>();
  const toolUses: string[] = [];
  let lastUserText = "";
  let firstUserText: string | undefined;
  let planText: string | undefined;
  for (const message of body.messages) {
    if (
      !isObject(message) ||
      (message.role !== "user" && message.role !== "assistant")
    ) {
      throw new BadRequestError(
        `messages: Input tag "${
          isObject(message) ? message.role : message
        }" is not a valid role`,
      );
    }
    measureBlocks(meter, message.content);
    for (const block of asArray(message.content)) {
      if (isObject(block) && block.type === "tool_use") {
        toolNames.set(String(block.id), String(block.name));
        toolUses.push(String(block.name));
      }
    }
    if (message.role === "user") {
      lastUserText = blockText(message.content);
      firstUserText ??= lastUserText;
      if (planText === undefined && givesInstructions(lastUserText)) {
        planText = lastUserText;
      }
    }
  }
  const last = body.messages[body.messages.length - 1] as Json;
  const result = last.role === "user"
    ? asArray(last.content).find((block) =>
      isObject(block) && block.type === "tool_result"
    ) as Json | undefined
    : undefined;
  const toolResult = result
    ? {
      name: toolNames.get(String(result.tool_use_id)),
      text: typeof result.content === "string"
        ? result.content
        : blockText(result.content),
    }
    : undefined;

  const tools: ToolDeclaration[] = [];
  let computer: ComputerTool | undefined;
  for (const tool of asArray(body.tools)) {
    // A toolset entry carries no name: its members are named by the API.
    if (
      !isObject(tool) ||
      (typeof tool.name !== "string" && !TOOLSET.test(String(tool.type)))
    ) {
      throw new BadRequestError("tools: each tool needs a name");
    }
    meter.json(tool);
    computer ??= computerToolOf(tool);
    if (tool.input_schema !== undefined && typeof tool.name === "string") {
      tools.push({ name: tool.name, schema: tool.input_schema });
    }
  }
  const outputFormat = outputFormatOf(body, meter);
  const plan = computer &&
    planComputerUse(planText ?? "", computer.screen, "anthropic", {
      zoom: computer.zoom,
    });
  const choice = isObject(body.tool_choice) ? body.tool_choice : {};
  const forcedTool = choice.type === "any"
    ? tools[0]?.name
    : choice.type === "tool"
    ? String(choice.name)
    : undefined;
  return {
    model: body.model,
    computer,
    prompt: {
      ...meter.size(),
      lastUserText,
      toolResult,
      tools,
      forcedTool,
      toolsDisabled: choice.type === "none",
      maxOutputTokens: body.max_tokens,
      script: scriptOf(firstUserText ?? "", tools),
      calledTools: toolUses,
      outputFormat,
      computer: plan && computer && {
        plan,
        done: body.messages.reduce(
          (count: number, message) =>
            count +
            (isObject(message) && message.role === "assistant"
              ? computerActionsIn(message.content, computer)
              : 0),
          0,
        ),
        batched: computer.toolset,
      },
    },
  };
}

/** A toolset entry's type: it declares members, not a named tool. */
const TOOLSET = /^[a-z]+_toolset_\d{8}$/;

const STOP_REASON: Record<Reply["stop"], string> = {
  end: "end_turn",
  length: "max_tokens",
  tool: "tool_use",
};

function inputUsage(reply: Reply): Json {
  return {
    input_tokens: reply.inputTokens - reply.cachedTokens -
      reply.cacheCreationTokens,
    cache_creation_input_tokens: reply.cacheCreationTokens,
    cache_read_input_tokens: reply.cachedTokens,
  };
}

function fullUsage(reply: Reply): Json {
  return {
    ...inputUsage(reply),
    cache_creation: {
      ephemeral_5m_input_tokens: reply.cacheCreationTokens,
      ephemeral_1h_input_tokens: 0,
    },
    output_tokens: reply.outputTokens,
    service_tier: "standard",
  };
}

function messagesRequest(body: Json, context: RequestContext): ParsedRequest {
  const facts = typeof body.model === "string"
    ? context.model(body.model)
    : undefined;
  const { prompt, model, computer } = parseMessages(body, context);
  const message = (
    id: string,
    content: Json[],
    reply: Reply,
    done: boolean,
  ): Json => ({
    id: `msg_${id}`,
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: done ? STOP_REASON[reply.stop] : null,
    stop_sequence: null,
    usage: done ? fullUsage(reply) : { ...fullUsage(reply), output_tokens: 1 },
  });
  const blocks = (reply: Reply, id: string): Json[] => {
    const { content } = reply;
    if (content.kind === "computer" && computer) {
      return computerBlocks(content, {
        tool: computer,
        id,
        thinkingBetweenTools: facts?.features?.thinkingBetweenTools === true,
        showThinking: showsThinking(body),
      });
    }
    if (content.kind === "tool") {
      const use = {
        type: "tool_use",
        id: `toolu_${id}`,
        name: content.name,
        input: JSON.parse(content.arguments),
      };
      // Text between tool calls comes as thinking on such a model.
      return facts?.features?.thinkingBetweenTools
        ? [
          thinkingBlock(`Next: call ${content.name}.`, id, showsThinking(body)),
          use,
        ]
        : [use];
    }
    return [{
      type: "text",
      text: content.kind === "text" ? content.text : "",
    }];
  };
  return {
    prompt,
    stream: body.stream === true,
    body: (reply, id) => message(id, blocks(reply, id), reply, true),
    events(reply, id) {
      const events: SimulatedEvent[] = [];
      const push = (type: string, fields: Json = {}) => {
        events.push({ event: type, data: JSON.stringify({ type, ...fields }) });
      };
      push("message_start", { message: message(id, [], reply, false) });
      streamBlocks(blocks(reply, id), push);
      push("message_delta", {
        delta: { stop_reason: STOP_REASON[reply.stop], stop_sequence: null },
        usage: { ...inputUsage(reply), output_tokens: reply.outputTokens },
      });
      push("message_stop");
      return events;
    },
  };
}

/** The Messages endpoint (`POST /v1/messages`). */
export const messages: Dialect = {
  wire: anthropicWire,
  parse: (body, _url, context) => messagesRequest(body as Json, context),
};

/**
 * The OpenAI Chat Completions request as the gateway's `chat` route takes
 * it: its types, the zod schema that validates it (reused by route
 * validation), and {@linkcode TranslationError}, for a request a translator
 * cannot express upstream. The answer's types (a completion, a stream chunk,
 * an error, usage) are in `chat_response_types.ts`.
 *
 * @module
 */

import { z } from "zod";
import { GatewayError } from "../../errors.ts";

/** A text part of a message's content. */
export interface ChatTextPart {
  /** Part kind. */
  type: "text";
  /** The text. */
  text: string;
}

/** An image part of a user message: a `data:` URL or an http(s) URL. */
export interface ChatImagePart {
  /** Part kind. */
  type: "image_url";
  /** The image location. */
  image_url: { url: string; detail?: string };
}

/** An audio part of a user message (base64 audio). */
export interface ChatAudioPart {
  /** Part kind. */
  type: "input_audio";
  /** The audio. */
  input_audio: { data: string; format: string };
}

/** A file part of a user message: inline `file_data` (a `data:` URL) or an uploaded `file_id`. */
export interface ChatFilePart {
  /** Part kind. */
  type: "file";
  /** The file. */
  file: { file_data?: string; file_id?: string; filename?: string };
}

/** A refusal part of an assistant message. */
export interface ChatRefusalPart {
  /** Part kind. */
  type: "refusal";
  /** The refusal text. */
  refusal: string;
}

/** Any part a user message can hold. */
export type ChatUserPart =
  | ChatTextPart
  | ChatImagePart
  | ChatAudioPart
  | ChatFilePart;

/** A function call the assistant made. */
export interface ChatToolCall {
  /** Id the matching `tool` message refers to. */
  id: string;
  /** Always `"function"`. */
  type: "function";
  /** The function and its arguments, a JSON string. */
  function: { name: string; arguments: string };
  /**
   * Provider data carried with the call, as Gemini's own OpenAI-compatible
   * endpoint does: `{google: {thought_signature}}`.
   */
  extra_content?: { google?: { thought_signature?: string } };
}

/**
 * One piece of a model's reasoning, as OpenRouter's chat convention carries
 * it (`reasoning_details`): readable thinking with the signature that proves
 * it, or thinking the provider returns encrypted. A caller sends them back
 * unchanged on the assistant message, which a model that reasons between
 * tool calls needs. `index` is the piece's position among the answer's
 * blocks; stream deltas of one index join in order.
 */
export type ChatReasoningDetail =
  | {
    type: "reasoning.text";
    text: string;
    signature?: string | null;
    format?: string;
    index?: number;
  }
  | {
    type: "reasoning.encrypted";
    data: string;
    format?: string;
    index?: number;
  }
  | {
    type: "reasoning.summary";
    summary: string;
    format?: string;
    index?: number;
  };

/** A `system` or `developer` message. */
export interface ChatSystemMessage {
  /** Who speaks. */
  role: "system" | "developer";
  /** The instructions. */
  content: string | ChatTextPart[];
  /** Optional participant name. */
  name?: string;
}

/** A `user` message. */
export interface ChatUserMessage {
  /** Who speaks. */
  role: "user";
  /** Text, or parts. */
  content: string | ChatUserPart[];
  /** Optional participant name. */
  name?: string;
}

/** An `assistant` message: text, tool calls, or both. */
export interface ChatAssistantMessage {
  /** Who speaks. */
  role: "assistant";
  /** Text, or parts; `null` when the message is only tool calls. */
  content?: string | (ChatTextPart | ChatRefusalPart)[] | null;
  /** Function calls the assistant made. */
  tool_calls?: ChatToolCall[];
  /** Refusal text, if the model refused. */
  refusal?: string | null;
  /** The reasoning the model returned with this turn, sent back unchanged. */
  reasoning_details?: ChatReasoningDetail[];
  /** Optional participant name. */
  name?: string;
}

/** A `tool` message: the result of one tool call. */
export interface ChatToolMessage {
  /** Who speaks. */
  role: "tool";
  /** The result. */
  content: string | ChatTextPart[];
  /** The `id` of the tool call this answers. */
  tool_call_id: string;
}

/** Any chat message. */
export type ChatMessage =
  | ChatSystemMessage
  | ChatUserMessage
  | ChatAssistantMessage
  | ChatToolMessage;

/** A function tool the model may call. */
export interface ChatTool {
  /** Always `"function"`. */
  type: "function";
  /** The function. */
  function: {
    name: string;
    description?: string;
    /** JSON schema of the arguments object. */
    parameters?: Record<string, unknown>;
    strict?: boolean | null;
  };
}

/** A custom tool: the model calls it with free text (optionally in a grammar), not JSON. */
export interface ChatCustomTool {
  /** Always `"custom"`. */
  type: "custom";
  /** The tool. */
  custom: { name: string; description?: string; format?: unknown };
}

/** How the model may use tools. */
export type ChatToolChoice =
  | "auto"
  | "none"
  | "required"
  | { type: "function"; function: { name: string } }
  | { type: "custom"; custom: { name: string } }
  | {
    type: "allowed_tools";
    allowed_tools: {
      mode: "auto" | "required";
      /** The tools the model may call: `{type: "function", function: {name}}`. */
      tools: Record<string, unknown>[];
    };
  };

/** The body of `POST /chat/completions`. Unknown fields are kept for native passthrough. */
export interface ChatRequest {
  /** Model id. */
  model: string;
  /** The conversation. */
  messages: ChatMessage[];
  /** Stream the answer as server-sent events. */
  stream?: boolean | null;
  /** Stream options; `include_usage` adds a final usage chunk. */
  stream_options?: { include_usage?: boolean | null } | null;
  /** Legacy output token cap. */
  max_tokens?: number | null;
  /** Output token cap; wins over `max_tokens`. */
  max_completion_tokens?: number | null;
  /** Sampling temperature, 0 to 2. */
  temperature?: number | null;
  /** Nucleus sampling. */
  top_p?: number | null;
  /** Stop sequences. */
  stop?: string | string[] | null;
  /** Number of choices. */
  n?: number | null;
  /** Tools the model may call. */
  tools?: (ChatTool | ChatCustomTool)[];
  /** How the model may use tools. */
  tool_choice?: ChatToolChoice;
  /** Whether the model may call several tools in one turn. */
  parallel_tool_calls?: boolean | null;
  /** Output format. */
  response_format?:
    | { type: "text" }
    | { type: "json_object" }
    | {
      type: "json_schema";
      json_schema: {
        name: string;
        description?: string;
        schema?: Record<string, unknown>;
        strict?: boolean | null;
      };
    };
  /** How much the model may reason: `none`, `minimal`, `low`, `medium`, `high`, … */
  reasoning_effort?: string | null;
  /** A stable id of the end user, for abuse reports (replaces `user`). */
  safety_identifier?: string | null;
  /** Seed for deterministic sampling. */
  seed?: number | null;
  /** Presence penalty. */
  presence_penalty?: number | null;
  /** Frequency penalty. */
  frequency_penalty?: number | null;
  /** End-user id. */
  user?: string;
}

const textPart = z.looseObject({ type: z.literal("text"), text: z.string() });
const imagePart = z.looseObject({
  type: z.literal("image_url"),
  image_url: z.looseObject({ url: z.string(), detail: z.string().optional() }),
});
const audioPart = z.looseObject({
  type: z.literal("input_audio"),
  input_audio: z.looseObject({ data: z.string(), format: z.string() }),
});
const filePart = z.looseObject({
  type: z.literal("file"),
  file: z.looseObject({
    file_data: z.string().optional(),
    file_id: z.string().optional(),
    filename: z.string().optional(),
  }),
});
const refusalPart = z.looseObject({
  type: z.literal("refusal"),
  refusal: z.string(),
});
const textContent = z.union([z.string(), z.array(textPart)]);

const toolCall = z.looseObject({
  id: z.string(),
  type: z.literal("function"),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
  extra_content: z.looseObject({
    google: z.looseObject({ thought_signature: z.string().optional() })
      .optional(),
  }).optional(),
});

const reasoningPlace = {
  format: z.string().optional(),
  index: z.number().int().nonnegative().optional(),
};
const reasoningDetail = z.discriminatedUnion("type", [
  z.looseObject({
    type: z.literal("reasoning.text"),
    text: z.string(),
    signature: z.string().nullish(),
    ...reasoningPlace,
  }),
  z.looseObject({
    type: z.literal("reasoning.encrypted"),
    data: z.string(),
    ...reasoningPlace,
  }),
  z.looseObject({
    type: z.literal("reasoning.summary"),
    summary: z.string(),
    ...reasoningPlace,
  }),
]);

const message = z.discriminatedUnion("role", [
  z.looseObject({
    role: z.enum(["system", "developer"]),
    content: textContent,
    name: z.string().optional(),
  }),
  z.looseObject({
    role: z.literal("user"),
    content: z.union([
      z.string(),
      z.array(
        z.discriminatedUnion("type", [
          textPart,
          imagePart,
          audioPart,
          filePart,
        ]),
      ),
    ]),
    name: z.string().optional(),
  }),
  z.looseObject({
    role: z.literal("assistant"),
    content: z.union([
      z.string(),
      z.array(z.discriminatedUnion("type", [textPart, refusalPart])),
    ])
      .nullish(),
    tool_calls: z.array(toolCall).optional(),
    refusal: z.string().nullish(),
    reasoning_details: z.array(reasoningDetail).optional(),
    name: z.string().optional(),
  }),
  z.looseObject({
    role: z.literal("tool"),
    content: textContent,
    tool_call_id: z.string(),
  }),
]);

const nullableNumber = z.number().nullish();

/** One reason a request body failed validation. */
export interface ChatValidationIssue {
  /** Where in the body, e.g. `["messages", 0, "content"]`. */
  path: PropertyKey[];
  /** What is wrong. */
  message: string;
}

/**
 * Validates request bodies. Typed structurally (it is a zod schema underneath)
 * so the published API names no zod type.
 */
export interface ChatRequestValidator {
  /** Parses `body`, throwing on the first invalid body. */
  parse(body: unknown): ChatRequest;
  /** Parses `body`, reporting every issue instead of throwing. */
  safeParse(
    body: unknown,
  ): { success: true; data: ChatRequest } | {
    success: false;
    error: { issues: ChatValidationIssue[] };
  };
}

/**
 * Validates a chat completions request body. Unknown top-level and message
 * fields are kept, so a native passthrough forwards them untouched.
 *
 * @example Validate a body
 * ```ts
 * import { chatRequestSchema } from "./chat_types.ts";
 * const parsed = chatRequestSchema.safeParse({ model: "gpt-4o", messages: [{ role: "user", content: "Hi" }] });
 * console.log(parsed.success); // true
 * ```
 */
export const chatRequestSchema: ChatRequestValidator = z.looseObject({
  model: z.string().min(1),
  messages: z.array(message).min(1),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() })
    .nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  temperature: nullableNumber,
  top_p: nullableNumber,
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  // OpenAI's most; each choice is billed, and held for.
  n: z.number().int().positive().max(128).nullish(),
  tools: z.array(z.discriminatedUnion("type", [
    z.looseObject({
      type: z.literal("function"),
      function: z.looseObject({
        name: z.string(),
        description: z.string().optional(),
        parameters: z.record(z.string(), z.unknown()).optional(),
        strict: z.boolean().nullish(),
      }),
    }),
    z.looseObject({
      type: z.literal("custom"),
      custom: z.looseObject({
        name: z.string(),
        description: z.string().optional(),
      }),
    }),
  ])).optional(),
  tool_choice: z.union([
    z.enum(["auto", "none", "required"]),
    z.looseObject({
      type: z.literal("function"),
      function: z.looseObject({ name: z.string() }),
    }),
    z.looseObject({
      type: z.literal("custom"),
      custom: z.looseObject({ name: z.string() }),
    }),
    z.looseObject({
      type: z.literal("allowed_tools"),
      allowed_tools: z.looseObject({
        mode: z.enum(["auto", "required"]),
        tools: z.array(z.looseObject({})),
      }),
    }),
  ]).optional(),
  parallel_tool_calls: z.boolean().nullish(),
  response_format: z.discriminatedUnion("type", [
    z.looseObject({ type: z.literal("text") }),
    z.looseObject({ type: z.literal("json_object") }),
    z.looseObject({
      type: z.literal("json_schema"),
      json_schema: z.looseObject({
        name: z.string(),
        description: z.string().optional(),
        schema: z.record(z.string(), z.unknown()).optional(),
        strict: z.boolean().nullish(),
      }),
    }),
  ]).optional(),
  seed: nullableNumber,
  presence_penalty: nullableNumber,
  frequency_penalty: nullableNumber,
  user: z.string().optional(),
  reasoning_effort: z.string().nullish(),
  safety_identifier: z.string().nullish(),
});

/**
 * A chat request that cannot be expressed in the upstream convention (an audio
 * part for Anthropic, a tool result with no matching call): a 400
 * {@linkcode GatewayError} naming the request field at fault as `param`, so the
 * gateway answers it like any other invalid request.
 */
export class TranslationError extends GatewayError {
  /**
   * Creates the error.
   *
   * @param message What cannot be translated.
   * @param param Where in the request it is, as OpenAI's `param`: `messages[2].content[1]`.
   */
  constructor(message: string, param: string) {
    super(400, message, { code: "unsupported_content", param });
    this.name = "TranslationError";
  }
}

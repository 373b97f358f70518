/**
 * What the chat translators do with every field of a chat completions
 * request: translate it to the target's own form, leave it out (only where
 * it cannot change the answer, with the reason), or refuse it with a 400
 * naming it. A field the table does not know is refused, so nothing a caller
 * sends is dropped without a word. `docs/gateway.md` shows the same table.
 *
 * @module
 */

import type { SchemaTarget } from "./_json_schema.ts";
import { type ChatRequest, TranslationError } from "./chat_types.ts";

/** One translator's decision for one field. */
export type FieldRule =
  | { kind: "translated"; how: string }
  | { kind: "ignored"; why: string }
  | {
    kind: "refused";
    why: string;
    /** Values that change nothing (the field's default) and so pass. */
    noEffect?: (value: unknown) => boolean;
    /** Those values, for the docs. */
    passes?: string;
  };

const translated = (how: string): FieldRule => ({ kind: "translated", how });
const ignored = (why: string): FieldRule => ({ kind: "ignored", why });
const refused = (
  why: string,
  noEffect?: (value: unknown) => boolean,
  passes?: string,
): FieldRule => ({
  kind: "refused",
  why,
  ...(noEffect ? { noEffect, passes } : {}),
});

/** Refused unless its value is `value`, which changes nothing. */
const refusedUnless = (why: string, value: unknown): FieldRule =>
  refused(why, (sent) => sent === value, JSON.stringify(value));
const emptyObject = (value: unknown) =>
  typeof value === "object" && value !== null &&
  Object.keys(value).length === 0;
const textOnly = (value: unknown) =>
  Array.isArray(value) && value.every((modality) => modality === "text");

/** Both translators, one rule. */
const both = (rule: FieldRule): Record<SchemaTarget, FieldRule> => ({
  anthropic: rule,
  gemini: rule,
});

/**
 * Every top-level chat completions field (OpenAI's API as of
 * `openai@7.57`) and what each translator does with it. `null` means absent
 * for every field, as in OpenAI's API.
 */
export const CHAT_FIELDS: Readonly<
  Record<string, Readonly<Record<SchemaTarget, FieldRule>>>
> = {
  model: both(translated("the catalog's upstream model id")),
  messages: {
    anthropic: translated(
      "system/developer → system; tool → tool_result; turns merged to alternate",
    ),
    gemini: translated(
      "system/developer → systemInstruction; assistant → model; tool → functionResponse",
    ),
  },
  stream: {
    anthropic: translated("stream"),
    gemini: translated(":streamGenerateContent?alt=sse"),
  },
  stream_options: both(translated(
    "include_usage → the final usage chunk; include_obfuscation is left out (padding against a side channel, no effect on the answer)",
  )),
  max_tokens: {
    anthropic: translated("max_tokens"),
    gemini: translated("generationConfig.maxOutputTokens"),
  },
  max_completion_tokens: {
    anthropic: translated("max_tokens (wins over max_tokens)"),
    gemini: translated("generationConfig.maxOutputTokens"),
  },
  temperature: {
    anthropic: translated(
      "temperature; above 1 (Anthropic's maximum) is a 400",
    ),
    gemini: translated("generationConfig.temperature"),
  },
  top_p: {
    anthropic: translated(
      "top_p; beside temperature (which recent Claude models refuse together) a 400 unless it is 1, which changes nothing",
    ),
    gemini: translated("generationConfig.topP"),
  },
  stop: {
    anthropic: translated("stop_sequences"),
    gemini: translated("generationConfig.stopSequences"),
  },
  n: both(translated("1 only; more choices are a 400")),
  tools: {
    anthropic: translated(
      "function tools → tools (input_schema); strict → strict, its schema checked like response_format's; custom tools are a 400",
    ),
    gemini: translated(
      "function tools → functionDeclarations (parametersJsonSchema); strict → functionCallingConfig mode VALIDATED, its schema checked like response_format's; custom tools are a 400",
    ),
  },
  tool_choice: {
    anthropic: translated(
      "auto/none/any/tool; allowed_tools → only those tools, with its mode; a custom tool is a 400",
    ),
    gemini: translated(
      "functionCallingConfig AUTO/NONE/ANY (+ allowedFunctionNames); allowed_tools → only those tools, with its mode; a custom tool is a 400",
    ),
  },
  parallel_tool_calls: {
    anthropic: translated("false → tool_choice.disable_parallel_tool_use"),
    gemini: refusedUnless(
      "Gemini has no switch to keep the model to one call per turn",
      true,
    ),
  },
  response_format: {
    anthropic: translated(
      "json_schema → output_config.format {type: json_schema, schema}; json_object is a 400 (Anthropic only constrains output to a schema)",
    ),
    gemini: translated(
      "json_object → responseMimeType application/json; json_schema → that and responseJsonSchema",
    ),
  },
  reasoning_effort: {
    anthropic: refusedUnless(
      "Claude's thinking is set per model (a token budget or adaptive with an effort), not by an effort name the gateway could map; thinking blocks do travel as reasoning_details",
      "none",
    ),
    gemini: translated(
      "thinkingConfig: Gemini 3 thinkingLevel (same name), Gemini 2.5 thinkingBudget (none 0, low 1024, medium 8192, high 24576)",
    ),
  },
  seed: {
    anthropic: refused("Anthropic has no sampling seed"),
    gemini: translated("generationConfig.seed"),
  },
  presence_penalty: {
    anthropic: refusedUnless("Anthropic has no presence penalty", 0),
    gemini: translated("generationConfig.presencePenalty"),
  },
  frequency_penalty: {
    anthropic: refusedUnless("Anthropic has no frequency penalty", 0),
    gemini: translated("generationConfig.frequencyPenalty"),
  },
  logit_bias: both(
    refused("the upstream takes no token biases", emptyObject, "{}"),
  ),
  logprobs: both(
    refusedUnless("the translated answer carries no log probabilities", false),
  ),
  top_logprobs: both(
    refusedUnless("the translated answer carries no log probabilities", 0),
  ),
  verbosity: both(
    refusedUnless("the upstream has no verbosity setting", "medium"),
  ),
  modalities: both(
    refused("the translated answer is text only", textOnly, '["text"]'),
  ),
  audio: both(refused("the translated answer is text only")),
  web_search_options: both(
    refused("the gateway does not translate web search to this upstream"),
  ),
  functions: both(refused("use tools, which the gateway translates")),
  function_call: both(refused("use tool_choice, which the gateway translates")),
  moderation: both(
    refused("moderation runs at OpenAI; this upstream has none"),
  ),
  user: {
    anthropic: translated("metadata.user_id"),
    gemini: ignored(
      "an end-user id for abuse reports; Gemini has no field for it and it does not change the answer",
    ),
  },
  safety_identifier: {
    anthropic: translated("metadata.user_id (wins over user)"),
    gemini: ignored(
      "an end-user id for abuse reports; Gemini has no field for it and it does not change the answer",
    ),
  },
  metadata: both(ignored(
    "tags OpenAI stores with the completion for its dashboard; they do not reach the model",
  )),
  store: both(ignored(
    "asks OpenAI to keep the completion; it does not change the answer",
  )),
  service_tier: both(ignored(
    "OpenAI's scheduling and price tier; the answer is the same, and the gateway prices the call from its catalog",
  )),
  prompt_cache_key: both(ignored(
    "a cache routing hint; it does not change the answer",
  )),
  prompt_cache_retention: both(ignored(
    "how long OpenAI keeps a cache entry; it does not change the answer",
  )),
  prompt_cache_options: both(ignored(
    "OpenAI cache breakpoints; they do not change the answer",
  )),
  prediction: both(ignored(
    "a latency hint; OpenAI documents that the answer is the same with or without it",
  )),
};

const TARGET_NAMES: Record<SchemaTarget, string> = {
  anthropic: "Anthropic",
  gemini: "Gemini",
};

/**
 * Refuses every field of `chat` that `target`'s translator cannot carry:
 * refused fields (unless their value changes nothing), fields no rule
 * knows, and message fields with no counterpart.
 *
 * @param chat The validated chat request.
 * @param target The upstream.
 * @throws {TranslationError} A 400 naming the first such field.
 */
export function checkChatFields(
  chat: ChatRequest,
  target: SchemaTarget,
): void {
  for (const [field, value] of Object.entries(chat)) {
    if (value === null || value === undefined) continue;
    const rule = CHAT_FIELDS[field]?.[target];
    if (rule === undefined) {
      throw new TranslationError(
        `Cannot use "${field}" with this model: the gateway does not translate it to ${
          TARGET_NAMES[target]
        }`,
        field,
      );
    }
    if (rule.kind === "refused" && !rule.noEffect?.(value)) {
      throw new TranslationError(
        `Cannot use "${field}" with this model: ${rule.why}`,
        field,
      );
    }
  }
  chat.messages.forEach((message, i) => {
    const fields = message as unknown as Record<string, unknown>;
    for (const field of ["name", "function_call", "audio"]) {
      if (fields[field] === null || fields[field] === undefined) continue;
      throw new TranslationError(
        `Cannot use "${field}" on a message with this model: ${
          TARGET_NAMES[target]
        } has no counterpart`,
        `messages[${i}].${field}`,
      );
    }
  });
}

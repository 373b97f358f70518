/**
 * Claude's thinking blocks and per-model rules in the chat convention,
 * shared by the request, response and stream translators. A thinking block
 * travels as one of OpenRouter's `reasoning_details` (readable thinking with
 * its signature, or redacted thinking as encrypted data), indexed by its
 * position among the answer's blocks so the next request puts it back where
 * it was: Anthropic refuses thinking blocks that were changed or reordered
 * in a tool loop. Pure functions, no I/O.
 *
 * @module
 */
import {
  type ChatReasoningDetail,
  type ChatRequest,
  TranslationError,
} from "./chat_types.ts";
import type { FunctionToolChoice } from "./_shared.ts";

/** The `format` of the reasoning details this gateway writes for Claude (OpenRouter's name for it). */
export const ANTHROPIC_REASONING_FORMAT = "anthropic-claude-v1";

/** A thinking block as Anthropic sends and takes it. */
export type AnthropicThinkingBlock =
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string };

/**
 * The catalog facts the Anthropic translation obeys (a catalog entry is
 * one): a `false` feature is one the model answers 400 to.
 */
export interface AnthropicModelRules {
  /** The catalog's model id, named in the refusal. */
  readonly id: string;
  /** What the model refuses. */
  readonly features?: {
    readonly disabledThinking?: boolean;
    readonly forcedToolChoice?: boolean;
  };
}

/**
 * A response's thinking block as a reasoning detail.
 *
 * @param block A content block of Anthropic's answer.
 * @param index Its position among the answer's blocks.
 * @returns The detail, or `undefined` for a block that is not thinking.
 */
export function reasoningDetailOf(
  answered: { type: string },
  index: number,
): ChatReasoningDetail | undefined {
  const format = ANTHROPIC_REASONING_FORMAT;
  const block = answered as { type: string; [key: string]: unknown };
  if (block.type === "thinking" && typeof block.thinking === "string") {
    return {
      type: "reasoning.text",
      text: block.thinking,
      signature: typeof block.signature === "string" ? block.signature : null,
      format,
      index,
    };
  }
  if (block.type === "redacted_thinking" && typeof block.data === "string") {
    return { type: "reasoning.encrypted", data: block.data, format, index };
  }
  return undefined;
}

/**
 * Puts an assistant message's thinking back among its other blocks, each at
 * the index it came with (pieces without one go first, in order). Pieces in
 * another provider's format, and summaries, are left out: Anthropic checks
 * each block's signature, so only its own can go back.
 *
 * @param blocks The message's text and tool-use blocks, in order.
 * @param details Its `reasoning_details`, as the caller sent them back.
 * @param param Where the details are in the request, for errors.
 * @returns The blocks with the thinking in place.
 * @throws {TranslationError} For readable thinking without its signature.
 */
export function withThinking<Block>(
  blocks: readonly Block[],
  details: readonly ChatReasoningDetail[] | undefined,
  param: string,
): (Block | AnthropicThinkingBlock)[] {
  const thinking: { index: number; block: AnthropicThinkingBlock }[] = [];
  (details ?? []).forEach((detail, k) => {
    const format = detail.format ?? ANTHROPIC_REASONING_FORMAT;
    if (format !== ANTHROPIC_REASONING_FORMAT) return;
    const index = detail.index ?? -1;
    if (detail.type === "reasoning.encrypted") {
      thinking.push({
        index,
        block: { type: "redacted_thinking", data: detail.data },
      });
    } else if (detail.type === "reasoning.text") {
      if (!detail.signature) {
        throw new TranslationError(
          "Cannot send thinking back to this model without its signature: send the reasoning_details of the answer unchanged",
          `${param}[${k}].signature`,
        );
      }
      thinking.push({
        index,
        block: {
          type: "thinking",
          thinking: detail.text,
          signature: detail.signature,
        },
      });
    }
  });
  // A stable sort keeps pieces of equal index in the order they came.
  thinking.sort((a, b) => a.index - b.index);
  const placed: (Block | AnthropicThinkingBlock)[] = [];
  let next = 0;
  let other = 0;
  while (next < thinking.length || other < blocks.length) {
    const piece = thinking[next];
    if (piece && (other >= blocks.length || piece.index <= placed.length)) {
      placed.push(piece.block);
      next++;
    } else {
      placed.push(blocks[other++]);
    }
  }
  return placed;
}

/**
 * Refuses, before anything is sent, what the model's catalog entry says it
 * refuses: a forced tool choice (`required` or a named function) where
 * `forcedToolChoice` is `false`, and `reasoning_effort: "none"` (thinking
 * off) where `disabledThinking` is `false`. The provider would answer 400 in
 * its own words; the caller hears the rule, in its own convention.
 *
 * @param chat The chat request.
 * @param choice Its function tool choice, as read.
 * @param rules The model's catalog facts.
 * @throws {TranslationError} Naming the model, the field and the rule.
 */
export function checkModelRules(
  chat: Pick<ChatRequest, "reasoning_effort">,
  choice: FunctionToolChoice | undefined,
  rules: AnthropicModelRules | undefined,
): void {
  const features = rules?.features;
  if (!rules || !features) return;
  const forced = choice === "required" || typeof choice === "object";
  if (forced && features.forcedToolChoice === false) {
    const asked = choice === "required"
      ? '"required"'
      : `function "${choice.function.name}"`;
    throw new TranslationError(
      `Cannot use "tool_choice" ${asked} with model "${rules.id}": the model refuses forced tool use; send "auto" and ask for the tool in the prompt`,
      "tool_choice",
    );
  }
  if (chat.reasoning_effort === "none" && features.disabledThinking === false) {
    throw new TranslationError(
      `Cannot use "reasoning_effort" "none" with model "${rules.id}": the model refuses to turn thinking off; leave reasoning_effort out`,
      "reasoning_effort",
    );
  }
}

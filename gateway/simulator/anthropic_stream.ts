/**
 * Anthropic's streamed content blocks: each block of a message as
 * `content_block_start` (the block with its content emptied),
 * `content_block_delta`s (`text_delta`, `input_json_delta`,
 * `thinking_delta` then `signature_delta`) and `content_block_stop`, with a
 * `ping` after the first start, as the Messages API streams them.
 *
 * @module
 */

import type { Json } from "./_json.ts";
import { splitEvenly, splitText } from "./tokens.ts";

/**
 * Appends one event.
 *
 * @param type The event type.
 * @param fields Its fields besides `type`.
 */
export type PushEvent = (type: string, fields?: Json) => void;

/**
 * Streams content blocks.
 *
 * @param blocks The message's blocks, in order.
 * @param push Appends an event.
 */
export function streamBlocks(blocks: readonly Json[], push: PushEvent): void {
  blocks.forEach((block, index) => {
    if (block.type === "text") {
      push("content_block_start", {
        index,
        content_block: { type: "text", text: "" },
      });
      if (index === 0) push("ping");
      for (const text of splitText(String(block.text))) {
        push("content_block_delta", {
          index,
          delta: { type: "text_delta", text },
        });
      }
    } else if (block.type === "thinking") {
      push("content_block_start", {
        index,
        content_block: { type: "thinking", thinking: "", signature: "" },
      });
      if (index === 0) push("ping");
      const thinking = String(block.thinking);
      if (thinking !== "") {
        push("content_block_delta", {
          index,
          delta: { type: "thinking_delta", thinking },
        });
      }
      push("content_block_delta", {
        index,
        delta: { type: "signature_delta", signature: block.signature },
      });
    } else {
      push("content_block_start", {
        index,
        content_block: { ...block, input: {} },
      });
      if (index === 0) push("ping");
      for (
        const partial_json of splitEvenly(JSON.stringify(block.input), 4)
      ) {
        push("content_block_delta", {
          index,
          delta: { type: "input_json_delta", partial_json },
        });
      }
    }
    push("content_block_stop", { index });
  });
}

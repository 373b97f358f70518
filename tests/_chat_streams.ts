/** Helpers for the chat translators' unit tests: replaying recorded upstream streams. */
import assert from "node:assert/strict";
import { createParser } from "eventsource-parser";
import type { ChatStreamBase } from "../gateway/upstream/translate/_shared.ts";
import {
  type ChatRequest,
  chatRequestSchema,
} from "../gateway/upstream/translate/chat_types.ts";
import {
  type ChatCompletionChunk,
  type ChatStreamPiece,
  isChatStreamError,
  type UpstreamEvent,
} from "../gateway/upstream/translate/chat_response_types.ts";

/** Splits recorded SSE text into events the way the gateway reads an upstream body. */
export function sseEvents(text: string): UpstreamEvent[] {
  const events: UpstreamEvent[] = [];
  const parser = createParser({
    onEvent: (event) => events.push({ event: event.event, data: event.data }),
  });
  parser.feed(text);
  return events;
}

/** Feeds a recorded stream to a translator and ends it. */
export function replay<T extends ChatStreamBase>(
  stream: T,
  text: string,
): { stream: T; pieces: ChatStreamPiece[] } {
  const pieces: ChatStreamPiece[] = [];
  for (const event of sseEvents(text)) pieces.push(...stream.push(event));
  pieces.push(...stream.finish());
  return { stream, pieces };
}

/** The pieces as chunks, failing on an error piece. */
export function chunksOf(pieces: ChatStreamPiece[]): ChatCompletionChunk[] {
  return pieces.map((piece) => {
    assert.ok(
      !isChatStreamError(piece),
      `unexpected error piece ${JSON.stringify(piece)}`,
    );
    return piece;
  });
}

/** A chat request, validated as the gateway validates it. */
export function chat(body: unknown): ChatRequest {
  return chatRequestSchema.parse(body);
}

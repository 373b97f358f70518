/**
 * What the runner reads over HTTP from an environment, bounded before it is
 * buffered: a fetch for the SDK's Streamable HTTP transport whose JSON
 * bodies and server-sent events are read up to the limit and, past it,
 * answered in their place (see `_bounded_read.ts`).
 *
 * @module
 */
import type { FetchLike } from "@modelcontextprotocol/client";
import {
  HEAD_BYTES,
  join,
  lastBytes,
  MAX_MESSAGE_BYTES,
  type Oversized,
  oversizedReply,
  SentRequests,
} from "./_bounded_read.ts";

/**
 * A fetch whose responses are read bounded: a JSON body, or each event of a
 * server-sent event stream, past the limit is read no further and answered
 * in its place ({@linkcode oversizedReply}); any other body past the limit
 * ends in an error.
 *
 * @example
 * ```ts
 * import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
 * import { boundedFetch } from "./_bounded_http.ts";
 *
 * new StreamableHTTPClientTransport(new URL("http://127.0.0.1:8765/mcp"), {
 *   fetch: boundedFetch(),
 * });
 * ```
 *
 * @param limit One message's bytes at most.
 * @returns The fetch to give the transport.
 */
export function boundedFetch(limit: number = MAX_MESSAGE_BYTES): FetchLike {
  return async (url, init) => {
    const requests = new SentRequests();
    let id: string | number | undefined;
    if (typeof init?.body === "string") {
      try {
        const message = JSON.parse(init.body);
        requests.sent(message);
        id = (message as { id?: string | number }).id;
      } catch {
        // not one JSON-RPC request: nothing to answer in its place
      }
    }
    const response = await fetch(url, init);
    if (!response.body) return response;
    const type = response.headers.get("content-type") ?? "";
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    const rebuilt = (body: ReadableStream<Uint8Array> | string) =>
      new Response(body, {
        status: response.status,
        statusText: response.statusText,
        headers,
      });
    if (type.includes("text/event-stream")) {
      return rebuilt(
        response.body.pipeThrough(boundedEvents(requests, limit, id)),
      );
    }
    const read = await readAtMost(response.body, limit);
    if (!read.over) return rebuilt(new TextDecoder().decode(read.bytes));
    const reply = type.includes("json")
      ? oversizedReply(
        { head: read.bytes, tail: new Uint8Array(0), size: read.size },
        requests,
        limit,
        id,
      )
      : undefined;
    if (reply) return rebuilt(JSON.stringify(reply));
    throw new RangeError(
      `The environment's answer was over ${limit} bytes: the runner read no more of it`,
    );
  };
}

/**
 * A body's bytes up to the limit; past it, its start only (the first
 * {@linkcode HEAD_BYTES}), and the body is cancelled.
 *
 * @example
 * ```ts
 * import { readAtMost } from "./_bounded_http.ts";
 *
 * const read = await readAtMost(new Response("hello").body!, 3);
 * read.over; // true
 * ```
 *
 * @param body The body.
 * @param limit Its bytes at most.
 * @returns The bytes read, the size seen, and whether it went past the limit.
 */
export async function readAtMost(
  body: ReadableStream<Uint8Array>,
  limit: number,
): Promise<{ bytes: Uint8Array; size: number; over: boolean }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return { bytes: join(chunks, HEAD_BYTES), size, over: true };
    }
    chunks.push(value);
  }
  return { bytes: join(chunks), size, over: false };
}

/**
 * Server-sent events passed on whole, each at most `limit` bytes: one past
 * it is dropped as it arrives and answered in its place.
 */
function boundedEvents(
  requests: SentRequests,
  limit: number,
  id: string | number | undefined,
): TransformStream<Uint8Array, Uint8Array> {
  let event: Uint8Array[] = [];
  let size = 0;
  let oversized: Oversized | undefined;
  // Whether the event's current line has had any byte but "\r".
  let lineEmpty = true;
  const encoder = new TextEncoder();
  const endEvent = (
    controller: TransformStreamDefaultController<Uint8Array>,
  ) => {
    if (oversized) {
      const reply = oversizedReply(oversized, requests, limit, id);
      if (reply) {
        controller.enqueue(
          encoder.encode(`event: message\ndata: ${JSON.stringify(reply)}\n\n`),
        );
      }
    } else if (size > 0) controller.enqueue(join(event));
    event = [];
    size = 0;
    oversized = undefined;
  };
  const take = (part: Uint8Array) => {
    if (part.length === 0) return;
    size += part.length;
    if (oversized) {
      oversized.size = size;
      oversized.tail = lastBytes(oversized.tail, part);
      return;
    }
    event.push(part.slice());
    if (size > limit) {
      oversized = {
        head: dataOf(join(event, HEAD_BYTES)),
        tail: lastBytes(new Uint8Array(0), part),
        size,
      };
      event = [];
    }
  };
  // The answer to this POST's request: given now, and the stream ends (an
  // event that never ends would otherwise keep the request waiting).
  const answerNow = (
    controller: TransformStreamDefaultController<Uint8Array>,
  ): boolean => {
    if (!oversized || id === undefined) return false;
    const reply = oversizedReply(oversized, requests, limit, id);
    if (reply) {
      controller.enqueue(
        encoder.encode(`event: message\ndata: ${JSON.stringify(reply)}\n\n`),
      );
    }
    controller.terminate();
    return true;
  };
  return new TransformStream({
    transform(chunk, controller) {
      let from = 0;
      while (from < chunk.length) {
        const newline = chunk.indexOf(10, from);
        const end = newline === -1 ? chunk.length : newline + 1;
        const part = chunk.subarray(from, end);
        if (part.some((byte) => byte !== 10 && byte !== 13)) lineEmpty = false;
        take(part);
        if (answerNow(controller)) return;
        if (newline === -1) break;
        if (lineEmpty) endEvent(controller);
        lineEmpty = true;
        from = end;
      }
    },
    flush(controller) {
      endEvent(controller);
    },
  });
}

/** An event's `data:` text, for finding its message's start. */
function dataOf(event: Uint8Array): Uint8Array {
  const text = new TextDecoder().decode(event);
  const at = text.indexOf("data:");
  return new TextEncoder().encode(
    at === -1 ? text : text.slice(at + 5).trimStart(),
  );
}

/** The last {@linkcode TAIL_BYTES} of what was kept and a new part. */

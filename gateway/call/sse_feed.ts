/**
 * Feeding an upstream stream's text to the SSE parser in time linear in its
 * size, with a bound on one event. `eventsource-parser` joins what it holds
 * of an unfinished line with each new chunk and scans the whole again, so an
 * 8 MB line arriving in 4 KiB reads cost 6.5 s (16 MB: 26 s) and held the
 * event loop meanwhile. {@linkcode boundedFeed} holds the unfinished line
 * itself, in pieces, and hands the parser whole lines only; and it ends a
 * stream whose event grows past {@linkcode MAX_EVENT_CHARS}.
 *
 * @module
 */
import { GatewayError } from "../errors.ts";

/**
 * The most characters one upstream event may take (8 MiB of text): far
 * above any provider's text or tool-call delta, and above a streamed image's
 * base64 (a 1536×1024 PNG is about 3 MB). An event past it ends the stream
 * with the convention's error event, billed what was relayed before it.
 */
export const MAX_EVENT_CHARS = 8 * 1024 * 1024;

/** What {@linkcode boundedFeed} gives: feed text, flush at the end, and the parser's event hook. */
export interface BoundedFeed {
  /** Feeds a chunk of the stream's text; throws a 502 `GatewayError` once an event outgrows the bound. */
  feed(text: string): void;
  /** Feeds what is held of a last unfinished line, at the end of the stream. */
  flush(): void;
  /** To be called first by the parser's `onEvent` with the event's data length: the count starts again; throws when that event is past the bound. */
  eventEnded(dataChars: number): void;
}

/**
 * Wraps a parser's `feed` so that each character is scanned a bounded number
 * of times, and an event is at most `maxEventChars` long.
 *
 * @param parse The parser's `feed`.
 * @param provider The provider, for the error's message.
 * @param maxEventChars The most characters one event may take.
 * @returns The feed.
 *
 * @example
 * ```ts
 * import { createParser } from "eventsource-parser";
 * import { boundedFeed } from "./sse_feed.ts";
 *
 * const events: string[] = [];
 * let lines: ReturnType<typeof boundedFeed>;
 * const parser = createParser({
 *   onEvent(event) {
 *     lines.eventEnded(event.data.length);
 *     events.push(event.data);
 *   },
 * });
 * lines = boundedFeed((text) => parser.feed(text), "openai");
 * lines.feed("data: {\"a\"");
 * lines.feed(":1}\n\n");
 * events; // ['{"a":1}']
 * ```
 */
export function boundedFeed(
  parse: (text: string) => void,
  provider: string,
  maxEventChars: number = MAX_EVENT_CHARS,
): BoundedFeed {
  /** The unfinished line, in the pieces it came in. */
  let held: string[] = [];
  let heldChars = 0;
  /** Characters handed to the parser since its last event. */
  let sinceEvent = 0;
  const tooLarge = () =>
    new GatewayError(
      502,
      `The ${provider} provider sent a stream event larger than ${maxEventChars} characters`,
      { code: "upstream_event_too_large" },
    );
  return {
    feed(text) {
      // The last line end in the chunk: "\n", or a lone "\r" (SSE allows both).
      const end = Math.max(text.lastIndexOf("\n"), text.lastIndexOf("\r"));
      if (end < 0) {
        held.push(text);
        heldChars += text.length;
        if (sinceEvent + heldChars > maxEventChars) throw tooLarge();
        return;
      }
      const lines = heldChars === 0
        ? text.slice(0, end + 1)
        : held.join("") + text.slice(0, end + 1);
      const rest = text.slice(end + 1);
      held = rest ? [rest] : [];
      heldChars = rest.length;
      // Counted before the parser runs: an event it ends in these lines
      // starts the count again (and checks its own data).
      sinceEvent += lines.length;
      parse(lines);
      if (sinceEvent + heldChars > maxEventChars) throw tooLarge();
    },
    flush() {
      if (heldChars > 0) parse(held.join(""));
      held = [];
      heldChars = 0;
    },
    eventEnded(dataChars) {
      sinceEvent = 0;
      if (dataChars > maxEventChars) throw tooLarge();
    },
  };
}

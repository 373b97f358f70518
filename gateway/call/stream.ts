/**
 * Relaying one upstream stream to the caller, event by event, in the caller's
 * convention, and working out what it is billed when it ends: completely,
 * broken off, or abandoned by the caller.
 *
 * An abandoned or broken stream is billed its prompt (as the provider
 * reported it, else the reservation's estimate) and the output relayed,
 * counted in tokens from the text it carried. When the caller leaves after
 * the answer's content is complete but before the provider's usage event
 * (OpenAI's convention sends it last), the relay reads on for up to
 * {@linkcode USAGE_GRACE_MS} for that event before it cancels upstream.
 *
 * @module
 */
import { createParser } from "eventsource-parser";
import { GatewayError, streamErrorFrame } from "../errors.ts";
import { deadlines, upstreamTimeout } from "../upstream/deadlines.ts";
import { outputTextTokens } from "./estimate.ts";
import { boundedFeed } from "./sse_feed.ts";
import { scrubKey, scrubsKey } from "../upstream/scrub.ts";
import { type ScrubbedEvent, StreamScrub } from "../upstream/scrub_stream.ts";
import type { Exchange } from "../upstream/providers/provider.ts";
import { parseJson } from "../upstream/providers/provider.ts";
import type { ProviderKey } from "../upstream/key_pool.ts";
import type { RouteName } from "../conventions.ts";
import type { Usage } from "../upstream/usage.ts";
import { unreadableUsage, upstreamFailure } from "../upstream/rules.ts";
import { UnreadableUsageError } from "../upstream/usage.ts";

/** How long an abandoned stream whose content was complete is read on for its usage event, ms. */
export const USAGE_GRACE_MS = 2_000;

/** Which figures of a settled stream were estimated rather than reported. */
export type Estimated = ("input" | "output")[];

/** How a relayed stream ended: what it is billed, and how it went. */
export interface StreamEnd {
  /** The usage to bill. */
  usage: Usage;
  /** Which figures of `usage` were estimated rather than reported. */
  estimated: Estimated;
  /** 200, 499 (the caller left) or the error's status. */
  status: number;
  /** The error, when the stream failed (no provider key in it). */
  error?: string;
  /** Epoch ms the first event was relayed, if one was. */
  firstEventAt?: number;
}

/** A relayed stream: the caller's response, and its end. */
export interface Relay {
  /** The caller's response. */
  response: Response;
  /** Resolves once, when the stream ended, failed or the caller left; never rejects. */
  ended: Promise<StreamEnd>;
}

/** What the relay needs: the upstream answer and how to read it. */
export interface RelayOptions {
  /** The caller's route, for the in-stream error's convention. */
  route: RouteName;
  /** The exchange the upstream request was built by. */
  exchange: Exchange;
  /** The upstream answer and its key. */
  upstream: {
    response: Response;
    key: ProviderKey;
    /** Cancels the upstream request. */
    abort: AbortController;
  };
  /** Most ms between two upstream events before the stream counts as broken. */
  idleTimeoutMs: number;
  /** The input tokens the reservation held for. */
  inputEstimate: number;
}

/**
 * Bytes read from the upstream at most per read. An event is a few hundred
 * bytes; a longer one takes more reads.
 */
const READ_BYTES = 4_096;

/** Reads of one upstream body: the next bytes, or done; and cancelling it. */
interface UpstreamReads {
  /** The next bytes, valid until the following call (the buffer is reused). */
  next(): Promise<ReadableStreamReadResult<Uint8Array>>;
  /** Cancels the body; never throws. */
  cancel(): void;
}

/**
 * Reads an upstream body through one small buffer of its own. A default
 * reader of a `fetch` body allocates 64 KiB for every read, however little
 * arrives: with 1,000 streams open that was 64 MiB of pending reads, and each
 * relayed chunk kept its 64 KiB alive until a GC (RSS grew 350 MiB over the
 * first 1,000 streams). A body that is not a byte stream (one built in
 * JavaScript) is read with a default reader.
 */
function upstreamReader(body: ReadableStream<Uint8Array>): UpstreamReads {
  let byob: ReadableStreamBYOBReader;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    const reader = body.getReader();
    return {
      next: () => reader.read(),
      cancel: () => void reader.cancel().catch(() => {}),
    };
  }
  // Undefined while a read has it: a second read then (the read on for
  // usage, behind the pull the caller left) takes a buffer of its own.
  let buffer: ArrayBuffer | undefined = new ArrayBuffer(READ_BYTES);
  return {
    async next() {
      const lent = buffer ?? new ArrayBuffer(READ_BYTES);
      buffer = undefined;
      const result = await byob.read(new Uint8Array(lent));
      // The read detached the buffer it was given and hands it back in the view.
      if (result.value) buffer = result.value.buffer as ArrayBuffer;
      return result as ReadableStreamReadResult<Uint8Array>;
    },
    cancel: () => void byob.cancel().catch(() => {}),
  };
}

/** The caller's error for what a failed read threw. */
function readFailure(thrown: unknown, key: ProviderKey, signal: AbortSignal) {
  if (thrown instanceof GatewayError) return thrown;
  if (thrown instanceof UnreadableUsageError) return unreadableUsage(thrown);
  return upstreamFailure(key.provider, thrown, signal);
}

/**
 * What an ended stream is billed. A stream that ended well with the
 * provider's usage is billed that; one that failed upstream before any
 * content, what the provider reported (usually nothing). Otherwise (the
 * caller left, or content was relayed before a failure) the prompt is the
 * provider's count, else the reservation's estimate, and the output at least
 * what was relayed, counted in tokens.
 *
 * @param reported The usage the provider reported.
 * @param status The stream's outcome: 200, 499 (caller gone), or an error.
 * @param inputEstimate The input tokens the reservation held for.
 * @param relayedOutput Output tokens counted in the text relayed.
 * @returns The usage to bill and which figures were estimated.
 */
export function billableUsage(
  reported: Usage,
  status: number,
  inputEstimate: number,
  relayedOutput: number,
): { usage: Usage; estimated: Estimated } {
  if (status === 200 && reported.inputTokens > 0) {
    return { usage: reported, estimated: [] };
  }
  // An upstream that failed before producing anything is not billed beyond
  // what it reported; a caller who left, or content relayed, means the
  // provider worked on the prompt.
  if (status !== 499 && relayedOutput === 0) {
    return { usage: reported, estimated: [] };
  }
  const estimated: Estimated = [];
  let { inputTokens, outputTokens } = reported;
  if (inputTokens === 0) {
    inputTokens = inputEstimate;
    estimated.push("input");
  }
  if (outputTokens < relayedOutput) {
    outputTokens = relayedOutput;
    estimated.push("output");
  }
  return { usage: { ...reported, inputTokens, outputTokens }, estimated };
}

/**
 * Relays an upstream stream to the caller. Its end resolves exactly once:
 * when the stream ends, fails, or the caller goes away (then the upstream
 * request is cancelled, after the grace read for usage when the content was
 * complete). The relay calls nothing back: whoever owns the call settles it
 * from `ended`.
 *
 * @param options The upstream, the exchange, the idle timeout and the input estimate.
 * @returns The caller's response and the stream's end.
 */
export function relayStream(options: RelayOptions): Relay {
  const { exchange, upstream } = options;
  const relay = exchange.relay();
  const encoder = new TextEncoder();
  // A provider that quotes its key in a stream must not hand it to the
  // caller: the key is named by its id instead, as in whole answers. Events
  // are scrubbed as parsed JSON before the relay sees them (escaped
  // spellings, a key split across events: StreamScrub); what the relay
  // writes is scrubbed once more as text. A key too short to be a real
  // provider's is never scrubbed (see MIN_SCRUBBED_KEY_LENGTH): words and
  // tool ids that contain it pass whole.
  const { provider } = upstream.key;
  const scrub = new StreamScrub(upstream.key);
  const scrubs = scrubsKey(upstream.key);
  const redact = (text: string) => scrubKey(text, upstream.key);
  const frames = (text: string) => encoder.encode(redact(text));
  let resolveEnded!: (end: StreamEnd) => void;
  const ended = new Promise<StreamEnd>((resolve) => resolveEnded = resolve);
  let firstEventAt: number | undefined;
  let pending = "";
  let relayedOutput = 0;
  // Whole lines only reach the parser, and an event has a bound.
  const lines = boundedFeed((text) => parser.feed(text), provider);
  const parser = createParser({
    onEvent(event) {
      lines.eventEnded(event.data.length);
      // Every provider's events carry JSON (OpenAI's closing [DONE] aside);
      // anything else is garbage, never relayed: the stream ends in an error.
      const data = event.data === "[DONE]" ? event.data : parseJson(event.data);
      if (data === undefined) {
        throw new GatewayError(
          502,
          `The ${provider} provider sent a stream event that is not JSON`,
          { code: "upstream_garbage" },
        );
      }
      for (const clean of scrub.push(event, data)) relayEvent(clean);
    },
  });
  /** Hands one scrubbed event to the relay and keeps what it writes. */
  const relayEvent = (clean: ScrubbedEvent) => {
    const out = relay.event(clean.event, clean.data);
    if (out) relayedOutput += outputTextTokens(clean.data);
    pending += out;
  };
  const reads = upstreamReader(upstream.response.body!);
  const decoder = new TextDecoder();
  // Whether the decoder holds the start of a character split across reads.
  let carried = false;
  /**
   * Parses one upstream read. `whole` says its bytes decode to its text on
   * their own: no character straddles either end of the read.
   */
  const feed = (bytes: Uint8Array) => {
    const text = decoder.decode(bytes, { stream: true });
    const carriedIn = carried;
    carried = bytes.length > 0 && bytes[bytes.length - 1] >= 0x80;
    lines.feed(text);
    return { text, whole: !carriedIn && !carried };
  };
  /**
   * The bytes to send for what a read relayed: the upstream's own bytes when
   * the relay passed the read's text through unchanged (a new buffer per
   * chunk costs more than the rest of the relay's work on it), else the
   * relayed text, encoded.
   */
  const output = (bytes: Uint8Array, read: { text: string; whole: boolean }) =>
    read.whole && pending === read.text &&
      !(scrubs && pending.includes(upstream.key.secret))
      ? bytes.slice()
      : frames(pending);
  let finished = false;

  const finish = (status: number, error?: string) => {
    if (finished) return;
    finished = true;
    const { usage, estimated } = billableUsage(
      relay.usage,
      status,
      options.inputEstimate,
      relayedOutput,
    );
    resolveEnded({
      usage,
      estimated,
      status,
      ...(error === undefined ? {} : { error: redact(error) }),
      ...(firstEventAt === undefined ? {} : { firstEventAt }),
    });
  };

  // The idle timeout: a deadline per read, watched by the process's one
  // timer (a timer per read cost each chunk a setTimeout and a
  // clearTimeout). Between reads the stream stays in the set, deadline-less.
  const watched = upstreamTimeout(upstream.abort);
  const readChunk = async (timeoutMs: number) => {
    deadlines.watch(watched, timeoutMs);
    try {
      return await reads.next();
    } finally {
      watched.deadline = Infinity;
    }
  };

  /** Reads on, relaying nothing, until the usage event arrives or the grace ends. */
  const readOnForUsage = async () => {
    const deadline = Date.now() + USAGE_GRACE_MS;
    try {
      while (relay.usage.inputTokens === 0) {
        const left = deadline - Date.now();
        if (left <= 0) return;
        const { value, done } = await readChunk(left);
        if (done) return;
        feed(value);
        // Nothing reaches the caller now: held events only count usage.
        scrub.flush().forEach(relayEvent);
        pending = "";
      }
    } catch {
      // Broken or timed out: bill what is known.
    }
  };

  // A byte stream: it takes the upstream's buffers over without a copy.
  const body = new ReadableStream({
    type: "bytes",
    async pull(controller: ReadableByteStreamController) {
      try {
        for (;;) {
          const { value, done } = await readChunk(options.idleTimeoutMs);
          if (done) {
            deadlines.forget(watched);
            lines.feed(decoder.decode());
            lines.flush();
            scrub.flush().forEach(relayEvent);
            pending += relay.end();
            if (pending) controller.enqueue(frames(pending));
            // Ended before the caller sees the close, so the call's owner
            // has settled (queued its charge) by the time the caller reads on.
            finish(relay.failure ? 502 : 200, relay.failure);
            controller.close();
            return;
          }
          const fed = feed(value);
          if (pending) {
            firstEventAt ??= Date.now();
            controller.enqueue(output(value, fed));
            pending = "";
            return;
          }
        }
      } catch (thrown) {
        deadlines.forget(watched);
        if (finished) return;
        const error = readFailure(thrown, upstream.key, upstream.abort.signal);
        // Nothing more is read: an event past its bound (or garbage) must
        // not keep the upstream request open.
        upstream.abort.abort(
          new DOMException("The stream was cut off", "AbortError"),
        );
        reads.cancel();
        const cut = error.status === 502
          ? new GatewayError(
            502,
            `The ${provider} stream broke off: ${error.message}`,
            { code: error.code },
          )
          : error;
        controller.enqueue(
          frames(pending + streamErrorFrame(options.route, cut)),
        );
        finish(cut.status, cut.message);
        controller.close();
      }
    },
    async cancel() {
      if (relay.contentDone && relay.usage.inputTokens === 0) {
        await readOnForUsage();
      }
      deadlines.forget(watched);
      upstream.abort.abort(new DOMException("Caller went away", "AbortError"));
      reads.cancel();
      finish(499, "The caller closed the stream");
    },
  });
  const response = new Response(body, {
    headers: {
      "content-type": exchange.streamContentType ??
        "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
    },
  });
  return { response, ended };
}

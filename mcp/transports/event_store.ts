/**
 * Resumable Streamable HTTP streams (MCP 2025-11-25, SEP-1699): each session
 * keeps the last events of its recent SSE streams, so a client whose stream
 * broke can reconnect with `Last-Event-ID` and receive what it missed.
 *
 * @module
 */
import type { EventId, EventStore, JSONRPCMessage } from "../_sdk.ts";

type StreamId = string;

interface StoredEvent {
  seq: number;
  message: JSONRPCMessage;
}

/** Bounds of a {@linkcode SessionEventStore}. */
export interface SessionEventStoreOptions {
  /** Events kept per stream, the newest (default 32). */
  maxEventsPerStream?: number;
  /** Streams kept, the most recently written (default 8). */
  maxStreams?: number;
}

/**
 * One session's event store, bounded in streams and events so a long session
 * cannot grow without limit; a resume from an event that was dropped replays
 * nothing. Event ids are `{seq}`, unique within the session.
 */
export class SessionEventStore implements EventStore {
  readonly #streams = new Map<StreamId, StoredEvent[]>();
  readonly #maxEvents: number;
  readonly #maxStreams: number;
  #seq = 0;

  /**
   * Creates an empty store.
   *
   * @param options How many streams and events per stream to keep.
   */
  constructor(options: SessionEventStoreOptions = {}) {
    // Every tools/call answer is kept until its stream is evicted, and an
    // environment's answers can be screenshots: a resume is only useful
    // shortly after a break, so few streams are kept.
    this.#maxEvents = options.maxEventsPerStream ?? 32;
    this.#maxStreams = options.maxStreams ?? 8;
  }

  /**
   * Stores an event.
   *
   * @param streamId The stream it was sent on.
   * @param message The message.
   * @returns The event's id.
   */
  storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    let events = this.#streams.get(streamId);
    if (events) {
      this.#streams.delete(streamId); // re-inserted last: most recently written
    } else {
      events = [];
      if (this.#streams.size >= this.#maxStreams) {
        this.#streams.delete(this.#streams.keys().next().value!);
      }
    }
    this.#streams.set(streamId, events);
    const seq = ++this.#seq;
    events.push({ seq, message });
    if (events.length > this.#maxEvents) events.shift();
    return Promise.resolve(String(seq));
  }

  /**
   * The stream an event was sent on.
   *
   * @param eventId The event's id.
   * @returns The stream id, or `undefined` for an unknown or dropped event.
   */
  getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    return Promise.resolve(this.#find(eventId)?.[0]);
  }

  /**
   * Sends the events stored after `lastEventId` on the same stream.
   *
   * @param lastEventId The last event the client received.
   * @param sink Where to send them.
   * @returns The stream id, or `""` for an unknown or dropped event.
   */
  async replayEventsAfter(
    lastEventId: EventId,
    { send }: {
      send: (eventId: EventId, message: JSONRPCMessage) => Promise<void>;
    },
  ): Promise<StreamId> {
    const found = this.#find(lastEventId);
    if (!found) return "";
    const [streamId, events, seq] = found;
    for (const event of events) {
      // The priming event carries no message (`{}`): nothing to replay.
      if (event.seq > seq && "jsonrpc" in event.message) {
        await send(String(event.seq), event.message);
      }
    }
    return streamId;
  }

  #find(eventId: EventId): [StreamId, StoredEvent[], number] | undefined {
    const seq = Number(eventId);
    if (!Number.isSafeInteger(seq)) return undefined;
    for (const [streamId, events] of this.#streams) {
      if (events.some((event) => event.seq === seq)) {
        return [streamId, events, seq];
      }
    }
    return undefined;
  }
}

import assert from "node:assert/strict";
import type { JSONRPCMessage } from "../_sdk.ts";
import { SessionEventStore } from "./event_store.ts";

const message = (id: number): JSONRPCMessage => ({
  jsonrpc: "2.0",
  id,
  result: {},
});

async function replay(store: SessionEventStore, after: string) {
  const sent: [string, JSONRPCMessage][] = [];
  const streamId = await store.replayEventsAfter(after, {
    send: (eventId, sentMessage) => {
      sent.push([eventId, sentMessage]);
      return Promise.resolve();
    },
  });
  return { streamId, sent };
}

Deno.test("SessionEventStore replays the events after an id on that id's stream only", async () => {
  const store = new SessionEventStore();
  const priming = await store.storeEvent("a", {} as JSONRPCMessage);
  await store.storeEvent("b", message(99));
  const first = await store.storeEvent("a", message(1));
  await store.storeEvent("a", message(2));
  assert.equal(await store.getStreamIdForEventId(first), "a");
  const fromPriming = await replay(store, priming);
  assert.equal(fromPriming.streamId, "a");
  assert.deepEqual(fromPriming.sent.map(([, m]) => m), [
    message(1),
    message(2),
  ]);
  const fromFirst = await replay(store, first);
  assert.deepEqual(fromFirst.sent.map(([, m]) => m), [message(2)]);
});

Deno.test("SessionEventStore keeps a bounded number of events and streams", async () => {
  const store = new SessionEventStore({ maxEventsPerStream: 2, maxStreams: 2 });
  const dropped = await store.storeEvent("a", message(1));
  await store.storeEvent("a", message(2));
  const kept = await store.storeEvent("a", message(3));
  assert.equal(await store.getStreamIdForEventId(dropped), undefined);
  assert.equal(await store.getStreamIdForEventId(kept), "a");
  const oldStream = await store.storeEvent("b", message(4));
  await store.storeEvent("a", message(5)); // "a" is now the most recently written
  await store.storeEvent("c", message(6)); // evicts "b", the least recently written
  assert.equal(await store.getStreamIdForEventId(oldStream), undefined);
  assert.equal(await store.getStreamIdForEventId(kept), "a");
  assert.deepEqual(await replay(store, "not-an-id"), {
    streamId: "",
    sent: [],
  });
});

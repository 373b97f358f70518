import assert from "node:assert/strict";
import fc from "fast-check";
import {
  endOfKeyStart,
  MAX_HELD_EVENTS,
  type ScrubbedEvent,
  StreamScrub,
} from "./scrub_stream.ts";

const KEY = {
  provider: "openai" as const,
  keyId: "openai:1a2b3c4d",
  secret: "sk-proj-0123456789abcdefghij",
};
const MARK = "[key openai:1a2b3c4d]";

const delta = (content: string) => ({
  id: "chatcmpl-1",
  choices: [{ index: 0, delta: { content } }],
});

/** Pushes each piece as a chat delta; returns every event relayed, in order. */
function relayDeltas(pieces: string[], key = KEY): ScrubbedEvent[] {
  const scrub = new StreamScrub(key);
  const out: ScrubbedEvent[] = [];
  for (const piece of pieces) {
    const data = delta(piece);
    out.push(...scrub.push({ data: JSON.stringify(data) }, data));
  }
  out.push(...scrub.flush());
  return out;
}

/** The text a caller's SDK puts together from relayed events. */
function textOf(events: ScrubbedEvent[]): string {
  return events.map((e) =>
    (JSON.parse(e.event.data) as ReturnType<typeof delta>).choices[0].delta
      .content
  ).join("");
}

Deno.test("StreamScrub names a key quoted whole in an event, plainly or JSON-escaped", () => {
  const scrub = new StreamScrub(KEY);
  const escaped = `{"error":{"message":"bad key ${
    KEY.secret.replace("-", "\\u002d")
  }"}}`;
  const [event] = scrub.push({ data: escaped }, JSON.parse(escaped));
  assert.equal(event.event.data, `{"error":{"message":"bad key ${MARK}"}}`);
  // In a field's name too.
  const named = `{"${KEY.secret}":1}`;
  const [renamed] = scrub.push({ data: named }, JSON.parse(named));
  assert.equal(renamed.event.data, `{"${MARK}":1}`);
});

Deno.test("StreamScrub holds an event ending with the key's start and names a key split across events once", () => {
  const scrub = new StreamScrub(KEY);
  const first = delta("the key: sk-proj-0123");
  assert.deepEqual(scrub.push({ data: JSON.stringify(first) }, first), []);
  const second = delta("456789abcdefghij, done");
  const out = scrub.push({ data: JSON.stringify(second) }, second);
  assert.equal(out.length, 2);
  assert.equal(textOf(out), `the key: ${MARK}, done`);
});

Deno.test("StreamScrub releases a held event unchanged when the key does not follow", () => {
  const out = relayDeltas(["ask sk-proj-", "ect managers"]);
  assert.equal(out.length, 2);
  assert.equal(textOf(out), "ask sk-proj-ect managers");
  assert.equal(out[0].event.data, JSON.stringify(delta("ask sk-proj-")));
});

Deno.test("StreamScrub names a key spelled one character an event, relaying no more of it than its fixed start", () => {
  const out = relayDeltas(["pre ", ...KEY.secret, " post"]);
  const text = textOf(out);
  assert.ok(!text.includes(KEY.secret.slice(0, 8)), text);
  assert.equal(text, `pre sk-pr${MARK} post`);
});

Deno.test("StreamScrub holds no more than its bound of events", () => {
  const scrub = new StreamScrub(KEY);
  const start = delta("sk-proj-0");
  assert.deepEqual(scrub.push({ data: JSON.stringify(start) }, start), []);
  let released = 0;
  for (let i = 0; i < MAX_HELD_EVENTS; i++) {
    const other = { ping: i };
    released += scrub.push({ data: JSON.stringify(other) }, other).length;
  }
  assert.equal(released, MAX_HELD_EVENTS);
});

Deno.test("StreamScrub leaves every event alone for a key too short to be a real provider's", () => {
  const out = relayDeltas(["a sim", "ple simulation"], {
    ...KEY,
    secret: "sim",
  });
  assert.equal(textOf(out), "a simple simulation");
});

Deno.test("endOfKeyStart() finds the longest ending of a text that starts the key", () => {
  assert.equal(endOfKeyStart("ask sk-pro", KEY.secret), 6);
  assert.equal(endOfKeyStart("s", KEY.secret), 1);
  assert.equal(endOfKeyStart("sk-proj-0123456789abcdefghi", KEY.secret), 27);
  assert.equal(endOfKeyStart("sk-proj-0123456789abcdefghij", KEY.secret), 0);
  assert.equal(endOfKeyStart("nothing", KEY.secret), 0);
});

Deno.test("property: however a text is cut into deltas, the key never reaches the caller and nothing else changes", () => {
  const word = fc.constantFrom(
    "s",
    "sk",
    "sk-proj-",
    "sk-proj-01",
    "a",
    " ",
    "é",
  );
  fc.assert(
    fc.property(
      fc.array(fc.oneof(word, fc.constant(KEY.secret)), { maxLength: 12 }),
      fc.array(fc.nat(), { maxLength: 12 }),
      (words, cuts) => {
        const text = words.join("");
        const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort(
          (a, b) => a - b,
        );
        const pieces = [0, ...at, text.length].slice(1).map((end, i, ends) =>
          text.slice(i === 0 ? 0 : ends[i - 1], end)
        );
        const out = textOf(relayDeltas(pieces));
        assert.ok(!out.includes(KEY.secret), out);
        const keys = text.split(KEY.secret).length - 1;
        assert.equal(out.split(MARK).length - 1, keys);
        if (keys === 0) assert.equal(out, text);
      },
    ),
    { numRuns: 500 },
  );
});

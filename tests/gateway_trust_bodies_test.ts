/**
 * Work bounded before money is checked: what the headers, one balance read,
 * the counted limits and the body's first pieces can refuse is refused
 * before the body is parsed (or read to its end), and each caller's bytes
 * of bodies in flight are bounded. A real gateway on loopback, in front of
 * the simulator.
 */
import assert from "node:assert/strict";
import { createCaller } from "../gateway/state/callers.ts";
import { startHarness } from "./_gateway_harness.ts";

const MIB = 1024 * 1024;

/**
 * A chat body of `mib` MiB of small messages, streamed (no
 * `content-length`) in 64 KiB pieces as the connection takes them, and
 * what of it was taken: a gateway that parses it must first take it all.
 */
function streamedMessages(mib: number) {
  const encoder = new TextEncoder();
  const message = '{"role":"user","content":"hi"},';
  const piece = encoder.encode(message.repeat(Math.floor(65536 / 31)));
  const seen = { bytes: 0, ended: false };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const head = encoder.encode('{"model":"gpt-4o-mini","messages":[');
      controller.enqueue(head);
      seen.bytes += head.length;
    },
    pull(controller) {
      if (seen.bytes + piece.length < mib * MIB) {
        controller.enqueue(piece);
        seen.bytes += piece.length;
        return;
      }
      controller.enqueue(encoder.encode(message.slice(0, -1) + "]}"));
      controller.close();
      seen.ended = true;
    },
  });
  return { body, seen };
}

/** Two MiB that are not JSON: a gateway that parsed them would answer 400. */
const GARBAGE = "{" + "x".repeat(2 * 1024 * 1024);

Deno.test("a large body from a caller with no credit is refused 402 before it is read", async () => {
  await using h = await startHarness();
  const broke = await createCaller(h.kv, { name: "broke", creditsMicros: 0 });
  const response = await h.post("/v1/chat/completions", GARBAGE, {
    authorization: `Bearer ${broke.key}`,
  });
  const text = await response.text();
  assert.equal(response.status, 402, text);
  assert.match(
    text,
    /balance is \$0\.000000, and a call needs a balance above zero/,
  );
  // A funded caller's garbage is still read, and refused for what it is.
  const funded = await h.post("/v1/chat/completions", GARBAGE);
  assert.equal(funded.status, 400, await funded.text());
});

Deno.test("an expired key is refused 401 before its body is read", async () => {
  await using h = await startHarness();
  const expired = await createCaller(h.kv, {
    name: "expired",
    creditsMicros: 1_000_000,
    limits: { expiresAt: "2001-01-01T00:00:00Z" },
  });
  const response = await h.post("/v1/messages", GARBAGE, {
    authorization: `Bearer ${expired.key}`,
  });
  const text = await response.text();
  assert.equal(response.status, 401, text);
  assert.match(text, /expired/);
});

Deno.test("a caller's bytes of bodies in flight are bounded, and other callers are not held by them", async () => {
  await using h = await startHarness({
    env: {
      GATEWAY_MAX_BODY_BYTES: String(1024 * 1024),
      GATEWAY_MAX_CALLER_BODY_BYTES: String(1024 * 1024),
    },
  });
  // A body sent slowly, without a length: it counts as the largest accepted.
  let release!: () => void;
  const held = new Promise<void>((resolve) => release = resolve);
  const slow = fetch(`${h.url}/v1/chat/completions`, {
    method: "POST",
    headers: { ...h.auth(), "content-type": "application/json" },
    body: new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new TextEncoder().encode('{"model":'));
        await held;
        controller.enqueue(
          new TextEncoder().encode(
            '"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}',
          ),
        );
        controller.close();
      },
    }),
  });
  // Give the gateway time to take the first body in.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const body = JSON.stringify({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "y".repeat(512 * 1024) }],
  });
  const second = await h.post("/v1/chat/completions", body);
  const text = await second.text();
  assert.equal(second.status, 429, text);
  assert.equal(second.headers.get("retry-after"), "1");
  assert.match(text, /bytes of request bodies in flight/);
  // Another caller's body gets in meanwhile.
  const other = await createCaller(h.kv, {
    name: "other",
    creditsMicros: 10_000_000,
  });
  const theirs = await h.post("/v1/chat/completions", body, {
    authorization: `Bearer ${other.key}`,
  });
  assert.equal(theirs.status, 200, await theirs.text());
  release();
  const first = await slow;
  assert.equal(first.status, 200, await first.text());
  // Given back: the caller's next body gets in.
  const third = await h.post("/v1/chat/completions", body);
  assert.equal(third.status, 200, await third.text());
});

Deno.test("a $0.000001 key's 31 MiB body is refused 402 before its end arrives, so it is never parsed, and /health answers meanwhile", async () => {
  await using h = await startHarness();
  const poor = await createCaller(h.kv, { name: "poor", creditsMicros: 1 });
  const { body, seen } = streamedMessages(31);
  const call = fetch(`${h.url}/v1/chat/completions`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${poor.key}`,
    },
    body,
  });
  const health = await fetch(`${h.url}/health`);
  assert.equal(health.status, 200, await health.text());
  const response = await call;
  const bytesAtAnswer = seen.bytes;
  const text = await response.text();
  assert.equal(response.status, 402, text);
  assert.match(
    text,
    /Insufficient credits: this call may cost at least \$0\.\d+ \(what its body holds at the cheapest price on this route\) and \$0\.000001 is available/,
  );
  // The answer came while most of the body was still unsent (what the
  // connection's buffers took, a few MiB): a parse needs its end.
  assert.equal(seen.ended, false);
  assert.ok(bytesAtAnswer < 16 * MIB, `${bytesAtAnswer} bytes were taken`);

  // The same body with its length declared, as SDKs send it, gets the same.
  const message = JSON.stringify({ role: "user", content: "hi" });
  const whole = `{"model":"gpt-4o-mini","messages":[${
    Array(Math.floor(31 * MIB / (message.length + 1))).fill(message).join(",")
  }]}`;
  const declared = await h.post("/v1/chat/completions", whole, {
    authorization: `Bearer ${poor.key}`,
  });
  assert.equal(declared.status, 402, await declared.text());
  // A funded caller's small call still goes through.
  const funded = await h.post("/v1/chat/completions", {
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "hi" }],
  });
  assert.equal(funded.status, 200, await funded.text());
});

Deno.test("a key whose rpm is reached has its large body refused 429 before it is read", async () => {
  await using h = await startHarness();
  const limited = await createCaller(h.kv, {
    name: "limited",
    creditsMicros: 10_000_000,
    limits: { rpm: 1 },
  });
  const small = await h.post("/v1/chat/completions", {
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "hi" }],
  }, { authorization: `Bearer ${limited.key}` });
  assert.equal(small.status, 200, await small.text());
  const { body, seen } = streamedMessages(31);
  const response = await fetch(`${h.url}/v1/chat/completions`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${limited.key}`,
    },
    body,
  });
  const text = await response.text();
  assert.equal(response.status, 429, text);
  assert.match(text, /limit of 1 requests per minute is reached/);
  assert.ok(Number(response.headers.get("retry-after")) >= 1);
  assert.equal(seen.ended, false);
});

Deno.test("a body whose JSON repeats a key is held at the structure it was sent with, not only what its parse kept", async () => {
  await using h = await startHarness();
  // Enough for the call its parse keeps (about 8 micro-USD held), not for
  // the 100 000 array items a repeated key drops.
  const caller = await createCaller(h.kv, { name: "dup", creditsMicros: 20 });
  const call = (junk: string) =>
    `{"model":"gpt-4o-mini","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"x":${junk},"x":0}`;
  const plain = await h.post("/v1/chat/completions", call("0"), {
    authorization: `Bearer ${caller.key}`,
  });
  assert.equal(plain.status, 200, await plain.text());
  const padded = await h.post(
    "/v1/chat/completions",
    call(`[${"0,".repeat(100_000)}0]`),
    { authorization: `Bearer ${caller.key}` },
  );
  const text = await padded.text();
  assert.equal(padded.status, 402, text);
  assert.match(text, /this call may cost up to/);
});

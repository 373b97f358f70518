/**
 * Work bounded before money is checked: what the headers and one balance
 * read can refuse is refused before the body is read, and each caller's
 * bytes of bodies in flight are bounded. A real gateway on loopback, in
 * front of the simulator.
 */
import assert from "node:assert/strict";
import { createCaller } from "../gateway/state/callers.ts";
import { startHarness } from "./_gateway_harness.ts";

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

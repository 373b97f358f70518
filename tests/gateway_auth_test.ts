/**
 * Caller auth happens from the headers, before a body is read, and path
 * escapes a caller controls are a 4xx: an unauthenticated client cannot make
 * the gateway buffer bodies or log errors.
 */
import assert from "node:assert/strict";
import { startHarness } from "./_gateway_harness.ts";

/** A body that sends one chunk, then its end a second later, marking `ended.done`. */
function slowBody(ended: { done: boolean }): ReadableStream<Uint8Array> {
  let sent = false;
  return new ReadableStream({
    async pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(new TextEncoder().encode('{"model":"gpt-4o",'));
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      ended.done = true;
      controller.enqueue(new TextEncoder().encode('"messages":[]}'));
      controller.close();
    },
  });
}

Deno.test("a bogus key is refused with 401 before the body is read, on every call route", async () => {
  await using h = await startHarness();
  for (
    const path of [
      "/v1/chat/completions",
      "/v1/messages",
      "/v1/responses",
      "/v1beta/models/gemini-2.5-computer-use-preview:generateContent",
    ]
  ) {
    const body = { done: false };
    const response = await fetch(h.url + path, {
      method: "POST",
      headers: {
        authorization: "Bearer mk-bogus",
        "content-type": "application/json",
      },
      body: slowBody(body),
    });
    assert.equal(response.status, 401, path);
    // Answered while the body was still being sent: it was never waited for.
    assert.equal(body.done, false, path);
    await response.body?.cancel();
  }
  assert.equal(h.sim.requests.length, 0);
});

Deno.test("a malformed percent escape in a Gemini path is a 400 in Google's convention, never a 500", async () => {
  await using h = await startHarness();
  for (const model of ["%ZZ", "gemini%E0%A4%A:generateContent", "%"]) {
    const response = await fetch(
      `${h.url}/v1beta/models/${model}:generateContent`,
      {
        method: "POST",
        headers: h.auth({ "content-type": "application/json" }),
        body: JSON.stringify({ contents: [{ parts: [{ text: "hi" }] }] }),
      },
    );
    const body = await response.json();
    assert.equal(response.status, 400, model);
    assert.equal(body.error.status, "INVALID_ARGUMENT", model);
  }
  assert.deepEqual(h.logs.filter((record) => record.level === "error"), []);
});

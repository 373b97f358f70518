/**
 * A stream the caller abandons is billed its prompt and the output relayed:
 * the provider charges the whole prompt either way. When the content was
 * complete, the gateway reads on for the usage event before it cancels.
 */
import assert from "node:assert/strict";
import { estimateInputTokens } from "../gateway/call/estimate.ts";
import { expectedCost, ledgerEntryOf, traceOf } from "./_gateway_e2e.ts";
import { startHarness } from "./_gateway_harness.ts";
import { callBody } from "./_gateway_routes.ts";

const USAGE = { inputTokens: 2_000, cachedTokens: 0, outputTokens: 40 };

/** Streams a chat call and stops reading once `stop` says so, returning the request id. */
async function readUntil(
  h: Awaited<ReturnType<typeof startHarness>>,
  model: string,
  stop: (text: string) => boolean,
): Promise<string> {
  const response = await fetch(`${h.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...h.auth() },
    body: JSON.stringify(callBody("chat", model, true)),
  });
  assert.equal(response.status, 200);
  const reader = response.body!.pipeThrough(new TextDecoderStream())
    .getReader();
  let text = "";
  while (!stop(text)) {
    const { value, done } = await reader.read();
    assert.ok(!done, "the stream is still running");
    text += value;
  }
  await reader.cancel();
  return response.headers.get("x-request-id")!;
}

Deno.test("a caller who leaves right after finish_reason is billed the provider's full usage: the gateway reads on for it", async () => {
  await using h = await startHarness({
    sim: { behaviour: { chunkDelayMs: 150, usage: USAGE } },
  });
  for (const model of ["gpt-4o-mini", "grok-4-1-fast", "z-ai/glm-4.5v"]) {
    const requestId = await readUntil(
      h,
      model,
      (text) => /"finish_reason":"stop"/.test(text),
    );
    const entry = await ledgerEntryOf(h.kv, h.caller.id, requestId);
    assert.equal(entry.inputTokens, USAGE.inputTokens, model);
    assert.equal(entry.outputTokens, USAGE.outputTokens, model);
    assert.equal(-entry.amountMicros, expectedCost(USAGE, model), model);
    const trace = await traceOf(h.kv, h.caller.id, requestId);
    assert.equal(trace.estimated, undefined, model);
  }
});

Deno.test("a caller who leaves after the first chunk pays at least the prompt's estimate and the output relayed, marked estimated", async () => {
  const reply = Array.from({ length: 60 }, (_, i) => `word${i}`).join(" ");
  await using h = await startHarness({
    sim: { behaviour: { chunkDelayMs: 100, reply, usage: USAGE } },
  });
  const estimate = estimateInputTokens(
    callBody("chat", "gpt-4o-mini", true),
  );
  const requestId = await readUntil(
    h,
    "gpt-4o-mini",
    (text) => /word2\b/.test(text),
  );
  const entry = await ledgerEntryOf(h.kv, h.caller.id, requestId);
  assert.equal(entry.inputTokens, estimate);
  assert.ok(entry.outputTokens! >= 3, `${entry.outputTokens}`);
  assert.ok(entry.outputTokens! < 60, `${entry.outputTokens}`);
  const trace = await traceOf(h.kv, h.caller.id, requestId);
  assert.equal(trace.status, 499);
  assert.deepEqual(trace.estimated, ["input", "output"]);
});

/**
 * A trace that keeps both bodies at the largest GATEWAY_TRACE_BODY_BYTES still
 * commits with its charge on a Deno KV store, whose values hold 64 KiB: a
 * body kept cut ends in "…", so V8 stores it as UTF-16, two bytes a
 * character.
 */
import assert from "node:assert/strict";
import { createCaller } from "../gateway/state/callers.ts";
import { createBilling } from "../gateway/state/credits/billing.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import {
  keptBody,
  MAX_TRACE_BODY_BYTES,
} from "../gateway/state/trace_bodies.ts";

Deno.test("a call whose trace keeps two long bodies at the largest size is still charged, its trace stored", async () => {
  using kv = await Deno.openKv(":memory:");
  const caller = await createCaller(kv, {
    name: "long",
    creditsMicros: usdToMicros(1),
  });
  const billing = createBilling(kv);
  const held = await billing.reserve(caller.id, 5_000);
  assert.ok(held.ok);
  const requestBody = keptBody(
    JSON.stringify({
      model: "m",
      messages: [{ content: `“${"a".repeat(40_000)}”` }],
    }),
    MAX_TRACE_BODY_BYTES,
  );
  const responseBody = keptBody(
    JSON.stringify({
      choices: [{ message: { content: `— ${"b".repeat(40_000)}` } }],
    }),
    MAX_TRACE_BODY_BYTES,
  );
  const usage = { inputTokens: 10, outputTokens: 20, cachedInputTokens: 0 };
  billing.settleSoon({
    reservation: held.reservation,
    costMicros: 1_200,
    usage,
    trace: {
      requestId: "req_long",
      traceId: "t_long",
      callerId: caller.id,
      route: "chat",
      status: 200,
      stream: false,
      inputTokens: 10,
      outputTokens: 20,
      cachedTokens: 0,
      costMicros: 1_200,
      latencyMs: 50,
      time: Date.now(),
      requestBody,
      responseBody,
    } as Parameters<typeof billing.settle>[0]["trace"],
  });
  await billing.flush();
  assert.equal(await billing.balance(caller.id), usdToMicros(1) - 1_200);
  const [trace] = await Array.fromAsync(
    kv.list<Record<string, string>>({ prefix: ["traces", caller.id] }),
  );
  assert.equal(trace.value.requestBody, requestBody);
  assert.equal(trace.value.responseBody, responseBody);
  for (const body of [requestBody, responseBody]) {
    assert.match(body, /\.\.\. \[\d+ more bytes not kept\]$/);
    assert.ok(2 * body.length <= MAX_TRACE_BODY_BYTES + 80, `${body.length}`);
  }
});

/**
 * `GATEWAY_TRACE_BODIES`: off (the default), a trace keeps no body; on, it
 * keeps the request and a non-streamed answer, bounded and scrubbed of
 * credentials, for the console's trace detail.
 */
import assert from "node:assert/strict";
import { parseConfig } from "../gateway/config.ts";
import { startHarness } from "./_gateway_harness.ts";

const ADMIN = "trace-bodies-admin-token";

async function lastTrace(url: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${url}/admin/traces?limit=1`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  assert.equal(response.status, 200);
  const { data } = await response.json() as { data: Record<string, unknown>[] };
  assert.equal(data.length, 1);
  return data[0];
}

/** Waits for the call's trace: it is written just after the answer. */
async function settledTrace(url: string, requestId: string) {
  for (let i = 0; i < 50; i++) {
    const trace = await lastTrace(url);
    if (trace.requestId === requestId) return trace;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`No trace for ${requestId}`);
}

const SECRET = "sk-proj-" + "x".repeat(40);

Deno.test("traces keep no bodies unless GATEWAY_TRACE_BODIES is on", async () => {
  await using h = await startHarness({
    env: { GATEWAY_ADMIN_TOKEN: ADMIN },
  });
  const response = await h.post("/v1/chat/completions", {
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "hello" }],
  });
  assert.equal(response.status, 200);
  await response.body?.cancel();
  const trace = await settledTrace(
    h.url,
    response.headers.get("x-request-id")!,
  );
  assert.equal(trace.requestBody, undefined);
  assert.equal(trace.responseBody, undefined);
});

Deno.test("with GATEWAY_TRACE_BODIES on, a trace keeps the request and answer, a key in them scrubbed, cut at GATEWAY_TRACE_BODY_BYTES", async () => {
  await using h = await startHarness({
    env: {
      GATEWAY_ADMIN_TOKEN: ADMIN,
      GATEWAY_TRACE_BODIES: "on",
      GATEWAY_TRACE_BODY_BYTES: "2000",
    },
  });
  const response = await h.post("/v1/chat/completions", {
    model: "gpt-4o-mini",
    messages: [
      { role: "user", content: `my key is ${SECRET}` },
      { role: "assistant", content: "noted" },
      { role: "user", content: `hello ${"padding ".repeat(400)}` },
    ],
  });
  assert.equal(response.status, 200);
  const answer = await response.json();
  const trace = await settledTrace(
    h.url,
    response.headers.get("x-request-id")!,
  );
  const request = String(trace.requestBody);
  assert.match(request, /"model":"gpt-4o-mini"/);
  assert.ok(!request.includes(SECRET), request.slice(0, 200));
  assert.match(request, /more bytes not kept\]$/);
  assert.ok(new TextEncoder().encode(request).length < 2_100);
  const kept = JSON.parse(String(trace.responseBody));
  assert.equal(
    kept.choices[0].message.content,
    answer.choices[0].message.content,
  );
});

Deno.test("a trace body size past 16 KiB is a configuration error naming the setting", () => {
  assert.throws(
    () => parseConfig({ env: { GATEWAY_TRACE_BODY_BYTES: "100000" } }),
    /traceBodyBytes/,
  );
});

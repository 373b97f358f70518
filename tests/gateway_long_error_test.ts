/**
 * A provider's error message of any length is bounded in the call's trace:
 * a stream that used tokens and then failed with a 100,000-character error
 * is still charged (the trace is committed with the charge, and a Deno KV
 * value holds 64 KiB), and a refused call's trace is still stored.
 */
import assert from "node:assert/strict";
import { startHarness } from "./_gateway_harness.ts";
import { ledgerEntryOf, traceOf } from "./_gateway_e2e.ts";

const LONG = "e".repeat(100_000);

function loopbackUpstream(): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    async (request) => {
      const body = await request.json();
      if (body.messages?.[0]?.content === "fall back") {
        return Response.json({ error: { message: LONG } }, { status: 503 });
      }
      if (!body.stream) {
        return Response.json({ error: { message: LONG } }, { status: 400 });
      }
      const chunk = { id: "c", object: "chat.completion.chunk", created: 1 };
      const events = [
        { ...chunk, choices: [{ index: 0, delta: { content: "hi" } }] },
        {
          ...chunk,
          choices: [],
          usage: { prompt_tokens: 1_000, completion_tokens: 1_000 },
        },
        { error: { message: LONG } },
      ];
      return new Response(
        events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join(""),
        { headers: { "content-type": "text/event-stream" } },
      );
    },
  );
}

Deno.test("a provider's very long error message still leaves a charged trace (streamed) and a stored trace (refused, or failing on every candidate)", async () => {
  await using upstream = loopbackUpstream();
  await using h = await startHarness({
    env: { OPENAI_BASE_URL: `http://127.0.0.1:${upstream.addr.port}` },
  });
  const streamed = await h.post("/v1/chat/completions", {
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "hello" }],
    stream: true,
  });
  assert.equal(streamed.status, 200);
  await streamed.text();
  const id = streamed.headers.get("x-request-id")!;
  const entry = await ledgerEntryOf(h.kv, h.caller.id, id);
  assert.ok(entry.amountMicros < 0, "charged");
  const trace = await traceOf(h.kv, h.caller.id, id);
  assert.ok(
    trace.error && trace.error.length <= 2_000,
    `${trace.error?.length}`,
  );

  const refused = await h.post("/v1/chat/completions", {
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "hello" }],
  });
  assert.equal(refused.status, 400);
  await refused.text();
  const refusedTrace = await traceOf(
    h.kv,
    h.caller.id,
    refused.headers.get("x-request-id")!,
  );
  assert.ok(refusedTrace.error!.length <= 2_000);

  // Every candidate tried fails with the long message: each attempt the
  // trace lists is bounded too.
  const failed = await h.post("/v1/chat/completions", {
    model: "gpt-4o-mini",
    models: ["gpt-4o"],
    messages: [{ role: "user", content: "fall back" }],
  });
  assert.equal(failed.status, 502);
  await failed.text();
  const failedTrace = await traceOf(
    h.kv,
    h.caller.id,
    failed.headers.get("x-request-id")!,
  );
  assert.equal(failedTrace.attempts?.length, 2);
  for (const attempt of failedTrace.attempts!) {
    assert.ok(attempt.error!.length <= 2_000);
  }
  assert.ok(
    !h.logs.some((log) => String(log.message).includes("not charged")),
    "no settle lost",
  );
});

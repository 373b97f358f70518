/**
 * What real provider payloads do to billing, on every provider and route,
 * streamed and not: reasoning tokens reported beside completion tokens
 * (xAI) or inside them (OpenAI), counts that are strings or floats, counts
 * that cannot be read, cached counts above the prompt. Upstream is a
 * loopback server that puts the usage on the wire exactly as given.
 */
import assert from "node:assert/strict";
import { listLedger } from "../gateway/state/credits/ledger.ts";
import { DEFAULT_CATALOG } from "../gateway/state/catalog.ts";
import type { RouteName } from "../gateway/conventions.ts";
import { ledgerEntryOf, traceOf } from "./_gateway_e2e.ts";
import { startHarness } from "./_gateway_harness.ts";
import { callBody, callPath, readSse } from "./_gateway_routes.ts";
import {
  type RecordedUsage,
  startRecordedUpstream,
} from "./_recorded_upstream.ts";
import { assertLedgerExact } from "./fixtures/reliability_ledger.ts";

/** Every provider on every route it serves, and the usage format it speaks there. */
const CASES: [string, RouteName, keyof RecordedUsage][] = [
  ["gpt-4o-mini", "chat", "chat"],
  ["grok-4-1-fast", "chat", "chat"],
  ["z-ai/glm-4.5v", "chat", "chat"],
  ["claude-haiku-4-5", "chat", "anthropic"],
  ["gemini-2.5-pro", "chat", "gemini"],
  ["claude-haiku-4-5", "messages", "anthropic"],
  ["gpt-4o-mini", "responses", "responses"],
  ["gemini-2.5-computer-use-preview", "gemini", "gemini"],
];

function pricing(id: string) {
  return DEFAULT_CATALOG.find((entry) => entry.id === id)!.pricing;
}

/** The same counts in each wire format. */
function usageOf(
  counts: { input: unknown; output: unknown; cached?: unknown },
): RecordedUsage {
  return {
    chat: {
      prompt_tokens: counts.input,
      completion_tokens: counts.output,
      prompt_tokens_details: { cached_tokens: counts.cached ?? 0 },
    },
    anthropic: { input_tokens: counts.input, output_tokens: counts.output },
    gemini: {
      promptTokenCount: counts.input,
      candidatesTokenCount: counts.output,
      cachedContentTokenCount: counts.cached ?? 0,
    },
    responses: {
      input_tokens: counts.input,
      output_tokens: counts.output,
      input_tokens_details: { cached_tokens: counts.cached ?? 0 },
    },
  };
}

async function call(
  h: Awaited<ReturnType<typeof startHarness>>,
  model: string,
  route: RouteName,
  stream: boolean,
): Promise<{ status: number; requestId: string; text: string }> {
  const response = await h.post(
    callPath(route, model, stream),
    callBody(route, model, stream),
  );
  const requestId = response.headers.get("x-request-id")!;
  if (stream && response.status === 200) {
    const events = await readSse(response);
    return {
      status: response.status,
      requestId,
      text: events.map((e) => e.data).join("\n"),
    };
  }
  return { status: response.status, requestId, text: await response.text() };
}

Deno.test("usage counts sent as strings or floats are read and rounded up, on every provider and route, streamed and not", async () => {
  await using upstream = startRecordedUpstream();
  await using h = await startHarness({ env: upstream.env });
  upstream.usage = usageOf({ input: "12", output: 3.5 });
  for (const [model, route] of CASES) {
    for (const stream of [false, true]) {
      const label = `${model} ${route} stream=${stream}`;
      const { status, requestId } = await call(h, model, route, stream);
      assert.equal(status, 200, label);
      const entry = await ledgerEntryOf(h.kv, h.caller.id, requestId);
      const price = pricing(model);
      assert.equal(entry.inputTokens, 12, label);
      assert.equal(entry.outputTokens, 4, label);
      assert.equal(
        -entry.amountMicros,
        Math.ceil(12 * price.input + 4 * price.output - 1e-9),
        label,
      );
    }
  }
  await assertLedgerExact(h.kv, h.caller.id);
});

Deno.test("a usage count that cannot be read is a 502 that charges nothing and is traced, on every provider and route", async () => {
  await using upstream = startRecordedUpstream();
  await using h = await startHarness({ env: upstream.env });
  for (const bad of [-1, "many", { tokens: 3 }]) {
    upstream.usage = usageOf({ input: 10, output: bad });
    for (const [model, route] of CASES) {
      const label = `${model} ${route} ${JSON.stringify(bad)}`;
      const { status, requestId, text } = await call(h, model, route, false);
      assert.equal(status, 502, `${label}: ${text}`);
      assert.match(text, /token count/, label);
      const trace = await traceOf(h.kv, h.caller.id, requestId);
      assert.equal(trace.status, 502, label);
      assert.equal(trace.costMicros, 0, label);
      // Streamed, the answer already went out: the stream ends with the
      // route's error event, and the call is settled and traced all the same.
      const streamed = await call(h, model, route, true);
      assert.equal(streamed.status, 200, label);
      assert.match(streamed.text, /token count/, label);
      const streamTrace = await traceOf(
        h.kv,
        h.caller.id,
        streamed.requestId,
      );
      assert.equal(streamTrace.status, 502, label);
    }
  }
  const charges = (await listLedger(h.kv, h.caller.id)).filter((entry) =>
    entry.kind === "charge"
  );
  // Only the streams, for the "hi" they relayed.
  assert.ok(charges.every((entry) => entry.amountMicros > -100));
  assert.deepEqual(
    h.logs.filter((record) => /Settling/.test(String(record.message))),
    [],
  );
  await assertLedgerExact(h.kv, h.caller.id);
});

Deno.test("cached tokens reported above the prompt are capped at the prompt", async () => {
  await using upstream = startRecordedUpstream();
  await using h = await startHarness({ env: upstream.env });
  upstream.usage = usageOf({ input: 10, output: 2, cached: 50 });
  for (
    const [model, route] of CASES.filter(([, , format]) =>
      format !== "anthropic"
    )
  ) {
    for (const stream of [false, true]) {
      const label = `${model} ${route} stream=${stream}`;
      const { status, requestId } = await call(h, model, route, stream);
      assert.equal(status, 200, label);
      const entry = await ledgerEntryOf(h.kv, h.caller.id, requestId);
      const price = pricing(model);
      assert.equal(entry.cachedTokens, 10, label);
      assert.equal(
        -entry.amountMicros,
        Math.ceil(10 * (price.cachedInput ?? price.input) + 2 * price.output),
        label,
      );
    }
  }
});

Deno.test("reasoning tokens are billed once: beside completion tokens for xAI, inside them for OpenAI and OpenRouter", async () => {
  await using upstream = startRecordedUpstream();
  await using h = await startHarness({ env: upstream.env });
  // A recorded Grok answer: one visible token, 228 of reasoning.
  const grok = {
    prompt_tokens: 11,
    completion_tokens: 1,
    total_tokens: 240,
    completion_tokens_details: { reasoning_tokens: 228 },
  };
  const openai = { ...grok, completion_tokens: 229 };
  for (
    const [model, usage] of [
      ["grok-4-1-fast", grok],
      ["gpt-4o-mini", openai],
      ["z-ai/glm-4.5v", openai],
    ] as const
  ) {
    upstream.usage = { chat: usage };
    for (const stream of [false, true]) {
      const label = `${model} stream=${stream}`;
      const { status, requestId } = await call(h, model, "chat", stream);
      assert.equal(status, 200, label);
      const entry = await ledgerEntryOf(h.kv, h.caller.id, requestId);
      const price = pricing(model);
      assert.equal(entry.outputTokens, 229, label);
      assert.equal(
        -entry.amountMicros,
        Math.ceil(11 * price.input + 229 * price.output - 1e-9),
        label,
      );
      const trace = await traceOf(h.kv, h.caller.id, requestId);
      assert.equal(trace.outputTokens, 229, label);
    }
  }
  // 11 input at $0.20/M and 229 output at $0.50/M: 116.7, charged as 117.
  const [grokCharge] = (await listLedger(h.kv, h.caller.id)).filter((entry) =>
    entry.model === "grok-4-1-fast"
  );
  assert.equal(grokCharge.amountMicros, -117);
});

Deno.test("a translated Gemini answer reports its thinking tokens as reasoning in the chat usage", async () => {
  await using upstream = startRecordedUpstream();
  await using h = await startHarness({ env: upstream.env });
  upstream.usage = {
    gemini: {
      promptTokenCount: 20,
      candidatesTokenCount: 68,
      thoughtsTokenCount: 821,
      totalTokenCount: 909,
    },
  };
  const response = await h.post(
    "/v1/chat/completions",
    callBody("chat", "gemini-2.5-pro", false),
  );
  const body = await response.json();
  assert.equal(body.usage.completion_tokens, 889);
  assert.deepEqual(body.usage.completion_tokens_details, {
    reasoning_tokens: 821,
  });
});

Deno.test("GET /models shows every price a model has, cache writes included", async () => {
  await using h = await startHarness();
  const { data } = await (await fetch(`${h.url}/v1/models`)).json();
  const haiku = data.find((m: { id: string }) => m.id === "claude-haiku-4-5");
  assert.deepEqual(haiku.pricing, {
    input: 1,
    output: 5,
    cached_input: 0.1,
    cache_write: 1.25,
    cache_write_1h: 2,
    web_search_per_1k: 10,
  });
  // A model priced by tier and above a long-context threshold lists both.
  const gpt = data.find((m: { id: string }) => m.id === "gpt-5.1");
  assert.deepEqual(gpt.pricing.tiers.priority, {
    input: 2.5,
    output: 20,
    cached_input: 0.25,
  });
  const gemini = data.find((m: { id: string }) => m.id === "gemini-2.5-pro");
  assert.equal(gemini.pricing.long_context.above_input_tokens, 200_000);
});

/**
 * Every token class billed at its own price when a provider's detail and its
 * totals disagree: Anthropic's cache-write split in `message_start` below the
 * total in `message_delta` (and in a whole answer), Gemini chunks that leave
 * out counts an earlier chunk gave, OpenAI, xAI and OpenRouter usage spread
 * over chunks, totals above their classes. A loopback upstream replays each
 * answer as the test scripts it, event by event, through the real gateway;
 * each charge must equal its classes' tokens × the catalog's prices, rounded
 * up once to the micro-USD, and the trace must record that split.
 */
import assert from "node:assert/strict";
import { DEFAULT_CATALOG } from "../gateway/state/catalog.ts";
import {
  type ChargedTokens,
  type ChargedTraceRecord,
  listTraces,
} from "../gateway/state/traces.ts";
import type { ModelPricing } from "../gateway/state/catalog.ts";
import type { RouteName } from "../gateway/conventions.ts";
import { ledgerEntryOf } from "./_gateway_e2e.ts";
import { type Harness, startHarness } from "./_gateway_harness.ts";
import { callBody, callPath, readSse } from "./_gateway_routes.ts";
import { assertLedgerExact } from "./fixtures/reliability_ledger.ts";

/** One scripted upstream answer: a JSON body, or SSE events in order. */
type Answer =
  | { json: unknown }
  | { events: [event: string | undefined, data: unknown][] };

/** A loopback upstream that answers every path with the scripted answer and keeps the last request body. */
interface ScriptedUpstream extends AsyncDisposable {
  env: Record<string, string>;
  answer: Answer;
  lastBody: unknown;
}

function startScriptedUpstream(): ScriptedUpstream {
  const state: ScriptedUpstream = {
    env: {},
    answer: { json: {} },
    lastBody: undefined,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      state.lastBody = await request.json().catch(() => undefined);
      const answer = state.answer;
      if ("json" in answer) return Response.json(answer.json);
      const text = answer.events.map(([event, data]) =>
        `${event ? `event: ${event}\n` : ""}data: ${
          typeof data === "string" ? data : JSON.stringify(data)
        }\n\n`
      ).join("");
      return new Response(text, {
        headers: { "content-type": "text/event-stream" },
      });
    },
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  state.env = {
    OPENAI_BASE_URL: `${base}/v1`,
    XAI_BASE_URL: `${base}/v1`,
    OPENROUTER_BASE_URL: `${base}/api/v1`,
    ANTHROPIC_BASE_URL: base,
    GEMINI_BASE_URL: base,
  };
  return state;
}

function pricing(id: string): ModelPricing {
  const entry = DEFAULT_CATALOG.find((candidate) => candidate.id === id);
  assert.ok(entry, `no catalog entry "${id}"`);
  return entry.pricing;
}

/**
 * A charge worked out here: each class's tokens × its listed price (USD per
 * million tokens is micro-USD per token; cache reads and writes fall back to
 * the input price, 1-hour writes to the 5-minute price, where the catalog
 * lists none), summed exactly and rounded up once to the micro-USD.
 */
function expectedMicros(classes: ChargedTokens, price: ModelPricing): number {
  const scaled = (usdPerMillion: number) =>
    BigInt(Math.round(usdPerMillion * 1e6));
  const write5m = price.cacheWrite ?? price.input;
  const sum = BigInt(classes.input) * scaled(price.input) +
    BigInt(classes.cacheRead) * scaled(price.cachedInput ?? price.input) +
    BigInt(classes.cacheWrite5m) * scaled(write5m) +
    BigInt(classes.cacheWrite1h) * scaled(price.cacheWrite1h ?? write5m) +
    BigInt(classes.output) * scaled(price.output);
  return Number((sum + 999_999n) / 1_000_000n);
}

function classes(partial: Partial<ChargedTokens>): ChargedTokens {
  return {
    input: 0,
    cacheRead: 0,
    cacheWrite5m: 0,
    cacheWrite1h: 0,
    output: 0,
    reasoning: 0,
    ...partial,
  };
}

async function chargedTraceOf(
  h: Harness,
  requestId: string,
): Promise<ChargedTraceRecord> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    const trace = (await listTraces(h.kv, h.caller.id, { limit: 1000 }))
      .find((candidate) => candidate.requestId === requestId);
    if (trace) return trace;
    assert.ok(Date.now() < deadline, `no trace for "${requestId}"`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Sends one call, reads the whole answer, and checks what it was charged:
 * the trace's split, the ledger's tokens, and the cost to the micro-USD.
 */
async function assertCharged(
  h: Harness,
  call: {
    model: string;
    route: RouteName;
    stream: boolean;
    body?: Record<string, unknown>;
    /** Server-side web searches the answer reports, billed per 1,000 at the catalog's price. */
    webSearches?: number;
  },
  expected: ChargedTokens,
  label: string,
): Promise<void> {
  const { model, route, stream } = call;
  const response = await h.post(
    callPath(route, model, stream),
    call.body ?? callBody(route, model, stream),
  );
  const requestId = response.headers.get("x-request-id")!;
  if (stream) {
    const events = await readSse(response);
    assert.equal(response.status, 200, label);
    assert.ok(
      !events.some((event) => /"error"/.test(event.data)),
      `${label}: ${events.map((event) => event.data).join("\n")}`,
    );
  } else {
    const text = await response.text();
    assert.equal(response.status, 200, `${label}: ${text}`);
  }
  const entry = await ledgerEntryOf(h.kv, h.caller.id, requestId);
  const trace = await chargedTraceOf(h, requestId);
  assert.deepEqual(trace.charged, expected, label);
  const input = expected.input + expected.cacheRead + expected.cacheWrite5m +
    expected.cacheWrite1h;
  assert.equal(entry.inputTokens, input, label);
  assert.equal(entry.cachedTokens, expected.cacheRead, label);
  assert.equal(entry.outputTokens, expected.output, label);
  const cost = expectedMicros(expected, pricing(model)) +
    (call.webSearches ?? 0) * (pricing(model).webSearch ?? 0) * 1_000;
  assert.equal(-entry.amountMicros, cost, label);
  assert.equal(trace.costMicros, cost, label);
}

// Anthropic ----------------------------------------------------------------

/** A Messages stream: the usage of `message_start`, then `message_delta`'s. */
function anthropicStream(start: unknown, delta: unknown): Answer {
  const message = {
    id: "msg_rec",
    type: "message",
    role: "assistant",
    model: "recorded",
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: start,
  };
  return {
    events: [
      ["message_start", { type: "message_start", message }],
      ["content_block_start", {
        type: "content_block_start",
        index: 0,
        content_block: { type: "text", text: "" },
      }],
      ["ping", { type: "ping" }],
      ["content_block_delta", {
        type: "content_block_delta",
        index: 0,
        delta: { type: "text_delta", text: "hi" },
      }],
      ["content_block_stop", { type: "content_block_stop", index: 0 }],
      ["message_delta", {
        type: "message_delta",
        delta: { stop_reason: "end_turn", stop_sequence: null },
        usage: delta,
      }],
      ["message_stop", { type: "message_stop" }],
    ],
  };
}

function anthropicAnswer(usage: unknown): Answer {
  return {
    json: {
      id: "msg_rec",
      type: "message",
      role: "assistant",
      model: "recorded",
      content: [{ type: "text", text: "hi" }],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage,
    },
  };
}

/** A Messages request marking its system prompt and last message for caching with `ttls` (undefined: Anthropic's default). */
function cachedMessagesBody(
  model: string,
  stream: boolean,
  ttls: [string | undefined, string | undefined],
): Record<string, unknown> {
  const mark = (ttl: string | undefined) => ({
    type: "ephemeral",
    ...(ttl ? { ttl } : {}),
  });
  return {
    model,
    stream,
    max_tokens: 256,
    system: [{
      type: "text",
      text: "a long system prompt",
      cache_control: mark(ttls[0]),
    }],
    messages: [{
      role: "user",
      content: [{ type: "text", text: "hello", cache_control: mark(ttls[1]) }],
    }],
  };
}

// A real recorded stream with server tools: 3,068 writes split in
// message_start, 3,337 in message_delta's cumulative totals, and one web
// search ($10 per 1,000: 10,000 micro-USD beside the tokens).
const SPLIT_START = {
  input_tokens: 9,
  cache_creation_input_tokens: 3_068,
  cache_read_input_tokens: 12_004,
  cache_creation: {
    ephemeral_5m_input_tokens: 3_068,
    ephemeral_1h_input_tokens: 0,
  },
  output_tokens: 3,
  service_tier: "standard",
};
const TOTALS_DELTA = {
  input_tokens: 1_218,
  cache_creation_input_tokens: 3_337,
  cache_read_input_tokens: 12_004,
  output_tokens: 734,
  server_tool_use: { web_search_requests: 1 },
};

Deno.test("Anthropic: cache writes a stream reports only in message_delta's total are billed at the 5-minute write price, not the input price", async () => {
  await using upstream = startScriptedUpstream();
  await using h = await startHarness({ env: upstream.env });
  upstream.answer = anthropicStream(SPLIT_START, TOTALS_DELTA);
  const expected = classes({
    input: 1_218,
    cacheRead: 12_004,
    cacheWrite5m: 3_337,
    output: 734,
  });
  for (const route of ["messages", "chat"] as const) {
    await assertCharged(
      h,
      { model: "claude-haiku-4-5", route, stream: true, webSearches: 1 },
      expected,
      `${route} route`,
    );
  }
  // 1,218 × $1 + 12,004 × $0.10 + 3,337 × $1.25 + 734 × $5 per million.
  assert.equal(expectedMicros(expected, pricing("claude-haiku-4-5")), 10_260);
  await assertLedgerExact(h.kv, h.caller.id);
});

Deno.test("Anthropic: the unsplit writes of a request that asked only for 1-hour caching are billed at the 1-hour price, beside the split given", async () => {
  await using upstream = startScriptedUpstream();
  await using h = await startHarness({ env: upstream.env });
  const model = "claude-sonnet-5-5";
  const start = {
    ...SPLIT_START,
    cache_creation: {
      ephemeral_5m_input_tokens: 68,
      ephemeral_1h_input_tokens: 3_000,
    },
  };
  upstream.answer = anthropicStream(start, TOTALS_DELTA);
  await assertCharged(
    h,
    {
      model,
      route: "messages",
      stream: true,
      webSearches: 1,
      body: cachedMessagesBody(model, true, ["1h", "1h"]),
    },
    classes({
      input: 1_218,
      cacheRead: 12_004,
      cacheWrite5m: 68,
      cacheWrite1h: 3_269,
      output: 734,
    }),
    "1h everywhere",
  );
  const sent = upstream.lastBody as { system: { cache_control: unknown }[] };
  assert.deepEqual(sent.system[0].cache_control, {
    type: "ephemeral",
    ttl: "1h",
  });
  // One breakpoint at the default lifetime: the rest is 5-minute writes.
  for (const ttls of [["1h", undefined], ["1h", "5m"]] as const) {
    await assertCharged(
      h,
      {
        model,
        route: "messages",
        stream: true,
        webSearches: 1,
        body: cachedMessagesBody(model, true, [...ttls]),
      },
      classes({
        input: 1_218,
        cacheRead: 12_004,
        cacheWrite5m: 68 + 269,
        cacheWrite1h: 3_000,
        output: 734,
      }),
      `ttls ${ttls}`,
    );
  }
  await assertLedgerExact(h.kv, h.caller.id);
});

Deno.test("Anthropic: a whole answer whose split is below its write total, or absent, bills the rest at the write price the request asked for", async () => {
  await using upstream = startScriptedUpstream();
  await using h = await startHarness({ env: upstream.env });
  const model = "claude-opus-4-5";
  upstream.answer = anthropicAnswer({
    ...TOTALS_DELTA,
    cache_creation: SPLIT_START.cache_creation,
  });
  const expected = classes({
    input: 1_218,
    cacheRead: 12_004,
    cacheWrite5m: 3_337,
    output: 734,
  });
  for (const route of ["messages", "chat"] as const) {
    await assertCharged(
      h,
      { model, route, stream: false, webSearches: 1 },
      expected,
      `split below the total, ${route} route`,
    );
  }
  upstream.answer = anthropicAnswer(TOTALS_DELTA);
  await assertCharged(
    h,
    {
      model,
      route: "messages",
      stream: false,
      webSearches: 1,
      body: cachedMessagesBody(model, false, ["1h", "1h"]),
    },
    classes({
      input: 1_218,
      cacheRead: 12_004,
      cacheWrite1h: 3_337,
      output: 734,
    }),
    "no split, 1h everywhere",
  );
  await assertCharged(
    h,
    { model, route: "messages", stream: false, webSearches: 1 },
    expected,
    "no split, no cache_control",
  );
  // A split above its total: the split is what was written.
  upstream.answer = anthropicAnswer({
    input_tokens: 10,
    output_tokens: 20,
    cache_creation_input_tokens: 100,
    cache_creation: {
      ephemeral_5m_input_tokens: 80,
      ephemeral_1h_input_tokens: 50,
    },
  });
  await assertCharged(
    h,
    { model, route: "messages", stream: false },
    classes({ input: 10, cacheWrite5m: 80, cacheWrite1h: 50, output: 20 }),
    "split above the total",
  );
  await assertLedgerExact(h.kv, h.caller.id);
});

// Gemini -------------------------------------------------------------------

function geminiChunk(usageMetadata: unknown, final: boolean): unknown {
  return {
    candidates: [{
      content: { role: "model", parts: [{ text: "hi" }] },
      ...(final ? { finishReason: "STOP" } : {}),
      index: 0,
    }],
    usageMetadata,
    modelVersion: "recorded",
  };
}

Deno.test("Gemini: counts an earlier chunk gave and the last one leaves out are billed at their prices, and a total above the counts as output", async () => {
  await using upstream = startScriptedUpstream();
  await using h = await startHarness({ env: upstream.env });
  // The first chunk gives the cache reads, thinking and tool-use prompt; the
  // last repeats larger totals without them.
  upstream.answer = {
    events: [
      [
        undefined,
        geminiChunk({
          promptTokenCount: 1_200,
          cachedContentTokenCount: 1_000,
          thoughtsTokenCount: 500,
          toolUsePromptTokenCount: 50,
          candidatesTokenCount: 10,
          totalTokenCount: 1_760,
        }, false),
      ],
      [
        undefined,
        geminiChunk({
          promptTokenCount: 1_300,
          candidatesTokenCount: 200,
          totalTokenCount: 2_050,
        }, true),
      ],
    ],
  };
  const expected = classes({
    input: 350,
    cacheRead: 1_000,
    output: 700,
    reasoning: 500,
  });
  for (
    const [model, route] of [
      ["gemini-2.5-pro", "chat"],
      ["gemini-2.5-computer-use-preview", "gemini"],
    ] as const
  ) {
    await assertCharged(
      h,
      { model, route, stream: true },
      expected,
      `${model} ${route}`,
    );
  }
  // A translated stream's usage chunk shows the caller what it is billed.
  const response = await h.post("/v1/chat/completions", {
    ...callBody("chat", "gemini-2.5-pro", true),
    stream_options: { include_usage: true },
  });
  const shown = (await readSse(response)).map((event) =>
    event.data === "[DONE]" ? undefined : JSON.parse(event.data).usage
  ).filter((usage) => usage);
  assert.deepEqual(shown, [{
    prompt_tokens: 1_350,
    completion_tokens: 700,
    total_tokens: 2_050,
    prompt_tokens_details: { cached_tokens: 1_000 },
    completion_tokens_details: { reasoning_tokens: 500 },
  }]);
  // A whole answer whose total holds thinking tokens no count reports.
  upstream.answer = {
    json: geminiChunk({
      promptTokenCount: 20,
      candidatesTokenCount: 68,
      totalTokenCount: 909,
    }, true),
  };
  for (
    const [model, route] of [
      ["gemini-2.5-pro", "chat"],
      ["gemini-2.5-computer-use-preview", "gemini"],
    ] as const
  ) {
    await assertCharged(
      h,
      { model, route, stream: false },
      classes({ input: 20, output: 889 }),
      `${model} ${route} whole`,
    );
  }
  const whole = await h.post(
    "/v1/chat/completions",
    callBody("chat", "gemini-2.5-pro", false),
  );
  assert.equal((await whole.json()).usage.completion_tokens, 889);
  await assertLedgerExact(h.kv, h.caller.id);
});

// OpenAI, xAI, OpenRouter ---------------------------------------------------

function chatStream(usages: [content: unknown, final: unknown]): Answer {
  const chunk = {
    id: "chatcmpl-rec",
    object: "chat.completion.chunk",
    created: 1,
    model: "recorded",
  };
  return {
    events: [
      [undefined, {
        ...chunk,
        choices: [{ index: 0, delta: { role: "assistant", content: "hi" } }],
        usage: usages[0],
      }],
      [undefined, {
        ...chunk,
        choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
        usage: null,
      }],
      [undefined, { ...chunk, choices: [], usage: usages[1] }],
      [undefined, "[DONE]"],
    ],
  };
}

function chatAnswer(usage: unknown): Answer {
  return {
    json: {
      id: "chatcmpl-rec",
      object: "chat.completion",
      created: 1,
      model: "recorded",
      choices: [{
        index: 0,
        message: { role: "assistant", content: "hi" },
        finish_reason: "stop",
      }],
      usage,
    },
  };
}

Deno.test("OpenAI chat: cache reads given on an earlier chunk stay cache reads when the final usage repeats the totals without them", async () => {
  await using upstream = startScriptedUpstream();
  await using h = await startHarness({ env: upstream.env });
  upstream.answer = chatStream([
    {
      prompt_tokens: 2_000,
      completion_tokens: 1,
      prompt_tokens_details: { cached_tokens: 1_536, audio_tokens: 0 },
    },
    {
      prompt_tokens: 2_000,
      completion_tokens: 300,
      total_tokens: 2_300,
      prompt_tokens_details: null,
      completion_tokens_details: {
        reasoning_tokens: 200,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    },
  ]);
  await assertCharged(
    h,
    { model: "gpt-4o-mini", route: "chat", stream: true },
    classes({ input: 464, cacheRead: 1_536, output: 300, reasoning: 200 }),
    "gpt-4o-mini stream",
  );
  // A total above prompt and completion: the rest is output.
  upstream.answer = chatAnswer({
    prompt_tokens: 100,
    completion_tokens: 10,
    total_tokens: 150,
    prompt_tokens_details: { cached_tokens: 64 },
    completion_tokens_details: { reasoning_tokens: 8 },
  });
  await assertCharged(
    h,
    { model: "gpt-5-mini", route: "chat", stream: false },
    classes({ input: 36, cacheRead: 64, output: 50, reasoning: 8 }),
    "gpt-5-mini whole",
  );
  await assertLedgerExact(h.kv, h.caller.id);
});

Deno.test("xAI: reasoning tokens an earlier chunk reported beside completion_tokens are billed as output when the final usage leaves them out", async () => {
  await using upstream = startScriptedUpstream();
  await using h = await startHarness({ env: upstream.env });
  upstream.answer = chatStream([
    {
      prompt_tokens: 500,
      completion_tokens: 1,
      total_tokens: 729,
      prompt_tokens_details: { cached_tokens: 400, text_tokens: 500 },
      completion_tokens_details: { reasoning_tokens: 228 },
    },
    {
      prompt_tokens: 500,
      completion_tokens: 30,
      total_tokens: 758,
      completion_tokens_details: null,
    },
  ]);
  const expected = classes({
    input: 100,
    cacheRead: 400,
    output: 258,
    reasoning: 228,
  });
  await assertCharged(
    h,
    { model: "grok-4-1-fast", route: "chat", stream: true },
    expected,
    "grok stream",
  );
  upstream.answer = chatAnswer({
    prompt_tokens: 500,
    completion_tokens: 30,
    total_tokens: 758,
    prompt_tokens_details: { cached_tokens: 400 },
    completion_tokens_details: { reasoning_tokens: 228 },
  });
  await assertCharged(
    h,
    { model: "grok-4-1-fast", route: "chat", stream: false },
    expected,
    "grok whole",
  );
  await assertLedgerExact(h.kv, h.caller.id);
});

Deno.test("OpenRouter: cache writes it reports are a class of their own, priced at the write price the catalog lists (else the input price)", async () => {
  await using upstream = startScriptedUpstream();
  await using h = await startHarness({ env: upstream.env });
  const usage = {
    prompt_tokens: 4_000,
    completion_tokens: 100,
    total_tokens: 4_100,
    cost: 0.0123,
    prompt_tokens_details: {
      cached_tokens: 1_000,
      cache_write_tokens: 2_000,
      audio_tokens: 0,
    },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
  const expected = classes({
    input: 1_000,
    cacheRead: 1_000,
    cacheWrite5m: 2_000,
    output: 100,
  });
  upstream.answer = chatAnswer(usage);
  await assertCharged(
    h,
    { model: "anthropic/claude-sonnet-4.5", route: "chat", stream: false },
    expected,
    "whole",
  );
  upstream.answer = chatStream([null, usage]);
  await assertCharged(
    h,
    { model: "anthropic/claude-sonnet-4.5", route: "chat", stream: true },
    expected,
    "stream",
  );
  await assertLedgerExact(h.kv, h.caller.id);
});

Deno.test("OpenAI Responses: cache reads and reasoning are billed at their prices, and a total above input and output as output", async () => {
  await using upstream = startScriptedUpstream();
  await using h = await startHarness({ env: upstream.env });
  const response = (usage: unknown) => ({
    id: "resp_rec",
    object: "response",
    status: "completed",
    model: "recorded",
    output: [{
      type: "message",
      id: "msg_rec",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: "hi", annotations: [] }],
    }],
    usage,
  });
  const usage = {
    input_tokens: 2_000,
    input_tokens_details: { cached_tokens: 1_536 },
    output_tokens: 300,
    output_tokens_details: { reasoning_tokens: 200 },
    total_tokens: 2_400,
  };
  const expected = classes({
    input: 464,
    cacheRead: 1_536,
    output: 400,
    reasoning: 200,
  });
  upstream.answer = {
    events: [
      ["response.created", {
        type: "response.created",
        response: { ...response(null), status: "in_progress", output: [] },
      }],
      ["response.output_text.delta", {
        type: "response.output_text.delta",
        delta: "hi",
      }],
      ["response.completed", {
        type: "response.completed",
        response: response(usage),
      }],
    ],
  };
  await assertCharged(
    h,
    { model: "gpt-5.1", route: "responses", stream: true },
    expected,
    "stream",
  );
  upstream.answer = { json: response(usage) };
  await assertCharged(
    h,
    { model: "gpt-5.1", route: "responses", stream: false },
    expected,
    "whole",
  );
  await assertLedgerExact(h.kv, h.caller.id);
});

Deno.test("a count above a trillion tokens fails the call where it enters: a 502 that charges nothing, or a stream's error that bills what was relayed", async () => {
  await using upstream = startScriptedUpstream();
  await using h = await startHarness({ env: upstream.env });
  const absurd = { ...TOTALS_DELTA, output_tokens: 2 ** 50 };
  upstream.answer = anthropicAnswer(absurd);
  const response = await h.post(
    callPath("messages", "claude-opus-4-5", false),
    callBody("messages", "claude-opus-4-5", false),
  );
  assert.equal(response.status, 502);
  assert.match(await response.text(), /token count/);
  const trace = await chargedTraceOf(
    h,
    response.headers.get("x-request-id")!,
  );
  assert.equal(trace.costMicros, 0);
  upstream.answer = anthropicStream(SPLIT_START, absurd);
  const streamed = await h.post(
    callPath("messages", "claude-opus-4-5", true),
    callBody("messages", "claude-opus-4-5", true),
  );
  const events = await readSse(streamed);
  assert.match(events.at(-1)!.data, /token count/);
  const entry = await ledgerEntryOf(
    h.kv,
    h.caller.id,
    streamed.headers.get("x-request-id")!,
  );
  assert.ok(entry.amountMicros < 0 && entry.amountMicros > -1_000_000);
  assert.deepEqual(
    h.logs.filter((record) => /Settling/.test(String(record.message))),
    [],
  );
  await assertLedgerExact(h.kv, h.caller.id);
});

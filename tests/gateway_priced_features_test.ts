/**
 * What a provider bills beyond tokens, the caller pays: server-side web
 * searches (Anthropic's `server_tool_use.web_search_requests`, OpenAI's
 * `web_search_call` items) at the catalog's price per 1,000, a
 * `service_tier` at its tier's prices, a long-context call at the
 * long-context rate, an OpenRouter call at least its reported `usage.cost`.
 * What the catalog cannot price, and work fetched later outside the call,
 * is refused with a 400 naming the field before anything is sent. Through
 * the official SDKs against a loopback provider that reports the usage a
 * real one reports.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { startHarness } from "./_gateway_harness.ts";
import { startBillingUpstream } from "./_billing_upstream.ts";
import { DEFAULT_CATALOG } from "../gateway/state/catalog.ts";

const HELLO = [{ role: "user" as const, content: "hello" }];

function env(base: string): Record<string, string> {
  return {
    OPENAI_BASE_URL: base,
    ANTHROPIC_BASE_URL: base,
    GEMINI_BASE_URL: base,
    XAI_BASE_URL: base,
    OPENROUTER_BASE_URL: base,
  };
}

Deno.test("server-side web searches, tiers, long context and a router's cost are charged as the provider bills them", async () => {
  await using upstream = startBillingUpstream();
  await using h = await startHarness({ env: env(upstream.base) });
  const openai = new OpenAI({
    baseURL: `${h.url}/v1`,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
  const anthropic = new Anthropic({
    baseURL: h.url,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
  const cost = (response: Response) => response.headers.get("x-gateway-cost");

  // Anthropic web search: 20 searches at $10 per 1,000 beside 10 input
  // tokens at $1 and 100 output at $5 per million.
  upstream.extraUsage = { server_tool_use: { web_search_requests: 20 } };
  const searched = await anthropic.messages.create({
    model: "claude-haiku-4-5",
    max_tokens: 100,
    messages: HELLO,
    tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 20 }],
  }).withResponse();
  assert.equal(cost(searched.response), "0.200510");

  // OpenAI web search: two web_search_call items on gpt-5.1 ($10 per 1,000).
  upstream.extraUsage = {};
  upstream.extraAnswer = {
    output: [
      { type: "web_search_call", id: "ws_1", status: "completed" },
      { type: "web_search_call", id: "ws_2", status: "completed" },
    ],
  };
  const searchedResponses = await openai.responses.create({
    model: "gpt-5.1",
    input: "hello",
    max_output_tokens: 100,
    max_tool_calls: 2,
    tools: [{ type: "web_search" }],
  }).withResponse();
  // 10 × $1.25 + 100 × $10 per million, rounded up, + 2 × $0.01.
  assert.equal(cost(searchedResponses.response), "0.021013");
  upstream.extraAnswer = {};

  // Priority tier: gpt-5.1 at $2.50 / $20, gpt-4o at $4.25 / $17.
  const priority = await openai.responses.create({
    model: "gpt-5.1",
    input: "hello",
    max_output_tokens: 100,
    service_tier: "priority",
  }).withResponse();
  assert.equal(cost(priority.response), "0.002025");
  const chatPriority = await openai.chat.completions.create({
    model: "gpt-4o",
    messages: HELLO,
    max_completion_tokens: 100,
    service_tier: "priority",
  }).withResponse();
  assert.equal(cost(chatPriority.response), "0.001743");

  // Gemini 2.5 Pro above 200k input tokens: $2.50 / $15 per million.
  upstream.extraUsage = {
    promptTokenCount: 250_000,
    totalTokenCount: 250_100,
  };
  const long = await openai.chat.completions.create({
    model: "gemini-2.5-pro",
    messages: HELLO,
    max_completion_tokens: 100,
  }).withResponse();
  assert.equal(cost(long.response), "0.626500");

  // Claude Sonnet 4.5 with the 1M-context beta at 500k input: $6 / $22.50;
  // once the model retires (the catalog's date), the call is refused 410.
  upstream.extraUsage = { input_tokens: 500_000 };
  const sonnet45 = DEFAULT_CATALOG.find((m) => m.id === "claude-sonnet-4-5");
  const longClaude = anthropic.messages.create({
    model: "claude-sonnet-4-5",
    max_tokens: 100,
    messages: HELLO,
  }, { headers: { "anthropic-beta": "context-1m-2025-08-07" } })
    .withResponse();
  if (Date.now() < Date.parse(sonnet45!.lifecycle!.retires!)) {
    assert.equal(cost((await longClaude).response), "3.002250");
  } else {
    await assert.rejects(longClaude, (error) => {
      assert.ok(error instanceof Anthropic.APIError);
      assert.equal(error.status, 410);
      return true;
    });
  }

  // Claude Haiku 5.5 bills by the prompt's band, without a beta: $0.10 /
  // $0.50 up to 100,000 input tokens, $0.50 / $2.50 for the whole call above.
  upstream.extraUsage = {};
  const haiku = await anthropic.messages.create({
    model: "claude-haiku-5-5",
    max_tokens: 100,
    messages: HELLO,
  }).withResponse();
  assert.equal(cost(haiku.response), "0.000051");
  upstream.extraUsage = { input_tokens: 150_000 };
  const longHaiku = await anthropic.messages.create({
    model: "claude-haiku-5-5",
    max_tokens: 100,
    messages: HELLO,
  }).withResponse();
  assert.equal(cost(longHaiku.response), "0.075250");

  // GPT-5.4 and GPT-5.5 above 272,000 input tokens: 2× input and 1.5×
  // output for the whole call ($5 / $22.50 and $10 / $45 per million).
  upstream.extraUsage = { input_tokens: 300_000 };
  for (
    const [model, charged] of [["gpt-5.4", "1.502250"], ["gpt-5.5", "3.004500"]]
  ) {
    const longGpt = await openai.responses.create({
      model,
      input: "hello",
      max_output_tokens: 100,
    }).withResponse();
    assert.equal(cost(longGpt.response), charged, model);
  }

  // OpenRouter's reported cost, above the tokens' $0.000186.
  upstream.extraUsage = { cost: 0.1 };
  const routed = await openai.chat.completions.create({
    model: "z-ai/glm-4.5v",
    messages: HELLO,
    max_tokens: 100,
  }).withResponse();
  assert.equal(cost(routed.response), "0.100000");
});

Deno.test("what the catalog cannot price, and work fetched outside the call, is refused with a 400 naming it before anything is sent", async () => {
  await using upstream = startBillingUpstream();
  await using h = await startHarness({ env: env(upstream.base) });
  const gemini =
    "/v1beta/models/gemini-2.5-computer-use-preview:generateContent";
  const contents = [{ role: "user", parts: [{ text: "hello" }] }];
  const cases: [string, Record<string, unknown>, string][] = [
    ["/v1/responses", {
      model: "gpt-5.1",
      input: "hi",
      background: true,
    }, "background"],
    ["/v1/chat/completions", {
      model: "grok-4-1-fast",
      messages: HELLO,
      deferred: true,
    }, "deferred"],
    ["/v1/chat/completions", {
      model: "grok-4-1-fast",
      messages: HELLO,
      search_parameters: { mode: "on", max_search_results: 50 },
    }, "search_parameters"],
    ["/v1/chat/completions", {
      model: "z-ai/glm-4.5v",
      messages: HELLO,
      plugins: [{ id: "web" }],
    }, "plugins"],
    ["/v1/chat/completions", {
      model: "gpt-5.1",
      messages: HELLO,
      web_search_options: {},
    }, "web_search_options"],
    ["/v1/chat/completions", {
      model: "gpt-4o",
      messages: HELLO,
      service_tier: "flex",
    }, "service_tier"],
    ["/v1/chat/completions", {
      model: "claude-haiku-4-5",
      messages: HELLO,
      service_tier: "priority",
    }, "service_tier"],
    ...["code_interpreter", "file_search", "image_generation", "mcp"].map((
      type,
    ): [string, Record<string, unknown>, string] => [
      "/v1/responses",
      { model: "gpt-5.1", input: "hi", tools: [{ type }] },
      "tools[0].type",
    ]),
    ["/v1/responses", {
      model: "gpt-4o",
      input: "hi",
      max_tool_calls: 1,
      tools: [{ type: "web_search" }],
    }, "tools"],
    ["/v1/responses", {
      model: "gpt-5.1",
      input: "hi",
      tools: [{ type: "web_search" }],
    }, "max_tool_calls"],
    ["/v1/messages", {
      model: "claude-haiku-4-5",
      max_tokens: 10,
      messages: HELLO,
      tools: [{ type: "web_search_20250305", name: "web_search" }],
    }, "tools[0].max_uses"],
    ["/v1/messages", {
      model: "claude-haiku-4-5",
      max_tokens: 10,
      messages: HELLO,
      tools: [{ type: "web_fetch_20250910", name: "web_fetch" }],
    }, "tools[0].type"],
    ["/v1/messages", {
      model: "claude-haiku-4-5",
      max_tokens: 10,
      messages: HELLO,
      tools: [{ type: "code_execution_20250825", name: "code_execution" }],
    }, "tools[0].type"],
    ["/v1/messages", {
      model: "claude-haiku-4-5",
      max_tokens: 10,
      messages: HELLO,
      mcp_servers: [{ type: "url", url: "https://mcp.example", name: "x" }],
    }, "mcp_servers"],
    ...["googleSearch", "url_context", "codeExecution"].map((
      tool,
    ): [string, Record<string, unknown>, string] => [
      gemini,
      { contents, tools: [{ [tool]: {} }] },
      `tools[0].${tool}`,
    ]),
  ];
  for (const [path, body, param] of cases) {
    const response = await h.post(path, body);
    const text = await response.text();
    assert.equal(response.status, 400, `${param}: ${text}`);
    const { error } = JSON.parse(text) as { error: { message: string } };
    assert.ok(error.message.includes(`"${param}"`), `${param}: ${text}`);
  }
  const beta = await h.post("/v1/messages", {
    model: "claude-haiku-4-5",
    max_tokens: 10,
    messages: HELLO,
  }, h.auth({ "anthropic-beta": "context-1m-2025-08-07" }));
  const betaText = await beta.text();
  assert.equal(beta.status, 400, betaText);
  assert.match(betaText, /anthropic-beta/);
  assert.equal(upstream.received.length, 0);
});

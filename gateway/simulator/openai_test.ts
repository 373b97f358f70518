import assert from "node:assert/strict";
import OpenAI from "openai";
import { startSimulator } from "./mod.ts";

const weatherTool = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string" },
        unit: { type: "string", enum: ["celsius", "fahrenheit"] },
        days: { type: "integer" },
      },
      required: ["city"],
    },
  },
};

Deno.test("the OpenAI SDK reads a chat completion echoing the last user message with usage", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk-one" });
  const completion = await client.chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "system", content: "Be brief." }, {
      role: "user",
      content: "hello there",
    }],
  });
  assert.equal(completion.object, "chat.completion");
  assert.equal(completion.model, "gpt-4o");
  assert.equal(completion.choices[0].message.content, "Echo: hello there");
  assert.equal(completion.choices[0].finish_reason, "stop");
  assert.equal(
    completion.usage?.prompt_tokens,
    Math.ceil("Be brief.hello there".length / 4),
  );
  assert.equal(
    completion.usage?.completion_tokens,
    Math.ceil("Echo: hello there".length / 4),
  );
  assert.equal(completion.usage?.prompt_tokens_details?.cached_tokens, 0);
  assert.equal(sim.requests.length, 1);
  assert.equal(sim.requests[0].headers.authorization, "Bearer sk-one");
  assert.equal(sim.requests[0].path, "/openai/v1/chat/completions");
});

Deno.test("the OpenAI SDK streams chat chunks ending with a usage chunk without choices", async () => {
  await using sim = await startSimulator({
    behaviour: { reply: "one two three four five six seven" },
  });
  const client = new OpenAI({ baseURL: sim.baseUrls.xai, apiKey: "xai-key" });
  const stream = await client.chat.completions.create({
    model: "grok-4-1-fast",
    messages: [{ role: "user", content: "count" }],
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
  assert.equal(text, "one two three four five six seven");
  assert.ok(chunks.length >= 5);
  assert.equal(chunks.at(-2)?.choices[0].finish_reason, "stop");
  const last = chunks.at(-1)!;
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage?.completion_tokens, Math.ceil(text.length / 4));
  assert.equal(sim.requests[0].provider, "xai");
});

Deno.test("the OpenAI SDK's stream helper assembles a streamed tool call with valid JSON arguments", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({
    baseURL: sim.baseUrls.openrouter,
    apiKey: "or-key",
  });
  const stream = client.chat.completions.stream({
    model: "z-ai/glm-4.5v",
    messages: [{
      role: "user",
      content: "please call tool get_weather for Paris",
    }],
    tools: [weatherTool],
  });
  let fragments = 0;
  stream.on("tool_calls.function.arguments.delta", () => fragments++);
  const final = await stream.finalChatCompletion();
  const call = final.choices[0].message.tool_calls?.[0];
  assert.equal(final.choices[0].finish_reason, "tool_calls");
  assert.ok(call && call.type === "function");
  assert.equal(call.function.name, "get_weather");
  assert.deepEqual(JSON.parse(call.function.arguments), {
    city: "city value",
    unit: "celsius",
    days: 7,
  });
  assert.ok(
    fragments >= 3,
    `expected several argument fragments, got ${fragments}`,
  );
});

Deno.test("a forced tool_choice produces a tool call and a tool result produces text about it", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const first = await client.chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "user", content: "weather?" }],
    tools: [weatherTool],
    tool_choice: { type: "function", function: { name: "get_weather" } },
  });
  const call = first.choices[0].message.tool_calls?.[0];
  assert.ok(call && call.type === "function");
  const second = await client.chat.completions.create({
    model: "gpt-4o",
    messages: [
      { role: "user", content: "weather?" },
      first.choices[0].message,
      { role: "tool", tool_call_id: call.id, content: "sunny, 21C" },
    ],
    tools: [weatherTool],
  });
  assert.equal(
    second.choices[0].message.content,
    "Tool get_weather returned: sunny, 21C",
  );
  assert.equal(second.choices[0].finish_reason, "stop");
});

Deno.test("max_tokens truncates the reply and reports finish_reason length", async () => {
  await using sim = await startSimulator({
    behaviour: { reply: "a".repeat(100) },
  });
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const completion = await client.chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "user", content: "long please" }],
    max_tokens: 5,
  });
  assert.equal(completion.choices[0].message.content, "a".repeat(20));
  assert.equal(completion.choices[0].finish_reason, "length");
  assert.equal(completion.usage?.completion_tokens, 5);
});

Deno.test("images count as tokens and a long prompt reports cached tokens", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const completion = await client.chat.completions.create({
    model: "gpt-4o",
    messages: [{
      role: "user",
      content: [
        { type: "text", text: "x".repeat(8000) },
        { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
      ],
    }],
  });
  assert.equal(completion.usage?.prompt_tokens, 2000 + 258);
  assert.equal(completion.usage?.prompt_tokens_details?.cached_tokens, 1024);
});

Deno.test("the OpenAI SDK reads a Responses API reply with cached-token usage", async () => {
  await using sim = await startSimulator({
    behaviour: { usage: { cachedTokens: 3 } },
  });
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const response = await client.responses.create({
    model: "gpt-5.1",
    instructions: "Be brief.",
    input: "hello responses",
  });
  assert.equal(response.object, "response");
  assert.equal(response.status, "completed");
  assert.equal(response.output_text, "Echo: hello responses");
  assert.equal(response.usage?.input_tokens_details.cached_tokens, 3);
  assert.equal(
    response.usage?.input_tokens,
    Math.ceil("Be brief.hello responses".length / 4),
  );
});

Deno.test("the OpenAI SDK streams Responses events in order and the helper yields the final response", async () => {
  await using sim = await startSimulator({
    behaviour: { reply: "alpha beta gamma delta epsilon zeta eta" },
  });
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const stream = client.responses.stream({
    model: "gpt-5.1",
    input: [{ role: "user", content: "go" }],
  });
  const types: string[] = [];
  stream.on("event", (event) => types.push(event.type));
  const final = await stream.finalResponse();
  assert.equal(final.output_text, "alpha beta gamma delta epsilon zeta eta");
  assert.equal(
    final.usage?.output_tokens,
    Math.ceil(final.output_text.length / 4),
  );
  assert.deepEqual(types.slice(0, 4), [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
  ]);
  assert.ok(
    types.filter((t) => t === "response.output_text.delta").length >= 3,
  );
  assert.deepEqual(types.slice(-4), [
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
  ]);
});

Deno.test("the Responses API streams a function call whose argument deltas join into JSON", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const stream = await client.responses.create({
    model: "gpt-5.1",
    input: "what is the weather",
    tools: [{
      type: "function",
      name: "get_weather",
      parameters: weatherTool.function.parameters,
      strict: false,
    }],
    tool_choice: "required",
    stream: true,
  });
  let joined = "";
  let done: unknown;
  for await (const event of stream) {
    if (event.type === "response.function_call_arguments.delta") {
      joined += event.delta;
    }
    if (event.type === "response.completed") done = event.response.output[0];
  }
  assert.deepEqual(JSON.parse(joined), {
    city: "city value",
    unit: "celsius",
    days: 7,
  });
  assert.equal((done as { type: string }).type, "function_call");
});

Deno.test("the Responses stream helper accepts a streamed function call and a streamed incomplete reply", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const tools = [{
    type: "function" as const,
    name: "get_weather",
    parameters: weatherTool.function.parameters,
    strict: false,
  }];
  const called = await client.responses.stream({
    model: "gpt-5.1",
    input: "call tool get_weather",
    tools,
  })
    .finalResponse();
  const call = called.output[0];
  assert.ok(call.type === "function_call");
  assert.deepEqual(JSON.parse(call.arguments), {
    city: "city value",
    unit: "celsius",
    days: 7,
  });

  sim.setDefaultBehaviour({ reply: "c ".repeat(40) });
  const cut = await client.responses.stream({
    model: "gpt-5.1",
    input: "x",
    max_output_tokens: 16,
  })
    .finalResponse();
  assert.equal(cut.status, "incomplete");
  assert.equal(cut.output_text, "c ".repeat(32));
});

Deno.test("max_output_tokens makes a Responses reply incomplete", async () => {
  await using sim = await startSimulator({
    behaviour: { reply: "b".repeat(80) },
  });
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const response = await client.responses.create({
    model: "gpt-5.1",
    input: "hi",
    max_output_tokens: 16,
  });
  assert.equal(response.status, "incomplete");
  assert.equal(response.incomplete_details?.reason, "max_output_tokens");
  assert.equal(response.usage?.output_tokens, 16);
});

Deno.test("the Gemini OpenAI-compatible endpoint answers chat completions", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({
    baseURL: `${sim.baseUrls.gemini}/v1beta/openai`,
    apiKey: "g-key",
  });
  const completion = await client.chat.completions.create({
    model: "gemini-2.5-pro",
    messages: [{ role: "user", content: "compat" }],
  });
  assert.equal(completion.choices[0].message.content, "Echo: compat");
  assert.equal(sim.requests[0].provider, "gemini");
});

Deno.test("OpenAI errors carry the provider's error body and status", async () => {
  await using sim = await startSimulator();
  sim.enqueue({ behaviour: { status: 429, retryAfter: 7 } });
  const client = new OpenAI({
    baseURL: sim.baseUrls.openai,
    apiKey: "sk",
    maxRetries: 0,
  });
  const error = await client.chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "user", content: "x" }],
  })
    .catch((e) => e);
  assert.ok(error instanceof OpenAI.RateLimitError);
  assert.equal(error.headers.get("retry-after"), "7");
  assert.equal(error.code, "rate_limit_exceeded");
  assert.equal(error.type, "requests");

  const response = await fetch(`${sim.baseUrls.openai}/chat/completions`, {
    method: "POST",
    body: "{}",
  });
  assert.equal(response.status, 401);
  const body = await response.json();
  assert.equal(body.error.type, "invalid_request_error");
  assert.equal(body.error.param, null);
  assert.match(body.error.message, /API key/);
});

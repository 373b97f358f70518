import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { createParser } from "eventsource-parser";
import { startSimulator } from "./mod.ts";

const weatherTool = {
  name: "get_weather",
  description: "Weather for a city",
  input_schema: {
    type: "object" as const,
    properties: {
      city: { type: "string" },
      days: { type: "integer" },
      hourly: { type: "boolean" },
    },
    required: ["city"],
  },
};

Deno.test("the Anthropic SDK reads a message with uncached input, cache reads and cache writes", async () => {
  await using sim = await startSimulator({
    behaviour: { usage: { cachedTokens: 2, cacheCreationTokens: 1 } },
  });
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk-ant-1",
  });
  const message = await client.messages.create({
    model: "claude-opus-4-5",
    max_tokens: 100,
    system: "Be brief.",
    messages: [{ role: "user", content: "hello claude" }],
  });
  const prompt = Math.ceil("Be brief.hello claude".length / 4);
  assert.equal(message.type, "message");
  assert.deepEqual(message.content, [{
    type: "text",
    text: "Echo: hello claude",
  }]);
  assert.equal(message.stop_reason, "end_turn");
  assert.equal(message.usage.input_tokens, prompt - 3);
  assert.equal(message.usage.cache_read_input_tokens, 2);
  assert.equal(message.usage.cache_creation_input_tokens, 1);
  assert.equal(
    message.usage.output_tokens,
    Math.ceil("Echo: hello claude".length / 4),
  );
  assert.equal(sim.requests[0].key, "sk-ant-1");
  assert.ok(sim.requests[0].headers["anthropic-version"]);
});

Deno.test("the Anthropic SDK streams text events in the documented order", async () => {
  await using sim = await startSimulator({
    behaviour: { reply: "the quick brown fox jumps over the lazy dog" },
  });
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk-ant",
  });
  const stream = client.messages.stream({
    model: "claude-haiku-4-5",
    max_tokens: 100,
    messages: [{ role: "user", content: "go" }],
  });
  const types: string[] = [];
  stream.on("streamEvent", (event) => types.push(event.type));
  const final = await stream.finalMessage();
  assert.deepEqual(final.content, [{
    type: "text",
    text: "the quick brown fox jumps over the lazy dog",
  }]);
  assert.equal(final.stop_reason, "end_turn");
  assert.equal(final.usage.output_tokens, Math.ceil(43 / 4));
  assert.deepEqual(types.slice(0, 2), ["message_start", "content_block_start"]);
  assert.ok(types.filter((t) => t === "content_block_delta").length >= 3);
  assert.deepEqual(types.slice(-3), [
    "content_block_stop",
    "message_delta",
    "message_stop",
  ]);
});

Deno.test("the Anthropic SDK streams a tool_use block whose input_json_delta fragments join into JSON", async () => {
  await using sim = await startSimulator();
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk-ant",
  });
  const stream = client.messages.stream({
    model: "claude-opus-4-5",
    max_tokens: 200,
    tools: [weatherTool],
    messages: [{ role: "user", content: "Call tool get_weather please" }],
  });
  const fragments: string[] = [];
  stream.on("inputJson", (partial) => fragments.push(partial));
  const final = await stream.finalMessage();
  assert.equal(final.stop_reason, "tool_use");
  const block = final.content[0];
  assert.ok(block.type === "tool_use");
  assert.equal(block.name, "get_weather");
  assert.deepEqual(block.input, { city: "city value", days: 7, hourly: true });
  assert.ok(
    fragments.length >= 3,
    `expected several fragments, got ${fragments.length}`,
  );
  assert.deepEqual(JSON.parse(fragments.join("")), block.input);
});

Deno.test("tool_choice any forces a tool call and a tool_result gets a text reply naming the tool", async () => {
  await using sim = await startSimulator();
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk-ant",
  });
  const first = await client.messages.create({
    model: "claude-opus-4-5",
    max_tokens: 200,
    tools: [weatherTool],
    tool_choice: { type: "any" },
    messages: [{ role: "user", content: "weather in Oslo" }],
  });
  const use = first.content[0];
  assert.ok(use.type === "tool_use");
  const second = await client.messages.create({
    model: "claude-opus-4-5",
    max_tokens: 200,
    tools: [weatherTool],
    messages: [
      { role: "user", content: "weather in Oslo" },
      { role: "assistant", content: first.content },
      {
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: use.id,
          content: "snow, -3C",
        }],
      },
    ],
  });
  assert.deepEqual(second.content, [{
    type: "text",
    text: "Tool get_weather returned: snow, -3C",
  }]);
});

Deno.test("max_tokens cuts an Anthropic reply with stop_reason max_tokens and images count as tokens", async () => {
  await using sim = await startSimulator({
    behaviour: { reply: "z".repeat(100) },
  });
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk-ant",
  });
  const message = await client.messages.create({
    model: "claude-opus-4-5",
    max_tokens: 3,
    messages: [{
      role: "user",
      content: [
        {
          type: "image",
          source: {
            type: "base64",
            media_type: "image/png",
            data: "iVBORw0KGgo=",
          },
        },
        { type: "text", text: "abcd" },
      ],
    }],
  });
  assert.equal(message.stop_reason, "max_tokens");
  assert.deepEqual(message.content, [{ type: "text", text: "z".repeat(12) }]);
  assert.equal(message.usage.output_tokens, 3);
  assert.equal(message.usage.input_tokens, 1 + 258);
});

Deno.test("Anthropic errors use the provider's error body and the SDK's error classes", async () => {
  await using sim = await startSimulator({
    keys: { "sk-revoked": { status: 403 } },
  });
  sim.enqueue({ match: { provider: "anthropic" }, behaviour: { status: 529 } });
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk-ant",
    maxRetries: 0,
  });
  const request = {
    model: "claude-opus-4-5",
    max_tokens: 10,
    messages: [{ role: "user" as const, content: "x" }],
  };
  const overloaded = await client.messages.create(request).catch((e) => e);
  assert.ok(overloaded instanceof Anthropic.APIError);
  assert.equal(overloaded.status, 529);
  assert.equal(overloaded.error.error.type, "overloaded_error");

  const revoked = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk-revoked",
    maxRetries: 0,
  });
  assert.ok(
    await revoked.messages.create(request).catch((e) => e) instanceof
      Anthropic.PermissionDeniedError,
  );

  const missing = await fetch(`${sim.baseUrls.anthropic}/v1/messages`, {
    method: "POST",
    body: JSON.stringify(request),
  });
  assert.equal(missing.status, 401);
  const body = await missing.json();
  assert.equal(body.type, "error");
  assert.deepEqual(body.error, {
    type: "authentication_error",
    message: "x-api-key header is required",
  });

  const invalid = await client.messages.create(
    { model: "claude-opus-4-5", messages: [] } as never,
  ).catch((e) => e);
  assert.ok(invalid instanceof Anthropic.BadRequestError);
  assert.match(invalid.message, /max_tokens: Field required/);
});

Deno.test("the raw Anthropic stream names each event and sends a ping after the first block starts", async () => {
  await using sim = await startSimulator();
  const response = await fetch(`${sim.baseUrls.anthropic}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": "sk", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({
      model: "claude-opus-4-5",
      max_tokens: 50,
      stream: true,
      messages: [{ role: "user", content: "one two three four" }],
    }),
  });
  assert.match(
    response.headers.get("content-type") ?? "",
    /^text\/event-stream/,
  );
  const names: string[] = [];
  const parser = createParser({
    onEvent(event) {
      names.push(event.event ?? "");
      assert.equal(JSON.parse(event.data).type, event.event);
    },
  });
  parser.feed(await response.text());
  assert.deepEqual(names.slice(0, 3), [
    "message_start",
    "content_block_start",
    "ping",
  ]);
  assert.deepEqual(names.slice(-3), [
    "content_block_stop",
    "message_delta",
    "message_stop",
  ]);
});

Deno.test("an x-api-key header is accepted and recorded as the key used", async () => {
  await using sim = await startSimulator();
  const response = await fetch(`${sim.baseUrls.anthropic}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": "sk-header", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({
      model: "claude-opus-4-1",
      max_tokens: 50,
      messages: [{ role: "user", content: "hey" }],
    }),
  });
  assert.equal(response.status, 200);
  assert.equal((await response.json()).content[0].text, "Echo: hey");
  assert.equal(sim.requests[0].key, "sk-header");
  assert.equal(sim.requests[0].headers["x-api-key"], "sk-header");
});

const scriptTools = [
  {
    name: "look",
    description: "What you know",
    input_schema: {
      type: "object" as const,
      properties: { verbose: { type: "boolean" } },
      required: ["verbose"],
    },
  },
  {
    name: "guess",
    description: "Try a number",
    input_schema: {
      type: "object" as const,
      properties: { number: { type: "integer" } },
      required: ["number"],
    },
  },
];

for (const stream of [false, true]) {
  Deno.test(`the scripted agent calls the backticked tools in order over Messages, then answers (stream=${stream})`, async () => {
    await using sim = await startSimulator();
    const client = new Anthropic({
      baseURL: sim.baseUrls.anthropic,
      apiKey: "sk-ant",
    });
    const messages: Anthropic.MessageParam[] = [{
      role: "user",
      content: "Play: `guess` after `look`; `missing` is not a tool.",
    }];
    const calls: [string, unknown][] = [];
    for (let turn = 0; turn < 5; turn++) {
      const request = {
        model: "claude-sonnet-4-5",
        max_tokens: 200,
        tools: scriptTools,
        messages,
      };
      const message = stream
        ? await client.messages.stream(request).finalMessage()
        : await client.messages.create(request);
      const [block] = message.content;
      if (block.type !== "tool_use") {
        assert.equal(message.stop_reason, "end_turn");
        assert.deepEqual(block, {
          type: "text",
          text: "Tool look returned: range 1-10",
        });
        break;
      }
      assert.equal(message.stop_reason, "tool_use");
      calls.push([block.name, block.input]);
      messages.push({ role: "assistant", content: message.content });
      messages.push({
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: block.id,
          content: block.name === "look" ? "range 1-10" : "correct",
        }],
      });
    }
    assert.deepEqual(calls, [["guess", { number: 7 }], ["look", {
      verbose: true,
    }]]);
    assert.equal(sim.requests.length, 3);
  });
}

Deno.test("the computer-use agent goes before the scripted agent when a computer tool is declared", async () => {
  await using sim = await startSimulator();
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk-ant",
  });
  const message = await client.beta.messages.create({
    model: "claude-sonnet-4-5",
    max_tokens: 200,
    betas: ["computer-use-2025-01-24"],
    tools: [{
      type: "computer_20250124",
      name: "computer",
      display_width_px: 1280,
      display_height_px: 800,
    }, scriptTools[0]],
    messages: [{
      role: "user",
      content: "Call `look`. Click the text box at (412, 300).",
    }],
  });
  const [block] = message.content;
  assert.ok(block.type === "tool_use");
  assert.equal(block.name, "computer");
  assert.deepEqual(block.input, { action: "screenshot" });
});

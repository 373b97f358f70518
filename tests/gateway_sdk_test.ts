/**
 * The official SDKs, pointed at the gateway by base URL only, work unchanged:
 * OpenAI (chat completions and Responses), Anthropic (Messages) and Google
 * GenAI (native generateContent), streamed and not, and they read the
 * gateway's errors as their own.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { type Harness, startHarness } from "./_gateway_harness.ts";

function openai(h: Harness, apiKey = h.caller.key): OpenAI {
  return new OpenAI({ baseURL: `${h.url}/v1`, apiKey, maxRetries: 0 });
}

function anthropic(h: Harness, apiKey = h.caller.key): Anthropic {
  return new Anthropic({ baseURL: h.url, apiKey, maxRetries: 0 });
}

function genai(h: Harness, apiKey = h.caller.key): GoogleGenAI {
  return new GoogleGenAI({
    apiKey,
    httpOptions: {
      baseUrl: h.url,
      apiVersion: "v1beta",
      retryOptions: { attempts: 1 },
    },
  });
}

/** The provider keys the harness configured, so no caller key leaks upstream. */
function assertProviderKeyUsed(h: Harness, provider: string): void {
  const last = h.sim.requests.at(-1)!;
  assert.equal(last.provider, provider);
  assert.ok(
    h.providerKeys[provider].includes(last.key ?? ""),
    `upstream key ${last.key} is not a ${provider} provider key`,
  );
}

Deno.test("the OpenAI SDK creates a chat completion through the gateway", async () => {
  await using h = await startHarness();
  const completion = await openai(h).chat.completions.create({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "hello sdk" }],
  });
  assert.equal(completion.choices[0].message.content, "Echo: hello sdk");
  assert.equal(completion.choices[0].finish_reason, "stop");
  assert.ok(completion.usage!.prompt_tokens > 0);
  assertProviderKeyUsed(h, "openai");
  assert.equal(
    h.sim.requests[0].headers["authorization"]?.includes(h.caller.key),
    false,
  );
});

Deno.test("the OpenAI SDK streams a chat completion through the gateway, with the usage chunk it asked for", async () => {
  await using h = await startHarness({
    sim: { behaviour: { reply: "one two three four five" } },
  });
  const stream = await openai(h).chat.completions.create({
    model: "grok-4-1-fast",
    messages: [{ role: "user", content: "count" }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = "";
  let usage: OpenAI.CompletionUsage | undefined | null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    text += chunk.choices[0]?.delta?.content ?? "";
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, "one two three four five");
  assert.ok(chunks >= 3);
  assert.equal(usage?.completion_tokens, Math.ceil(23 / 4));
  assertProviderKeyUsed(h, "xai");
});

Deno.test("the OpenAI SDK creates a response through the gateway", async () => {
  await using h = await startHarness();
  const response = await openai(h).responses.create({
    model: "gpt-5.1",
    input: "hello responses",
  });
  assert.equal(response.output_text, "Echo: hello responses");
  assert.equal(response.status, "completed");
  assert.ok(response.usage!.output_tokens > 0);
  assertProviderKeyUsed(h, "openai");
});

Deno.test("the OpenAI SDK streams a response through the gateway", async () => {
  await using h = await startHarness();
  const stream = await openai(h).responses.create({
    model: "operator",
    input: "press start",
    stream: true,
  });
  let text = "";
  const types: string[] = [];
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === "response.output_text.delta") text += event.delta;
  }
  assert.equal(text, "Echo: press start");
  assert.equal(types[0], "response.created");
  assert.equal(types.at(-1), "response.completed");
  assert.equal(
    (h.sim.requests[0].body as { model: string }).model,
    "computer-use-preview",
  );
});

Deno.test("the OpenAI SDK raises the gateway's errors as its own error classes", async () => {
  await using h = await startHarness();
  await assert.rejects(
    openai(h).chat.completions.create({
      model: "no-such-model",
      messages: [{ role: "user", content: "hi" }],
    }),
    (error: unknown) => {
      assert.ok(error instanceof OpenAI.NotFoundError);
      assert.match(error.message, /"no-such-model"/);
      assert.equal(error.code, "model_not_found");
      return true;
    },
  );
  await assert.rejects(
    openai(h, "mk-not-a-key").responses.create({
      model: "gpt-4o",
      input: "hi",
    }),
    OpenAI.AuthenticationError,
  );
});

Deno.test("the Anthropic SDK creates a message through the gateway with x-api-key", async () => {
  await using h = await startHarness();
  const message = await anthropic(h).messages.create({
    model: "claude-opus-4-5",
    max_tokens: 100,
    system: "Be brief.",
    messages: [{ role: "user", content: "hello claude" }],
  });
  assert.deepEqual(message.content, [{
    type: "text",
    text: "Echo: hello claude",
  }]);
  assert.equal(message.stop_reason, "end_turn");
  assert.equal(message.model, "claude-opus-4-5");
  assert.ok(message.usage.input_tokens > 0);
  assertProviderKeyUsed(h, "anthropic");
  // The SDK's own API version travels upstream.
  assert.match(
    h.sim.requests[0].headers["anthropic-version"],
    /^\d{4}-\d{2}-\d{2}$/,
  );
});

Deno.test("the Anthropic SDK streams a message through the gateway", async () => {
  await using h = await startHarness({
    sim: { behaviour: { reply: "a b c d e f g h" } },
  });
  const stream = anthropic(h).messages.stream({
    model: "claude-opus-4-5",
    max_tokens: 100,
    messages: [{ role: "user", content: "letters" }],
  });
  let text = "";
  stream.on("text", (delta) => text += delta);
  const final = await stream.finalMessage();
  assert.equal(text, "a b c d e f g h");
  assert.deepEqual(final.content, [{ type: "text", text: "a b c d e f g h" }]);
  assert.equal(final.stop_reason, "end_turn");
  assert.equal(final.usage.output_tokens, Math.ceil(15 / 4));
});

Deno.test("the Anthropic SDK raises the gateway's errors as its own error classes", async () => {
  await using h = await startHarness();
  await assert.rejects(
    anthropic(h).messages.create({
      model: "gpt-4o",
      max_tokens: 10,
      messages: [{ role: "user", content: "hi" }],
    }),
    (error: unknown) => {
      assert.ok(error instanceof Anthropic.BadRequestError);
      assert.match(error.message, /chat, responses/);
      return true;
    },
  );
  await assert.rejects(
    anthropic(h, "mk-wrong").messages.create({
      model: "claude-haiku-4-5",
      max_tokens: 10,
      messages: [{ role: "user", content: "hi" }],
    }),
    Anthropic.AuthenticationError,
  );
});

Deno.test("the Google GenAI SDK calls generateContent through the gateway with x-goog-api-key", async () => {
  await using h = await startHarness();
  const response = await genai(h).models.generateContent({
    model: "gemini-2.5-computer-use-preview",
    contents: "hello gemini",
    config: { systemInstruction: "Be brief." },
  });
  assert.equal(response.text, "Echo: hello gemini");
  assert.equal(response.candidates?.[0].finishReason, "STOP");
  assert.ok(response.usageMetadata!.promptTokenCount! > 0);
  assertProviderKeyUsed(h, "gemini");
  assert.equal(
    h.sim.requests[0].path,
    "/gemini/v1beta/models/gemini-2.5-computer-use-preview-10-2025:generateContent",
  );
});

Deno.test("the Google GenAI SDK streams generateContentStream through the gateway over alt=sse", async () => {
  await using h = await startHarness({
    sim: { behaviour: { reply: "red orange yellow green blue" } },
  });
  const stream = await genai(h).models.generateContentStream({
    model: "gemini-2.5-computer-use-preview",
    contents: [{ role: "user", parts: [{ text: "colours" }] }],
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.ok(chunks.length >= 2);
  assert.equal(
    chunks.map((c) => c.text ?? "").join(""),
    "red orange yellow green blue",
  );
  assert.equal(chunks.at(-1)!.candidates?.[0].finishReason, "STOP");
  assert.equal(h.sim.requests[0].query.alt, "sse");
});

Deno.test("the Google GenAI SDK raises the gateway's errors with Google's status", async () => {
  await using h = await startHarness();
  await assert.rejects(
    genai(h).models.generateContent({
      model: "gemini-2.5-pro",
      contents: "hi",
    }),
    (error: unknown) => {
      assert.equal((error as { status?: number }).status, 400);
      assert.match((error as Error).message, /INVALID_ARGUMENT/);
      assert.match((error as Error).message, /available on: chat/);
      return true;
    },
  );
  await assert.rejects(
    genai(h, "mk-wrong").models.generateContent({
      model: "gemini-2.5-computer-use-preview",
      contents: "hi",
    }),
    (error: unknown) => {
      assert.equal((error as { status?: number }).status, 401);
      return true;
    },
  );
});

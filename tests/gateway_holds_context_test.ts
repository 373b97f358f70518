/**
 * A hold covers what will be charged when the body only names it: a
 * Responses `conversation`, stored `prompt` or `item_reference` input is
 * held at the model's context window where the catalog gives it (else at
 * the fixed referenced-context estimate), and an Anthropic 1-hour cache
 * write at the 1-hour price. A caller whose credits cover the visible body
 * but not what it names is refused with 402 before anything is sent.
 * Through the official SDKs against a loopback provider.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import { startHarness } from "./_gateway_harness.ts";
import { startBillingUpstream } from "./_billing_upstream.ts";

function isStatus(status: number): (error: unknown) => boolean {
  return (error) => (error as { status?: number }).status === status;
}

Deno.test("Responses conversation, stored prompt and item_reference inputs are held for the context they name", async () => {
  await using upstream = startBillingUpstream();
  await using h = await startHarness({
    env: { OPENAI_BASE_URL: upstream.base },
    credits: 0.01,
  });
  const client = new OpenAI({
    baseURL: `${h.url}/v1`,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
  // gpt-5.4's 1,050,000-token window at $2.50 per million: $2.62 held.
  await assert.rejects(
    client.responses.create({
      model: "gpt-5.4",
      input: "hi",
      max_output_tokens: 16,
      conversation: "conv_elsewhere",
    }),
    isStatus(402),
  );
  // gpt-4o-mini's 128,000-token window at $0.15 per million: $0.019 held.
  await assert.rejects(
    client.responses.create({
      model: "gpt-4o-mini",
      max_output_tokens: 16,
      prompt: { id: "pmpt_1" },
    }),
    isStatus(402),
  );
  await assert.rejects(
    client.responses.create({
      model: "gpt-4o-mini",
      max_output_tokens: 16,
      input: [{ type: "item_reference", id: "msg_1" }],
    }),
    isStatus(402),
  );
  assert.equal(upstream.received.length, 0);
  // The same body without the reference fits the credits.
  const served = await client.responses.create({
    model: "gpt-4o-mini",
    max_output_tokens: 16,
    input: "hi",
  });
  assert.equal(served.status, "incomplete");
});

Deno.test("an Anthropic 1-hour cache write is held at the 1-hour price", async () => {
  await using upstream = startBillingUpstream();
  await using h = await startHarness({
    env: { ANTHROPIC_BASE_URL: upstream.base },
    credits: 0.15,
  });
  const client = new Anthropic({
    baseURL: h.url,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
  // About 100,000 tokens: $0.10 at the input price, $0.125 written for 5
  // minutes, $0.20 for an hour on claude-haiku-4-5.
  const text = "a".repeat(300_000);
  const call = (ttl: "5m" | "1h") =>
    client.messages.create({
      model: "claude-haiku-4-5",
      max_tokens: 1,
      system: [{
        type: "text",
        text,
        cache_control: { type: "ephemeral", ttl },
      }],
      messages: [{ role: "user", content: "hi" }],
    });
  await assert.rejects(call("1h"), isStatus(402));
  assert.equal(upstream.received.length, 0);
  const fiveMinutes = await call("5m");
  assert.equal(fiveMinutes.stop_reason, "max_tokens");
});

Deno.test("stored context on a model whose context window the catalog does not give is refused with a 400 before anything is sent", async () => {
  await using upstream = startBillingUpstream();
  await using h = await startHarness({
    env: { GEMINI_BASE_URL: upstream.base },
  });
  const client = new GoogleGenAI({
    apiKey: h.caller.key,
    httpOptions: { baseUrl: h.url },
  });
  await assert.rejects(
    client.models.generateContent({
      model: "gemini-2.5-computer-use-preview",
      contents: "Go on.",
      config: {
        cachedContent: "cachedContents/elsewhere",
        maxOutputTokens: 16,
      },
    }),
    (error: unknown) => {
      assert.equal((error as { status?: number }).status, 400);
      assert.match(String(error), /no context window in the catalog/);
      return true;
    },
  );
  assert.equal(upstream.received.length, 0);
});

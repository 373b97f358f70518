/**
 * What SDK helpers call beside inference: OpenAI's `models.retrieve`,
 * Anthropic's `messages.countTokens` and Gemini's `countTokens`, each in its
 * own convention, never charged; and errors in the route's convention for
 * paths that do not exist under a route's prefix.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { listLedger } from "../gateway/state/credits/ledger.ts";
import { startHarness } from "./_gateway_harness.ts";

Deno.test("OpenAI models.retrieve() gets one model; an unknown id is a 404 in OpenAI's convention", async () => {
  await using h = await startHarness();
  const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: h.caller.key });
  const model = await client.models.retrieve("claude-haiku-4-5");
  assert.equal(model.id, "claude-haiku-4-5");
  assert.equal(model.object, "model");
  assert.equal(model.owned_by, "anthropic");
  const slashed = await client.models.retrieve("z-ai/glm-4.5v");
  assert.equal(slashed.id, "z-ai/glm-4.5v");
  await assert.rejects(
    client.models.retrieve("no-such-model"),
    (error: unknown) => error instanceof OpenAI.NotFoundError,
  );
});

Deno.test("Anthropic messages.countTokens() is passed through and not charged", async () => {
  await using h = await startHarness();
  const client = new Anthropic({ baseURL: h.url, apiKey: h.caller.key });
  const counted = await client.messages.countTokens({
    model: "claude-haiku-4-5",
    messages: [{ role: "user", content: "How many tokens is this?" }],
  });
  assert.ok(counted.input_tokens > 0);
  const upstream = h.sim.requests.at(-1)!;
  assert.equal(upstream.path, "/anthropic/v1/messages/count_tokens");
  assert.equal((upstream.body as { model: string }).model, "claude-haiku-4-5");
  await assert.rejects(
    client.messages.countTokens({
      model: "gpt-4o",
      messages: [{ role: "user", content: "hi" }],
    }),
    (error: unknown) => error instanceof Anthropic.BadRequestError,
  );
  const charges = (await listLedger(h.kv, h.caller.id)).filter((entry) =>
    entry.kind === "charge"
  );
  assert.deepEqual(charges, []);
});

Deno.test("Gemini countTokens() works for models on the gemini route and is not charged", async () => {
  await using h = await startHarness();
  const client = new GoogleGenAI({
    apiKey: h.caller.key,
    httpOptions: { baseUrl: h.url },
  });
  const counted = await client.models.countTokens({
    model: "gemini-2.5-computer-use-preview",
    contents: "How many tokens is this?",
  });
  assert.ok((counted.totalTokens ?? 0) > 0);
  assert.match(h.sim.requests.at(-1)!.path, /:countTokens$/);
  const charges = (await listLedger(h.kv, h.caller.id)).filter((entry) =>
    entry.kind === "charge"
  );
  assert.deepEqual(charges, []);
});

Deno.test("paths that do not exist under a route's prefix get a 404 in that route's convention", async () => {
  await using h = await startHarness();
  const messages = await h.post("/v1/messages/nope", {});
  assert.equal(messages.status, 404);
  assert.equal((await messages.json()).type, "error");
  const gemini = await h.post("/v1beta/models/x:nope", {});
  assert.equal(gemini.status, 404);
  assert.equal((await gemini.json()).error.status, "NOT_FOUND");
  const chat = await h.post("/v1/chat/nope", {});
  assert.equal(chat.status, 404);
  assert.equal((await chat.json()).error.type, "not_found_error");
});

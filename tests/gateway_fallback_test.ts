/**
 * Fallback routing: while nothing has reached the caller, a call whose
 * provider has no free key, fails, times out or cannot be reached moves to
 * the model's catalog alternates, then to the body's `models` list; the
 * answer says what served it, the caller pays that model's price, and the
 * trace lists every attempt.
 */
import assert from "node:assert/strict";
import { DEFAULT_CATALOG } from "../gateway/state/catalog.ts";
import { ledgerEntryOf, traceOf } from "./_gateway_e2e.ts";
import { startHarness } from "./_gateway_harness.ts";
import { readSse } from "./_gateway_routes.ts";

function price(id: string) {
  return DEFAULT_CATALOG.find((e) => e.id === id)!.pricing;
}

const HELLO = [{ role: "user", content: "hello" }];

Deno.test("with Anthropic down, a Claude call is served by its OpenRouter alternate, streamed and not, at that model's price", async () => {
  await using h = await startHarness();
  for (const key of h.providerKeys.anthropic) {
    h.sim.setKeyBehaviour(key, { status: 503 });
  }
  for (const stream of [false, true]) {
    const response = await h.post("/v1/chat/completions", {
      model: "claude-sonnet-5-5",
      messages: HELLO,
      max_tokens: 32,
      stream,
    });
    assert.equal(response.status, 200);
    assert.equal(
      response.headers.get("x-gateway-model"),
      "anthropic/claude-sonnet-5.5",
    );
    assert.equal(response.headers.get("x-gateway-provider"), "openrouter");
    if (stream) {
      const events = await readSse(response);
      assert.equal(events.at(-1)?.data, "[DONE]");
    } else {
      const body = await response.json();
      assert.equal(body.model, "anthropic/claude-sonnet-5.5");
    }
    const requestId = response.headers.get("x-request-id")!;
    const entry = await ledgerEntryOf(h.kv, h.caller.id, requestId);
    assert.equal(entry.model, "anthropic/claude-sonnet-5.5");
    assert.equal(entry.provider, "openrouter");
    const p = price("anthropic/claude-sonnet-5.5");
    assert.equal(
      -entry.amountMicros,
      Math.ceil(
        entry.inputTokens! * p.input + entry.outputTokens! * p.output - 1e-9,
      ),
    );
    const trace = await traceOf(h.kv, h.caller.id, requestId);
    assert.deepEqual(
      trace.attempts?.map((a) => [a.model, a.provider, a.status]),
      [
        ["claude-sonnet-5-5", "anthropic", 502],
        ["anthropic/claude-sonnet-5.5", "openrouter", 200],
      ],
    );
  }
});

Deno.test("the body's models list is tried in order when the model's provider has no free key", async () => {
  await using h = await startHarness({
    sim: {},
    env: { OPENAI_API_KEYS: "", OPENAI_API_KEY: "" },
    keysPerProvider: 2,
  });
  // No OpenAI key at all: gpt-4o cannot be served; xAI can.
  const response = await h.post("/v1/chat/completions", {
    model: "gpt-4o",
    models: ["grok-4-1-fast", "z-ai/glm-4.5v"],
    messages: HELLO,
  });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.equal(response.headers.get("x-gateway-model"), "grok-4-1-fast");
  assert.equal(response.headers.get("x-gateway-provider"), "xai");
  // The list is the gateway's to follow: no provider sees it.
  for (const request of h.sim.requests) {
    assert.equal((request.body as { models?: unknown }).models, undefined);
  }
});

Deno.test("a request the provider refuses (4xx) does not fall back, and a bad models list is a 400", async () => {
  await using h = await startHarness();
  h.sim.enqueue({
    match: { provider: "anthropic" },
    behaviour: { status: 400, message: "messages: bad" },
  });
  const refused = await h.post("/v1/chat/completions", {
    model: "claude-sonnet-5-5",
    messages: HELLO,
  });
  assert.equal(refused.status, 400);
  await refused.body?.cancel();
  assert.deepEqual(h.sim.requests.map((r) => r.provider), ["anthropic"]);
  const bad = await h.post("/v1/chat/completions", {
    model: "gpt-4o",
    models: "grok-4-1-fast",
    messages: HELLO,
  });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.param, "models");
  const unknown = await h.post("/v1/chat/completions", {
    model: "gpt-4o",
    models: ["no-such-model"],
    messages: HELLO,
  });
  assert.equal(unknown.status, 404);
  await unknown.body?.cancel();
});

Deno.test("a single 5xx is retried on another key of the same provider before any fallback", async () => {
  await using h = await startHarness();
  h.sim.enqueue({
    match: { provider: "anthropic" },
    behaviour: { status: 500 },
  });
  const response = await h.post("/v1/chat/completions", {
    model: "claude-sonnet-5-5",
    messages: HELLO,
  });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("x-gateway-provider"), "anthropic");
  await response.body?.cancel();
  const keys = h.sim.requests.map((r) => r.key);
  assert.equal(keys.length, 2);
  assert.notEqual(keys[0], keys[1]);
});

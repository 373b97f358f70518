/**
 * A call's hold covers every answer it can be billed for: each of the `n`
 * choices of a chat call (passed through to OpenAI-convention providers) and
 * each of Gemini's `candidateCount` candidates, and the larger of chat's
 * `max_tokens` and `max_completion_tokens` when a caller sends both (a
 * provider may honour either). Against a loopback upstream that bills what
 * the request allows, a caller whose credits cover one choice but not the
 * call is refused with 402 instead of served into debt.
 */
import assert from "node:assert/strict";
import { startHarness } from "./_gateway_harness.ts";

function billingUpstream(): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    async (request) => {
      const body = await request.json();
      if (new URL(request.url).pathname.includes("generateContent")) {
        const config = body.generationConfig ?? {};
        const output = (config.candidateCount ?? 1) * config.maxOutputTokens;
        return Response.json({
          candidates: [{
            content: { role: "model", parts: [{ text: "hi" }] },
            finishReason: "STOP",
          }],
          usageMetadata: {
            promptTokenCount: 10,
            candidatesTokenCount: output,
            totalTokenCount: 10 + output,
          },
        });
      }
      const max = Math.max(
        body.max_tokens ?? 0,
        body.max_completion_tokens ?? 0,
      );
      // Rejected predicted tokens are billed as output (about 4 characters a token).
      const predicted = body.prediction
        ? Math.ceil(JSON.stringify(body.prediction.content).length / 4)
        : 0;
      const output = (body.n ?? 1) * max + predicted;
      return Response.json({
        id: "chatcmpl-1",
        object: "chat.completion",
        created: 1,
        model: body.model,
        choices: [{
          index: 0,
          message: { role: "assistant", content: "hi" },
          finish_reason: "length",
        }],
        usage: {
          prompt_tokens: 10,
          completion_tokens: output,
          total_tokens: 10 + output,
        },
      });
    },
  );
}

const HELLO = [{ role: "user", content: "hello" }];

Deno.test("a hold covers every choice (n, candidateCount) and the larger output cap a chat body names", async () => {
  await using upstream = billingUpstream();
  const base = `http://127.0.0.1:${upstream.addr.port}`;
  await using h = await startHarness({
    env: { OPENAI_BASE_URL: base, GEMINI_BASE_URL: base },
    credits: 0.005,
  });
  const refusals: [string, string, Record<string, unknown>][] = [
    ["n=8", "/v1/chat/completions", {
      model: "gpt-4o-mini",
      messages: HELLO,
      max_tokens: 2_000,
      n: 8,
    }],
    [
      "max_tokens beside a smaller max_completion_tokens",
      "/v1/chat/completions",
      {
        model: "gpt-4o-mini",
        messages: HELLO,
        max_completion_tokens: 1,
        max_tokens: 9_000,
      },
    ],
    ["a prediction billed as output", "/v1/chat/completions", {
      model: "gpt-4o-mini",
      messages: HELLO,
      max_tokens: 1,
      prediction: { type: "content", content: "x".repeat(40_000) },
    }],
    [
      "candidateCount=8",
      "/v1beta/models/gemini-2.5-computer-use-preview:generateContent",
      {
        contents: [{ role: "user", parts: [{ text: "hello" }] }],
        generationConfig: { maxOutputTokens: 400, candidateCount: 8 },
      },
    ],
  ];
  for (const [label, path, body] of refusals) {
    const response = await h.post(path, body);
    assert.equal(response.status, 402, `${label}: ${await response.text()}`);
  }
  // One choice within the credits is served.
  const served = await h.post("/v1/chat/completions", {
    model: "gpt-4o-mini",
    messages: HELLO,
    max_tokens: 2_000,
  });
  assert.equal(served.status, 200, await served.text());
  const credits = await fetch(`${h.url}/v1/credits`, { headers: h.auth() });
  const { balance } = await credits.json() as { balance: number };
  assert.ok(balance >= 0, `balance ${balance}`);
});

Deno.test("a caller's output limit above the catalog's is capped to it upstream, so the provider bills no more than the hold", async () => {
  await using upstream = billingUpstream();
  const base = `http://127.0.0.1:${upstream.addr.port}`;
  const admin = "holds-choices-admin";
  await using h = await startHarness({
    env: { OPENAI_BASE_URL: base, GATEWAY_ADMIN_TOKEN: admin },
    credits: 0.005,
  });
  // An operator's model that allows less output than the provider's.
  const put = await fetch(`${h.url}/admin/models/house-model`, {
    method: "PUT",
    headers: {
      authorization: `Bearer ${admin}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({
      provider: "openai",
      upstream: "gpt-4o-mini",
      routes: ["chat"],
      pricing: { input: 0.15, output: 0.6 },
      maxOutputTokens: 1_000,
    }),
  });
  assert.equal(put.status, 200, await put.text());
  // The live catalog reaches the call path within 2 s.
  for (let i = 0;; i++) {
    const probe = await h.post("/v1/chat/completions", {
      model: "house-model",
      messages: HELLO,
      max_tokens: 1,
    });
    await probe.body?.cancel();
    if (probe.status === 200) break;
    assert.ok(i < 60, `house-model not served: ${probe.status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  for (const field of ["max_tokens", "max_completion_tokens"]) {
    const response = await h.post("/v1/chat/completions", {
      model: "house-model",
      messages: HELLO,
      [field]: 16_000,
    });
    assert.equal(response.status, 200, await response.text());
  }
  const credits = await fetch(`${h.url}/v1/credits`, { headers: h.auth() });
  const { balance } = await credits.json() as { balance: number };
  // Two calls of at most 1,000 output tokens each: about $0.0012.
  assert.ok(balance >= 0.0035, `balance ${balance}`);
});

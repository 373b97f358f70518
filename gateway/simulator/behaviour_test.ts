import assert from "node:assert/strict";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { startSimulator } from "./mod.ts";

const chatBody = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    model: "gpt-4o",
    messages: [{ role: "user", content: "hi" }],
    ...extra,
  });

function post(
  url: string,
  key: string,
  body: string,
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
    body,
    signal,
  });
}

Deno.test("a scripted 429 carries retry-after and is consumed once, then requests succeed", async () => {
  await using sim = await startSimulator();
  sim.enqueue({
    match: { provider: "openai", path: "/chat/completions" },
    behaviour: { status: 429, retryAfter: 2 },
  });
  const url = `${sim.baseUrls.openai}/chat/completions`;
  const limited = await post(url, "sk-a", chatBody());
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get("retry-after"), "2");
  assert.equal((await limited.json()).error.code, "rate_limit_exceeded");
  const ok = await post(url, "sk-a", chatBody());
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
  assert.deepEqual(sim.requests.map((r) => r.status), [429, 200]);
  assert.equal(sim.pending, 0);
});

Deno.test("scripted steps match on provider and key and can apply several times", async () => {
  await using sim = await startSimulator();
  sim.enqueue({ match: { provider: "xai" }, behaviour: { status: 500 } });
  sim.enqueue({ match: { key: "sk-b" }, behaviour: { status: 503 }, times: 2 });
  const openaiUrl = `${sim.baseUrls.openai}/chat/completions`;
  const statuses = [];
  for (const key of ["sk-a", "sk-b", "sk-b", "sk-b"]) {
    const response = await post(openaiUrl, key, chatBody());
    await response.body?.cancel();
    statuses.push(response.status);
  }
  assert.deepEqual(statuses, [200, 503, 503, 200]);
  const xai = await post(
    `${sim.baseUrls.xai}/chat/completions`,
    "x",
    chatBody(),
  );
  await xai.body?.cancel();
  assert.equal(xai.status, 500);
  assert.throws(() => sim.enqueue({ behaviour: {}, times: 0 }), RangeError);
});

Deno.test("per-key behaviours apply to the key presented and the requests record which key was used", async () => {
  await using sim = await startSimulator({
    keys: { "sk-dead": { status: 401 } },
  });
  sim.setKeyBehaviour("sk-slow", { reply: "from the slow key" });
  const client = (apiKey: string) =>
    new OpenAI({ baseURL: sim.baseUrls.openai, apiKey, maxRetries: 0 });
  const error = await client("sk-dead").chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "user", content: "x" }],
  }).catch((e) => e);
  assert.ok(error instanceof OpenAI.AuthenticationError);
  const reply = await client("sk-slow").chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "user", content: "x" }],
  });
  assert.equal(reply.choices[0].message.content, "from the slow key");
  assert.deepEqual(sim.requests.map((r) => [r.key, r.status]), [[
    "sk-dead",
    401,
  ], ["sk-slow", 200]]);
  assert.equal(sim.requests[1].headers.authorization, "Bearer sk-slow");
  assert.deepEqual((sim.requests[1].body as { model: string }).model, "gpt-4o");
  sim.setKeyBehaviour("sk-dead", undefined);
  const revived = await client("sk-dead").chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "user", content: "x" }],
  });
  assert.equal(revived.choices[0].message.content, "Echo: x");
});

Deno.test("validKeys refuses other keys with the provider's 401", async () => {
  await using sim = await startSimulator({ validKeys: ["sk-good"] });
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk-other",
    maxRetries: 0,
  });
  const error = await client.messages.create({
    model: "claude-opus-4-5",
    max_tokens: 5,
    messages: [{ role: "user", content: "x" }],
  }).catch((e) => e);
  assert.ok(error instanceof Anthropic.AuthenticationError);
});

Deno.test("latencyMs delays the first byte", async () => {
  await using sim = await startSimulator({ behaviour: { latencyMs: 60 } });
  const started = performance.now();
  const response = await post(
    `${sim.baseUrls.openai}/chat/completions`,
    "sk",
    chatBody(),
  );
  await response.json();
  assert.ok(performance.now() - started >= 55);
});

Deno.test("a hanging request is recorded as aborted when the client gives up", async () => {
  await using sim = await startSimulator();
  sim.enqueue({ behaviour: { hang: true } });
  const client = new OpenAI({
    baseURL: sim.baseUrls.openai,
    apiKey: "sk",
    maxRetries: 0,
  });
  const controller = new AbortController();
  const pending = client.chat.completions.create(
    { model: "gpt-4o", messages: [{ role: "user", content: "x" }] },
    { signal: controller.signal },
  ).catch((e) => e);
  await sim.waitFor(() => sim.requests.length === 1);
  controller.abort();
  assert.ok(await pending instanceof OpenAI.APIUserAbortError);
  await sim.waitFor(() => sim.aborted === 1);
  assert.equal(sim.requests[0].aborted, true);
  assert.equal(sim.requests[0].status, 0);
});

Deno.test("closing the simulator ends a hanging request", async () => {
  const sim = await startSimulator({ behaviour: { hang: true } });
  const pending = post(
    `${sim.baseUrls.openai}/chat/completions`,
    "sk",
    chatBody(),
  )
    .then((response) => response.text())
    .then(() => "answered", () => "failed");
  await sim.waitFor(() => sim.requests.length === 1);
  await sim.close();
  assert.equal(await pending, "failed");
  assert.equal(sim.requests[0].aborted, false);
});

Deno.test("garbage answers 200 with a body that is not JSON", async () => {
  await using sim = await startSimulator();
  sim.enqueue({ behaviour: { garbage: true }, times: 2 });
  const client = new OpenAI({
    baseURL: sim.baseUrls.openai,
    apiKey: "sk",
    maxRetries: 0,
  });
  const plain = await post(
    `${sim.baseUrls.openai}/chat/completions`,
    "sk",
    chatBody(),
  );
  assert.equal(plain.status, 200);
  await assert.rejects(plain.json(), SyntaxError);
  const streamed = await client.chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "user", content: "x" }],
    stream: true,
  });
  await assert.rejects(async () => {
    for await (const _ of streamed) { /* the first event fails to parse */ }
  });
});

Deno.test("cutStreamAfter drops the connection without the terminal event", async () => {
  await using sim = await startSimulator();
  sim.enqueue({ behaviour: { cutStreamAfter: 3 } });
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk",
    maxRetries: 0,
  });
  const stream = client.messages.stream({
    model: "claude-opus-4-5",
    max_tokens: 100,
    messages: [{ role: "user", content: "a b c d e f g h i j k l" }],
  });
  const seen: string[] = [];
  stream.on("streamEvent", (event) => seen.push(event.type));
  await assert.rejects(stream.finalMessage());
  assert.ok(!seen.includes("message_stop"));
  assert.ok(seen.length <= 3);
  assert.equal(sim.requests[0].aborted, false);
});

Deno.test("a slow stream aborted by the client mid-way is recorded as aborted", async () => {
  await using sim = await startSimulator({
    behaviour: { chunkDelayMs: 20, reply: "w ".repeat(60) },
  });
  const controller = new AbortController();
  const response = await post(
    `${sim.baseUrls.openai}/chat/completions`,
    "sk",
    chatBody({ stream: true }),
    controller.signal,
  );
  const reader = response.body!.getReader();
  await reader.read();
  await reader.read();
  controller.abort();
  await reader.cancel().catch(() => {});
  await sim.waitFor(() => sim.aborted === 1);
  assert.equal(sim.requests[0].aborted, true);
  assert.equal(sim.requests[0].status, 200);
});

Deno.test("closing the simulator cuts open slow streams", async () => {
  const sim = await startSimulator({
    behaviour: { chunkDelayMs: 50, reply: "x ".repeat(100) },
  });
  const response = await post(
    `${sim.baseUrls.openai}/chat/completions`,
    "sk",
    chatBody({ stream: true }),
  );
  const reader = response.body!.getReader();
  await reader.read();
  await sim.close();
  await assert.rejects(async () => {
    while (!(await reader.read()).done) { /* drain until the cut */ }
  });
});

Deno.test("a slow stream delivers every event with the delay between them", async () => {
  await using sim = await startSimulator({
    behaviour: { chunkDelayMs: 10, reply: "a b c d e f" },
  });
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const started = performance.now();
  const stream = await client.chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "user", content: "x" }],
    stream: true,
  });
  let text = "";
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? "";
  }
  assert.equal(text, "a b c d e f");
  assert.ok(performance.now() - started >= 30);
  assert.equal(sim.requests[0].aborted, false);
});

Deno.test("unknown paths answer 404 in the provider's format and are recorded", async () => {
  await using sim = await startSimulator();
  const response = await fetch(`${sim.baseUrls.anthropic}/v1/complete`, {
    method: "POST",
    body: "{}",
  });
  assert.equal(response.status, 404);
  assert.equal((await response.json()).error.type, "not_found_error");
  assert.equal(sim.requests[0].provider, "anthropic");
  assert.equal(sim.requests[0].status, 404);
});

Deno.test("invalid JSON answers 400 in the provider's format", async () => {
  await using sim = await startSimulator();
  const response = await post(
    `${sim.baseUrls.openrouter}/chat/completions`,
    "sk",
    "{not json",
  );
  assert.equal(response.status, 400);
  assert.equal((await response.json()).error.type, "invalid_request_error");
  assert.equal(sim.requests[0].body, "{not json");
});

Deno.test("clear forgets requests, aborts and queued steps, and env names every base URL", async () => {
  await using sim = await startSimulator();
  sim.enqueue({ behaviour: { status: 500 } });
  const response = await post(
    `${sim.baseUrls.openai}/chat/completions`,
    "sk",
    chatBody(),
  );
  await response.body?.cancel();
  sim.enqueue({ behaviour: { status: 500 } });
  const records = sim.requests;
  sim.clear();
  assert.equal(records.length, 0);
  assert.equal(sim.pending, 0);
  assert.deepEqual(sim.env(), {
    OPENAI_BASE_URL: `${sim.baseUrl}/openai/v1`,
    ANTHROPIC_BASE_URL: `${sim.baseUrl}/anthropic`,
    GEMINI_BASE_URL: `${sim.baseUrl}/gemini`,
    XAI_BASE_URL: `${sim.baseUrl}/xai/v1`,
    OPENROUTER_BASE_URL: `${sim.baseUrl}/openrouter/api/v1`,
  });
  await assert.rejects(sim.waitFor(() => false, 20), /Timed out/);
});

Deno.test("old records are dropped past maxRecords", async () => {
  await using sim = await startSimulator({ maxRecords: 4 });
  for (let i = 0; i < 5; i++) {
    const response = await post(
      `${sim.baseUrls.openai}/chat/completions`,
      "sk",
      chatBody(),
    );
    await response.body?.cancel();
  }
  assert.equal(sim.requests.length, 3);
});

Deno.test("a client that gives up during latencyMs is recorded as aborted", async () => {
  await using sim = await startSimulator({ behaviour: { latencyMs: 5_000 } });
  const controller = new AbortController();
  const pending = post(
    `${sim.baseUrls.openai}/chat/completions`,
    "sk",
    chatBody(),
    controller.signal,
  )
    .catch((e) => e);
  await sim.waitFor(() => sim.requests.length === 1);
  controller.abort();
  assert.equal((await pending).name, "AbortError");
  await sim.waitFor(() => sim.aborted === 1);
  assert.equal(sim.requests[0].aborted, true);
});

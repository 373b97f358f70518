/**
 * The key scrub never rewrites ordinary text (issue 22, part 6): with the
 * README's own provider key `sim`, streamed words and the simulator's ids
 * (`call_sim…`, `msg_sim…`) come through intact, while a key as long as a
 * real provider's is still named by its id wherever a provider quotes it.
 */
import assert from "node:assert/strict";
import { startHarness } from "./_gateway_harness.ts";

const README_KEYS = {
  OPENAI_API_KEYS: "sim",
  ANTHROPIC_API_KEYS: "sim",
  GEMINI_API_KEYS: "sim",
  XAI_API_KEYS: "sim",
  OPENROUTER_API_KEYS: "sim",
};
const WORDS = "a simple simulation of sim, simply";

Deno.test("with the README's `sim` key, streamed words and tool ids come through intact on every kind of relay", async () => {
  await using h = await startHarness({ env: README_KEYS });
  // OpenAI passthrough: text, then a forced tool call.
  h.sim.enqueue({ behaviour: { reply: WORDS } });
  const text = await h.post("/v1/chat/completions", {
    model: "gpt-4o-mini",
    stream: true,
    messages: [{ role: "user", content: "Say something" }],
  });
  assert.equal(text.status, 200);
  const raw = await text.text();
  assert.ok(!raw.includes("[key "), raw);
  const said = raw.split("\n").filter((line) => line.startsWith("data: {")).map(
    (line) => JSON.parse(line.slice(6)),
  )
    .map((event) => event.choices?.[0]?.delta?.content ?? "").join("");
  assert.equal(said, WORDS);

  const tool = await h.post("/v1/chat/completions", {
    model: "gpt-4o-mini",
    stream: true,
    messages: [{ role: "user", content: "Look it up" }],
    tools: [{
      type: "function",
      function: {
        name: "simulate",
        parameters: {
          type: "object",
          properties: { q: { type: "string" } },
          required: ["q"],
        },
      },
    }],
    tool_choice: "required",
  });
  const toolRaw = await tool.text();
  assert.ok(!toolRaw.includes("[key "), toolRaw);
  assert.match(toolRaw, /"id":"call_sim\w*"/);
  assert.match(toolRaw, /"name":"simulate"/);

  // Anthropic, native and translated from chat.
  h.sim.enqueue({ behaviour: { reply: WORDS } });
  const messages = await h.post("/v1/messages", {
    model: "claude-haiku-4-5",
    max_tokens: 50,
    stream: true,
    messages: [{ role: "user", content: "Say something" }],
  });
  const messagesRaw = await messages.text();
  assert.ok(!messagesRaw.includes("[key "), messagesRaw);
  assert.match(messagesRaw, /"id":"msg_sim\w*"/);
  h.sim.enqueue({ behaviour: { reply: WORDS } });
  const translated = await h.post("/v1/chat/completions", {
    model: "claude-haiku-4-5",
    stream: true,
    messages: [{ role: "user", content: "Say something" }],
  });
  const translatedRaw = await translated.text();
  assert.ok(!translatedRaw.includes("[key "), translatedRaw);
  const translatedText = translatedRaw.split("\n").filter((line) =>
    line.startsWith("data: {")
  ).map((line) => JSON.parse(line.slice(6)))
    .map((event) => event.choices?.[0]?.delta?.content ?? "").join("");
  assert.equal(translatedText, WORDS);
});

Deno.test("a key as long as a real provider's is still scrubbed from the error a streamed call gets", async () => {
  const real = "sk-proj-" + "k".repeat(40);
  await using h = await startHarness({ env: { OPENAI_API_KEYS: real } });
  h.sim.enqueue({
    behaviour: { status: 400, message: `Incorrect API key provided: ${real}` },
  });
  const response = await h.post("/v1/chat/completions", {
    model: "gpt-4o-mini",
    stream: true,
    messages: [{ role: "user", content: "Hello" }],
  });
  const body = await response.text();
  assert.equal(response.status, 400);
  assert.ok(!body.includes(real), body);
  assert.match(body, /\[key openai:[0-9a-f]{8}\]/);
});

import assert from "node:assert/strict";
import OpenAI from "openai";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { encodePng, toBase64 } from "../../tests/fixtures/png.ts";
import { imageTokens } from "./image.ts";
import { startSimulator } from "./mod.ts";

const PROMPT =
  'The screen is 1280x800. Click the text box at (412, 300), type "hello", then press Enter.';
const COMPUTER_FUNCTION = {
  type: "function" as const,
  function: {
    name: "computer",
    description: "Control the computer",
    parameters: {
      type: "object",
      properties: {
        action: { type: "string" },
        x: { type: "integer" },
        y: { type: "integer" },
        text: { type: "string" },
        keys: { type: "array", items: { type: "string" } },
      },
      required: ["action"],
    },
  },
};

async function runEpisode(client: OpenAI, stream: boolean) {
  const screenshot = `data:image/png;base64,${
    toBase64(await encodePng(1280, 800))
  }`;
  const messages: ChatCompletionMessageParam[] = [{
    role: "user",
    content: PROMPT,
  }];
  const calls: unknown[] = [];
  const usage: number[] = [];
  for (let turn = 0; turn < 10; turn++) {
    const request = {
      model: "glm-4.5v",
      messages,
      tools: [COMPUTER_FUNCTION],
      stream_options: stream ? { include_usage: true } : undefined,
    };
    const completion = stream
      ? await client.chat.completions.stream(request).finalChatCompletion()
      : await client.chat.completions.create(request);
    usage.push(completion.usage!.prompt_tokens);
    const { message, finish_reason } = completion.choices[0];
    messages.push(message);
    const call = message.tool_calls?.[0];
    if (!call || call.type !== "function") {
      assert.equal(finish_reason, "stop");
      return { calls, usage, final: message.content ?? "" };
    }
    assert.equal(finish_reason, "tool_calls");
    assert.equal(call.function.name, "computer");
    calls.push(JSON.parse(call.function.arguments));
    messages.push({ role: "tool", tool_call_id: call.id, content: "done" });
    messages.push({
      role: "user",
      content: [{ type: "image_url", image_url: { url: screenshot } }],
    });
  }
  throw new Error("The episode did not end");
}

for (const stream of [false, true]) {
  Deno.test(`chat computer use (stream=${stream}): the computer function is called in the MCP tool's shape, then Done`, async () => {
    await using sim = await startSimulator();
    const client = new OpenAI({
      baseURL: sim.baseUrls.openrouter,
      apiKey: "sk-or",
    });
    const { calls, usage, final } = await runEpisode(client, stream);
    assert.deepEqual(calls, [
      { action: "screenshot" },
      { action: "click", x: 412, y: 300 },
      { action: "type", text: "hello" },
      { action: "key", keys: ["Return"] },
    ]);
    assert.match(final, /^Done/);
    const perImage = imageTokens({ width: 1280, height: 800 }, "openai");
    for (let turn = 1; turn < usage.length; turn++) {
      assert.ok(usage[turn] - usage[turn - 1] >= perImage);
    }
  });
}

Deno.test("chat without a computer function plays no computer agent, and tool_choice none stops it", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const plain = await client.chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "user", content: PROMPT }],
  });
  assert.equal(plain.choices[0].message.content, `Echo: ${PROMPT}`);
  const none = await client.chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "user", content: PROMPT }],
    tools: [COMPUTER_FUNCTION],
    tool_choice: "none",
  });
  assert.equal(none.choices[0].finish_reason, "stop");
});

Deno.test("Gemini's OpenAI-compatible endpoint bills images as Gemini does, OpenAI's as OpenAI does", async () => {
  await using sim = await startSimulator();
  const png = async (w: number, h: number) =>
    `data:image/png;base64,${toBase64(await encodePng(w, h))}`;
  const big = await png(1920, 1080);
  const small = await png(300, 200);
  const cost = async (baseURL: string, url: string) =>
    (await new OpenAI({ baseURL, apiKey: "k" }).chat.completions.create({
      model: "m",
      messages: [{
        role: "user",
        content: [{ type: "text", text: "see" }, {
          type: "image_url",
          image_url: { url },
        }],
      }],
    })).usage!.prompt_tokens;
  const gemini = `${sim.baseUrls.gemini}/v1beta/openai`;
  assert.equal(
    (await cost(gemini, big)) - (await cost(gemini, small)),
    1548 - 258,
  );
  assert.equal(
    (await cost(sim.baseUrls.openai, big)) -
      (await cost(sim.baseUrls.openai, small)),
    1105 - 255,
  );
});

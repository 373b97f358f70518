import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import type {
  BetaContentBlock,
  BetaMessage,
  BetaMessageParam,
} from "@anthropic-ai/sdk/resources/beta/messages/messages";
import { encodePng, toBase64 } from "../../tests/fixtures/png.ts";
import { imageTokens } from "./image.ts";
import { startSimulator } from "./mod.ts";

const PROMPT =
  'The screen is 1280x800. Click the text box at (412, 300), type "hello", then press Enter.';
const COMPUTER = {
  type: "computer_20250124" as const,
  name: "computer" as const,
  display_width_px: 1280,
  display_height_px: 800,
};

function totalInput(message: BetaMessage): number {
  const usage = message.usage;
  return usage.input_tokens + (usage.cache_read_input_tokens ?? 0) +
    (usage.cache_creation_input_tokens ?? 0);
}

async function runEpisode(stream: boolean) {
  await using sim = await startSimulator();
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk-ant",
  });
  const screenshot = toBase64(await encodePng(1280, 800));
  const messages: BetaMessageParam[] = [{ role: "user", content: PROMPT }];
  const inputs: unknown[] = [];
  const usage: number[] = [];
  for (let turn = 0; turn < 10; turn++) {
    const request = {
      model: "claude-sonnet-4-5",
      max_tokens: 1024,
      betas: ["computer-use-2025-01-24"],
      tools: [COMPUTER],
      messages,
    };
    const message = stream
      ? await client.beta.messages.stream(request).finalMessage()
      : await client.beta.messages.create(request);
    usage.push(totalInput(message));
    messages.push({ role: "assistant", content: message.content });
    const use = message.content.find((
      block,
    ): block is Extract<BetaContentBlock, { type: "tool_use" }> =>
      block.type === "tool_use"
    );
    if (!use) {
      assert.equal(message.stop_reason, "end_turn");
      const [text] = message.content;
      assert.equal(text.type, "text");
      return {
        inputs,
        usage,
        final: text.type === "text" ? text.text : "",
        sim,
      };
    }
    assert.equal(message.stop_reason, "tool_use");
    assert.equal(use.name, "computer");
    inputs.push(use.input);
    messages.push({
      role: "user",
      content: [{
        type: "tool_result",
        tool_use_id: use.id,
        content: [{
          type: "image",
          source: { type: "base64", media_type: "image/png", data: screenshot },
        }],
      }],
    });
  }
  throw new Error("The episode did not end");
}

for (const stream of [false, true]) {
  Deno.test(`Anthropic computer use (stream=${stream}): screenshot, click, type, key, then Done, screenshots billed by size`, async () => {
    const { inputs, usage, final } = await runEpisode(stream);
    assert.deepEqual(inputs, [
      { action: "screenshot" },
      { action: "left_click", coordinate: [412, 300] },
      { action: "type", text: "hello" },
      { action: "key", text: "Return" },
    ]);
    assert.match(final, /^Done/);
    // Each turn adds at least one 1280×800 screenshot at Anthropic's rate.
    const perImage = imageTokens({ width: 1280, height: 800 }, "anthropic");
    for (let turn = 1; turn < usage.length; turn++) {
      assert.ok(usage[turn] - usage[turn - 1] >= perImage, `turn ${turn}`);
    }
  });
}

Deno.test("Anthropic computer use streams the tool_use input as input_json_delta fragments", async () => {
  await using sim = await startSimulator();
  const response = await fetch(`${sim.baseUrls.anthropic}/v1/messages`, {
    method: "POST",
    headers: {
      "x-api-key": "sk-ant",
      "anthropic-version": "2023-06-01",
      "anthropic-beta": "computer-use-2025-01-24",
      "content-type": "application/json",
    },
    body: JSON.stringify({
      model: "claude-sonnet-4-5",
      max_tokens: 100,
      stream: true,
      tools: [COMPUTER],
      messages: [
        { role: "user", content: "press ctrl+a" },
        {
          role: "assistant",
          content: [{
            type: "tool_use",
            id: "toolu_1",
            name: "computer",
            input: { action: "screenshot" },
          }],
        },
        {
          role: "user",
          content: [{
            type: "tool_result",
            tool_use_id: "toolu_1",
            content: "ok",
          }],
        },
      ],
    }),
  });
  const events = (await response.text()).split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => JSON.parse(line.slice(6)));
  assert.deepEqual(events[1].content_block.type, "tool_use");
  assert.deepEqual(events[1].content_block.input, {});
  const json = events.filter((event) =>
    event.delta?.type === "input_json_delta"
  )
    .map((event) => event.delta.partial_json);
  assert.ok(json.length > 1);
  assert.deepEqual(JSON.parse(json.join("")), {
    action: "key",
    text: "ctrl+a",
  });
  assert.equal(events.at(-2).delta.stop_reason, "tool_use");
});

Deno.test("Anthropic images are billed from their size: a 1280×800 screenshot costs its tokens over a 64×40 one", async () => {
  await using sim = await startSimulator();
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk-ant",
  });
  const ask = async (width: number, height: number) =>
    totalInput(
      await client.beta.messages.create({
        model: "claude-sonnet-4-5",
        max_tokens: 10,
        messages: [{
          role: "user",
          content: [{
            type: "image",
            source: {
              type: "base64",
              media_type: "image/png",
              data: toBase64(await encodePng(width, height)),
            },
          }, { type: "text", text: "what is this" }],
        }],
      }),
    );
  assert.equal(
    (await ask(1280, 800)) - (await ask(64, 40)),
    imageTokens({ width: 1280, height: 800 }, "anthropic") -
      imageTokens({ width: 64, height: 40 }, "anthropic"),
  );
});

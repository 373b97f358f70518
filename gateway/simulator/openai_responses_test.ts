import assert from "node:assert/strict";
import OpenAI from "openai";
import type {
  ResponseInputItem,
  Tool,
} from "openai/resources/responses/responses";
import { startSimulator } from "./mod.ts";

const tools: Tool[] = [
  {
    type: "function",
    name: "look",
    parameters: {
      type: "object",
      properties: { verbose: { type: "boolean" } },
      required: ["verbose"],
    },
    strict: false,
  },
  {
    type: "function",
    name: "guess",
    parameters: {
      type: "object",
      properties: { number: { type: "integer" } },
      required: ["number"],
    },
    strict: false,
  },
];

for (const stream of [false, true]) {
  Deno.test(`the scripted agent calls the backticked tools in order over Responses, then answers (stream=${stream})`, async () => {
    await using sim = await startSimulator();
    const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
    const input: ResponseInputItem[] = [{
      role: "user",
      content: "Play: `look`, then `guess`; `missing` is not a tool.",
    }];
    const calls: [string, unknown][] = [];
    for (let turn = 0; turn < 5; turn++) {
      const request = { model: "operator", input, tools };
      const response = stream
        ? await client.responses.stream(request).finalResponse()
        : await client.responses.create(request);
      const [item] = response.output;
      if (item.type !== "function_call") {
        assert.equal(response.status, "completed");
        assert.equal(response.output_text, "Tool guess returned: correct");
        break;
      }
      calls.push([item.name, JSON.parse(item.arguments)]);
      input.push(item, {
        type: "function_call_output",
        call_id: item.call_id,
        output: item.name === "look" ? "range 1-10" : "correct",
      });
    }
    assert.deepEqual(calls, [["look", { verbose: true }], ["guess", {
      number: 7,
    }]]);
    assert.equal(sim.requests.length, 3);
  });
}

Deno.test("the computer-use agent goes before the scripted agent over Responses", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const response = await client.responses.create({
    model: "computer-use-preview",
    input: "Call `look`. Click the text box at (412, 300).",
    tools: [{
      type: "computer_use_preview",
      display_width: 1280,
      display_height: 800,
      environment: "linux",
    }, tools[0]],
    truncation: "auto",
  });
  const call = response.output.find((item) => item.type !== "reasoning");
  assert.ok(call?.type === "computer_call");
  assert.deepEqual(call.action, { type: "screenshot" });
});

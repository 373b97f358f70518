import assert from "node:assert/strict";
import OpenAI from "openai";
import type {
  ResponseComputerToolCall,
  ResponseInputItem,
} from "openai/resources/responses/responses";
import { encodePng, toBase64 } from "../../tests/fixtures/png.ts";
import { imageTokens } from "./image.ts";
import { startSimulator } from "./mod.ts";

const PROMPT =
  'The screen is 1280x800. Click the text box at (412, 300), type "hello", then press Enter.';
const COMPUTER = {
  type: "computer_use_preview" as const,
  display_width: 1280,
  display_height: 800,
  environment: "browser" as const,
};

interface Episode {
  actions: unknown[];
  checks: ResponseComputerToolCall.PendingSafetyCheck[][];
  usage: number[];
  final: string;
  eventTypes: string[];
}

/** The GA tool: no settings, batched `actions`. */
const GA_COMPUTER = { type: "computer" as const };

async function runEpisode(
  client: OpenAI,
  prompt: string,
  stream: boolean,
  acknowledge = true,
  tool: typeof COMPUTER | typeof GA_COMPUTER = COMPUTER,
): Promise<Episode> {
  const screenshot = `data:image/png;base64,${
    toBase64(await encodePng(1280, 800))
  }`;
  const input: ResponseInputItem[] = [{ role: "user", content: prompt }];
  const episode: Episode = {
    actions: [],
    checks: [],
    usage: [],
    final: "",
    eventTypes: [],
  };
  for (let turn = 0; turn < 10; turn++) {
    const request = {
      model: tool === COMPUTER ? "computer-use-preview" : "gpt-5.4",
      tools: [tool],
      input,
      truncation: "auto" as const,
    };
    let response;
    if (stream) {
      const events = client.responses.stream(request);
      for await (const event of events) episode.eventTypes.push(event.type);
      response = await events.finalResponse();
    } else response = await client.responses.create(request);
    episode.usage.push(response.usage!.input_tokens);
    input.push(...(response.output as ResponseInputItem[]));
    const found = response.output.find((item) => item.type === "computer_call");
    const call = found?.type === "computer_call" ? found : undefined;
    if (!call) {
      episode.final = response.output_text;
      return episode;
    }
    assert.equal(call.status, "completed");
    episode.actions.push(call.action ?? call.actions);
    episode.checks.push(call.pending_safety_checks);
    input.push({
      type: "computer_call_output",
      call_id: call.call_id,
      output: { type: "computer_screenshot", image_url: screenshot },
      ...(acknowledge && call.pending_safety_checks.length > 0
        ? { acknowledged_safety_checks: call.pending_safety_checks }
        : {}),
    });
  }
  throw new Error("The episode did not end");
}

for (const stream of [false, true]) {
  Deno.test(`Responses computer use (stream=${stream}): computer_call items from a screenshot to Done, screenshots billed by size`, async () => {
    await using sim = await startSimulator();
    const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
    const episode = await runEpisode(client, PROMPT, stream);
    assert.deepEqual(episode.actions, [
      { type: "screenshot" },
      { type: "click", x: 412, y: 300, button: "left" },
      { type: "type", text: "hello" },
      { type: "keypress", keys: ["ENTER"] },
    ]);
    assert.deepEqual(episode.checks, [[], [], [], []]);
    assert.match(episode.final, /^Done/);
    const perImage = imageTokens({ width: 1280, height: 800 }, "openai");
    for (let turn = 1; turn < episode.usage.length; turn++) {
      assert.ok(episode.usage[turn] - episode.usage[turn - 1] >= perImage);
    }
    if (stream) {
      // A reasoning item, then the computer_call item, each added and done.
      assert.deepEqual(episode.eventTypes.slice(0, 7), [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
      ]);
    }
    // The runner sends the whole history, no previous_response_id.
    const last = sim.requests.at(-1)!.body as { input: { type?: string }[] };
    assert.equal(
      last.input.filter((item) => item.type === "computer_call_output").length,
      4,
    );
  });
}

Deno.test("Responses computer use: [confirm] puts a pending safety check on the click, and its output must acknowledge it", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const prompt = `${PROMPT} [confirm]`;
  const episode = await runEpisode(client, prompt, false);
  assert.equal(episode.checks[0].length, 0);
  assert.equal(episode.checks[1].length, 1);
  const [check] = episode.checks[1];
  assert.ok(check.id.length > 0);
  assert.ok(check.code);
  assert.ok(check.message);
  assert.deepEqual(episode.checks.slice(2), [[], []]);
  assert.match(episode.final, /^Done/);

  await assert.rejects(
    runEpisode(client, prompt, false, false),
    (error: unknown) =>
      error instanceof OpenAI.BadRequestError &&
      /must acknowledge the pending safety check 'sc_call_\w+' in 'acknowledged_safety_checks'/
        .test(error.message),
  );
  assert.equal(sim.requests.at(-1)!.status, 400);
});

Deno.test("Responses computer use streams the computer_call item whole in output_item.added and done", async () => {
  await using sim = await startSimulator();
  const response = await fetch(`${sim.baseUrls.openai}/responses`, {
    method: "POST",
    headers: { authorization: "Bearer sk", "content-type": "application/json" },
    body: JSON.stringify({
      model: "computer-use-preview",
      stream: true,
      tools: [COMPUTER],
      input: [{
        role: "user",
        content: "[confirm] double-click the icon at (5, 6)",
      }, {
        type: "computer_call",
        id: "cu_1",
        call_id: "call_1",
        action: { type: "screenshot" },
        pending_safety_checks: [],
        status: "completed",
      }, {
        type: "computer_call_output",
        call_id: "call_1",
        output: {
          type: "computer_screenshot",
          image_url: "https://example.com/s.png",
        },
      }],
    }),
  });
  const events = (await response.text()).split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => JSON.parse(line.slice(6)));
  const added = events.find((event) =>
    event.type === "response.output_item.added" &&
    event.item.type === "computer_call"
  );
  const done = events.find((event) =>
    event.type === "response.output_item.done" &&
    event.item.type === "computer_call"
  );
  const reasoning = events.find((event) =>
    event.type === "response.output_item.done" &&
    event.item.type === "reasoning"
  );
  assert.equal(reasoning.output_index, 0);
  assert.equal(added.output_index, 1);
  assert.equal(added.item.type, "computer_call");
  assert.equal(added.item.status, "in_progress");
  assert.deepEqual(added.item.action, { type: "double_click", x: 5, y: 6 });
  assert.equal(done.item.status, "completed");
  assert.equal(done.item.pending_safety_checks.length, 1);
  assert.equal(done.item.call_id, added.item.call_id);
  const completed = events.at(-1);
  assert.equal(completed.type, "response.completed");
  assert.deepEqual(completed.response.output, [reasoning.item, done.item]);
  assert.deepEqual(
    events.map((event) => event.sequence_number),
    events.map((_, i) => i),
  );
});

Deno.test("Responses images are billed from their size and detail", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const url = async (width: number, height: number) =>
    `data:image/png;base64,${toBase64(await encodePng(width, height))}`;
  const ask = async (image: string, detail: "low" | "high" | "auto") =>
    (await client.responses.create({
      model: "gpt-4.1",
      input: [{
        role: "user",
        content: [{ type: "input_text", text: "describe" }, {
          type: "input_image",
          image_url: image,
          detail,
        }],
      }],
    })).usage!.input_tokens;
  const big = await url(1920, 1080);
  assert.equal(
    (await ask(big, "high")) - (await ask(big, "low")),
    imageTokens({ width: 1920, height: 1080 }, "openai") - 85,
  );
  assert.equal(
    (await ask(big, "auto")) - (await ask(await url(100, 100), "auto")),
    1105 - 255,
  );
});

for (const stream of [false, true]) {
  Deno.test(`Responses GA computer tool (stream=${stream}): a screenshot, then click, type and keypress batched in one computer_call, then Done`, async () => {
    await using sim = await startSimulator();
    const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
    const episode = await runEpisode(
      client,
      PROMPT,
      stream,
      true,
      GA_COMPUTER,
    );
    assert.deepEqual(episode.actions, [
      [{ type: "screenshot" }],
      [
        { type: "click", x: 412, y: 300, button: "left" },
        { type: "type", text: "hello" },
        { type: "keypress", keys: ["ENTER"] },
      ],
    ]);
    assert.match(episode.final, /^Done/);
  });
}

Deno.test("Responses GA computer tool: [confirm] puts the click in a call of its own with the check, which must be acknowledged", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const prompt = `${PROMPT} [confirm]`;
  const episode = await runEpisode(client, prompt, false, true, GA_COMPUTER);
  assert.equal(episode.actions.length, 2);
  assert.equal(episode.checks[1].length, 1);
  const refused = await runEpisode(client, prompt, false, false, GA_COMPUTER)
    .catch((error: unknown) => error);
  assert.ok(refused instanceof OpenAI.BadRequestError);
});

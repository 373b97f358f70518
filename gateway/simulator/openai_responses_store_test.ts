import assert from "node:assert/strict";
import OpenAI from "openai";
import type { Tool } from "openai/resources/responses/responses";
import { startSimulator } from "./mod.ts";

const computer: Tool = {
  type: "computer_use_preview",
  display_width: 1280,
  display_height: 800,
  environment: "browser",
};
const TASK =
  'The screen is 1280x800. Click the text box at (412, 300), type "hi", then press Enter.';
const SCREENSHOT = {
  type: "computer_screenshot" as const,
  image_url: "data:image/png;base64,iVBORw0KGgo=",
};

for (const stream of [false, true]) {
  Deno.test(`previous_response_id continues the stored conversation: the agent counts its earlier actions (stream=${stream})`, async () => {
    await using sim = await startSimulator();
    const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
    const create = (
      body: OpenAI.Responses.ResponseCreateParamsNonStreaming & {
        stream?: false;
      },
    ) =>
      stream
        ? client.responses.stream({ ...body, stream: true }).finalResponse()
        : client.responses.create(body);
    const actions: string[] = [];
    let previous: string | undefined;
    let input: OpenAI.Responses.ResponseInput | string = TASK;
    for (let turn = 0; turn < 8; turn++) {
      const response = await create({
        model: "computer-use-preview",
        tools: [computer],
        truncation: "auto",
        input,
        previous_response_id: previous,
      });
      const call = response.output.find((item) =>
        item.type === "computer_call"
      );
      if (call?.type !== "computer_call") {
        assert.match(response.output_text, /^Done\./);
        break;
      }
      assert.ok(call.action);
      actions.push(call.action.type);
      previous = response.id;
      // Only the new item goes out: the rest is the stored conversation.
      input = [{
        type: "computer_call_output",
        call_id: call.call_id,
        output: SCREENSHOT,
      }];
    }
    assert.deepEqual(actions, ["screenshot", "click", "type", "keypress"]);
  });
}

Deno.test("previous_response_id unknown to the caller's organization is refused with OpenAI's 400", async () => {
  await using sim = await startSimulator();
  const first = new OpenAI({
    baseURL: sim.baseUrls.openai,
    apiKey: "sk-org-a",
  });
  const other = new OpenAI({
    baseURL: sim.baseUrls.openai,
    apiKey: "sk-org-b",
  });
  const created = await first.responses.create({ model: "gpt-x", input: "hi" });
  for (
    const [client, id] of [
      [first, "resp_never"],
      [other, created.id],
    ] as const
  ) {
    const error = await client.responses.create({
      model: "gpt-x",
      input: "again",
      previous_response_id: id,
    }).catch((error: unknown) => error);
    assert.ok(error instanceof OpenAI.BadRequestError, String(error));
    assert.equal(error.status, 400);
    assert.equal(
      error.message,
      `400 Previous response with id '${id}' not found.`,
    );
    assert.equal(error.param, "previous_response_id");
    assert.equal(error.code, "previous_response_not_found");
  }
  // The creating organization continues it.
  const next = await first.responses.create({
    model: "gpt-x",
    input: "again",
    previous_response_id: created.id,
  });
  assert.equal(next.previous_response_id, created.id);
  assert.equal(next.output_text, "Echo: again");
});

Deno.test("a response created with store: false cannot be continued", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const created = await client.responses.create({
    model: "gpt-x",
    input: "hi",
    store: false,
  });
  assert.equal(sim.requests.at(-1)?.status, 200);
  const error = await client.responses.create({
    model: "gpt-x",
    input: "again",
    previous_response_id: created.id,
  }).catch((error: unknown) => error);
  assert.ok(error instanceof OpenAI.BadRequestError);
  assert.equal(error.code, "previous_response_not_found");
});

Deno.test("the stored responses are bounded: the oldest is forgotten past the simulator's cap", async () => {
  await using sim = await startSimulator({
    responseStore: { maxResponses: 2 },
  });
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const ids: string[] = [];
  for (let n = 0; n < 3; n++) {
    ids.push((await client.responses.create({ model: "m", input: `${n}` })).id);
  }
  const error = await client.responses.create({
    model: "m",
    input: "x",
    previous_response_id: ids[0],
  }).catch((error: unknown) => error);
  assert.ok(error instanceof OpenAI.BadRequestError);
  const kept = await client.responses.create({
    model: "m",
    input: "x",
    previous_response_id: ids[2],
  });
  assert.equal(kept.status, "completed");
});

for (const stream of [false, true]) {
  Deno.test(`responses.retrieve() returns a stored response to its organization only (stream=${stream})`, async () => {
    await using sim = await startSimulator();
    const owner = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk-a" });
    const other = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk-b" });
    const created = stream
      ? await owner.responses.stream({ model: "m", input: "hi" })
        .finalResponse()
      : await owner.responses.create({ model: "m", input: "hi" });
    const retrieved = await owner.responses.retrieve(created.id);
    assert.equal(retrieved.id, created.id);
    assert.equal(retrieved.output_text, "Echo: hi");
    for (
      const [client, id] of [[other, created.id], [owner, "resp_none"]] as const
    ) {
      const error = await client.responses.retrieve(id).catch((
        error: unknown,
      ) => error);
      assert.ok(error instanceof OpenAI.NotFoundError, String(error));
      assert.equal(error.message, `404 Response with id '${id}' not found.`);
      assert.equal(error.code, null);
    }
  });
}

Deno.test("a response created with store: false cannot be retrieved", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk" });
  const created = await client.responses.create({
    model: "m",
    input: "hi",
    store: false,
  });
  const error = await client.responses.retrieve(created.id).catch((
    error: unknown,
  ) => error);
  assert.ok(error instanceof OpenAI.NotFoundError);
});

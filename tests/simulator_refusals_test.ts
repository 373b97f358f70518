/**
 * The simulator refuses what the real APIs refuse, through the official SDKs
 * against the simulator on loopback: each refusal with its status and the
 * provider's wording, and lenience for a model the catalog does not know.
 * The model facts are `_simulator_models.ts`, in the catalog's field names;
 * the last tests play every computer-use model of the gateway's own catalog
 * on its documented wire and check every other version is refused.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { ApiError, Environment, GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { type Simulator, startSimulator } from "../gateway/simulator/mod.ts";
import { DEFAULT_CATALOG } from "../gateway/state/catalog.ts";
import { TEST_MODELS } from "./_simulator_models.ts";
import {
  claudeEpisode,
  geminiEpisode,
  openaiEpisode,
} from "./_simulator_episodes.ts";

const TASK =
  'The screen is 1280x800. Click the text box at (412, 300), type "hi", then press Enter.';

async function simulator(): Promise<Simulator> {
  return await startSimulator({ models: TEST_MODELS });
}

function anthropic(sim: Simulator): Anthropic {
  return new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk-ant",
    maxRetries: 0,
  });
}

function openai(sim: Simulator): OpenAI {
  return new OpenAI({
    baseURL: sim.baseUrls.openai,
    apiKey: "sk",
    maxRetries: 0,
  });
}

function gemini(sim: Simulator): GoogleGenAI {
  return new GoogleGenAI({
    apiKey: "g-key",
    httpOptions: { baseUrl: sim.baseUrls.gemini },
  });
}

/** The Anthropic error's status and message, asserting its shape. */
async function anthropicRefusal(
  call: Promise<unknown>,
): Promise<{ status: number; message: string }> {
  const error = await call.then(() => undefined, (error: unknown) => error);
  assert.ok(error instanceof Anthropic.APIError, `refused: ${error}`);
  const body = error.error as { type: string; error: Record<string, string> };
  assert.equal(body.type, "error");
  assert.equal(body.error.type, "invalid_request_error");
  return { status: error.status ?? 0, message: body.error.message };
}

const BETA_COMPUTER = (type: "computer_20251124" | "computer_20250124") => ({
  type,
  name: "computer" as const,
  display_width_px: 1280,
  display_height_px: 800,
});

Deno.test("Anthropic: a computer tool version other than the model's is refused with 400 'does not support tool types'", async () => {
  await using sim = await simulator();
  const client = anthropic(sim);
  const refused = await anthropicRefusal(client.beta.messages.create({
    model: "claude-opus-5-5",
    max_tokens: 1024,
    betas: ["computer-use-2025-11-24"],
    tools: [BETA_COMPUTER("computer_20251124")],
    messages: [{ role: "user", content: TASK }],
  }));
  assert.deepEqual(refused, {
    status: 400,
    message:
      "'claude-opus-5-5' does not support tool types: computer_20251124. Did you mean one of: computer_toolset_20260801?",
  });
  const older = await anthropicRefusal(client.beta.messages.create({
    model: "claude-opus-4-5",
    max_tokens: 1024,
    betas: ["computer-use-2025-01-24"],
    tools: [BETA_COMPUTER("computer_20250124")],
    messages: [{ role: "user", content: TASK }],
  }));
  assert.equal(older.status, 400);
  assert.match(
    older.message,
    /^'claude-opus-4-5' does not support tool types: computer_20250124\./,
  );
  const toolset = await anthropicRefusal(client.messages.create({
    model: "claude-sonnet-4-5",
    max_tokens: 1024,
    tools: [{ type: "computer_toolset_20260801" }],
    messages: [{ role: "user", content: TASK }],
  }));
  assert.match(
    toolset.message,
    /^'claude-sonnet-4-5' does not support tool types: computer_toolset_20260801\./,
  );
  const none = await anthropicRefusal(client.messages.create({
    model: "claude-text-only",
    max_tokens: 1024,
    tools: [{ type: "computer_toolset_20260801" }],
    messages: [{ role: "user", content: TASK }],
  }));
  assert.equal(
    none.message,
    "'claude-text-only' does not support tool types: computer_toolset_20260801.",
  );
});

Deno.test("Anthropic: the model's tool without its anthropic-beta, or with another, is refused as an unknown tag", async () => {
  await using sim = await simulator();
  const client = anthropic(sim);
  for (const betas of [[], ["computer-use-2025-01-24"]]) {
    const refused = await anthropicRefusal(client.beta.messages.create({
      model: "claude-opus-4-5",
      max_tokens: 1024,
      betas,
      tools: [BETA_COMPUTER("computer_20251124")],
      messages: [{ role: "user", content: TASK }],
    }));
    assert.equal(refused.status, 400);
    assert.match(
      refused.message,
      /^tools\.0: Input tag 'computer_20251124' found using 'type' does not match any of the expected tags: .*'computer_toolset_20260801'/,
    );
  }
  const accepted = await client.beta.messages.create({
    model: "claude-opus-4-5",
    max_tokens: 1024,
    betas: ["computer-use-2025-11-24"],
    tools: [BETA_COMPUTER("computer_20251124")],
    messages: [{ role: "user", content: TASK }],
  });
  assert.equal(accepted.stop_reason, "tool_use");
});

Deno.test("Anthropic: disabled thinking and forced tool choice are refused where the model refuses them", async () => {
  await using sim = await simulator();
  const client = anthropic(sim);
  const tool = {
    name: "look",
    input_schema: { type: "object" as const, properties: {} },
  };
  const thinking = await anthropicRefusal(client.messages.create({
    model: "claude-opus-5-5",
    max_tokens: 1024,
    thinking: { type: "disabled" },
    messages: [{ role: "user", content: "hi" }],
  }));
  assert.equal(thinking.status, 400);
  assert.match(
    thinking.message,
    /^"thinking\.type\.disabled" is not supported for this model\. Use "thinking\.type\.adaptive"/,
  );
  for (
    const tool_choice of [{ type: "any" as const }, {
      type: "tool" as const,
      name: "look",
    }]
  ) {
    const forced = await anthropicRefusal(client.messages.create({
      model: "claude-opus-5-5",
      max_tokens: 1024,
      tools: [tool],
      tool_choice,
      messages: [{ role: "user", content: "hi" }],
    }));
    assert.deepEqual(forced, {
      status: 400,
      message:
        'tool_choice: type "tool" and "any" are not supported for this model.',
    });
  }
  // Another model keeps them.
  const kept = await client.messages.create({
    model: "claude-opus-4-5",
    max_tokens: 1024,
    thinking: { type: "disabled" },
    tools: [tool],
    tool_choice: { type: "any" },
    messages: [{ role: "user", content: "hi" }],
  });
  assert.equal(kept.stop_reason, "tool_use");
});

Deno.test("Anthropic: count_tokens refuses what messages refuse", async () => {
  await using sim = await simulator();
  const client = anthropic(sim);
  const refused = await anthropicRefusal(client.messages.countTokens({
    model: "claude-opus-5-5",
    tools: [{
      name: "look",
      input_schema: { type: "object" as const, properties: {} },
    }],
    tool_choice: { type: "any" },
    messages: [{ role: "user", content: "hi" }],
  }));
  assert.deepEqual(refused, {
    status: 400,
    message:
      'tool_choice: type "tool" and "any" are not supported for this model.',
  });
  const counted = await client.messages.countTokens({
    model: "claude-opus-5-5",
    messages: [{ role: "user", content: "hi" }],
  });
  assert.ok(counted.input_tokens > 0);
});

Deno.test("Anthropic: a model the catalog does not know takes any computer tool, beta or not", async () => {
  await using sim = await simulator();
  const reply = await anthropic(sim).beta.messages.create({
    model: "claude-ad-hoc",
    max_tokens: 1024,
    tools: [BETA_COMPUTER("computer_20251124")],
    thinking: { type: "disabled" },
    messages: [{ role: "user", content: TASK }],
  });
  assert.equal(reply.stop_reason, "tool_use");
});

/** The OpenAI error, asserting its status and shape. */
async function openaiRefusal(
  call: Promise<unknown>,
): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await call.then(() => undefined, (error: unknown) => error);
  assert.ok(error instanceof OpenAI.BadRequestError, `refused: ${error}`);
  assert.equal(error.status, 400);
  assert.equal(error.type, "invalid_request_error");
  return error;
}

Deno.test("OpenAI: the GA computer tool on computer-use-preview, the preview tool on a GA model and either on a model without computer use are refused", async () => {
  await using sim = await simulator();
  const client = openai(sim);
  const preview = {
    type: "computer_use_preview" as const,
    display_width: 1280,
    display_height: 800,
    environment: "browser" as const,
  };
  const cases = [
    ["computer-use-preview", { type: "computer" as const }, "computer"],
    ["gpt-5.4", preview, "computer_use_preview"],
    ["gpt-4o", { type: "computer" as const }, "computer"],
  ] as const;
  for (const [model, tool, type] of cases) {
    const error = await openaiRefusal(client.responses.create({
      model,
      tools: [tool],
      input: TASK,
      truncation: "auto",
    }));
    assert.equal(
      error.message,
      `400 Tool '${type}' is not supported with ${model}.`,
    );
    assert.equal(error.param, "tools");
    assert.equal(error.code, null);
  }
  // Each model takes its own tool; a model the catalog does not know takes either.
  for (
    const [model, tool] of [
      ["computer-use-preview", preview],
      ["gpt-5.4", { type: "computer" as const }],
      ["gpt-ad-hoc", preview],
    ] as const
  ) {
    const response = await client.responses.create({
      model,
      tools: [tool],
      input: TASK,
      truncation: "auto",
    });
    assert.ok(
      response.output.some((item) => item.type === "computer_call"),
      `${model} plays`,
    );
  }
});

Deno.test("OpenAI: a forced tool_choice is refused where the model refuses it, on chat and Responses", async () => {
  await using sim = await simulator();
  const client = openai(sim);
  const chat = await openaiRefusal(client.chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "user", content: "hi" }],
    tools: [{
      type: "function",
      function: { name: "look", parameters: { type: "object" } },
    }],
    tool_choice: "required",
  }));
  assert.equal(
    chat.message,
    "400 Unsupported value: 'tool_choice' does not support 'required' with this model.",
  );
  assert.equal(chat.param, "tool_choice");
  assert.equal(chat.code, "unsupported_value");
  const responses = await openaiRefusal(client.responses.create({
    model: "gpt-4o",
    input: "hi",
    tools: [{
      type: "function",
      name: "look",
      parameters: { type: "object" },
      strict: false,
    }],
    tool_choice: { type: "function", name: "look" },
  }));
  assert.equal(
    responses.message,
    "400 Unsupported value: 'tool_choice' does not support 'function' with this model.",
  );
});

/** The Gemini error's status and parsed body. */
async function geminiRefusal(
  call: Promise<unknown>,
): Promise<{ code: number; message: string; status: string }> {
  const error = await call.then(() => undefined, (error: unknown) => error);
  assert.ok(error instanceof ApiError, `refused: ${error}`);
  assert.equal(error.status, 400);
  const body = JSON.parse(error.message.slice(error.message.indexOf("{")));
  return body.error;
}

Deno.test("Gemini: computerUse on a model without it, an unknown environment and one the model does not take are refused with INVALID_ARGUMENT", async () => {
  await using sim = await simulator();
  const ai = gemini(sim);
  const contents = [{ role: "user", parts: [{ text: TASK }] }];
  const without = await geminiRefusal(ai.models.generateContent({
    model: "gemini-2.5-pro",
    contents,
    config: {
      tools: [{
        computerUse: { environment: Environment.ENVIRONMENT_BROWSER },
      }],
    },
  }));
  assert.deepEqual(without, {
    code: 400,
    message: "Computer Use is not supported for models/gemini-2.5-pro.",
    status: "INVALID_ARGUMENT",
  });
  const desktop = await geminiRefusal(ai.models.generateContent({
    model: "gemini-2.5-computer-use-preview-10-2025",
    contents,
    config: {
      tools: [{
        computerUse: { environment: Environment.ENVIRONMENT_DESKTOP },
      }],
    },
  }));
  assert.equal(desktop.status, "INVALID_ARGUMENT");
  assert.match(
    desktop.message,
    /^Environment ENVIRONMENT_DESKTOP is not supported/,
  );
  const unknown = await geminiRefusal(ai.models.generateContent({
    model: "gemini-cu-desktop",
    contents,
    config: {
      tools: [{
        computerUse: { environment: "ENVIRONMENT_TV" as Environment },
      }],
    },
  }));
  assert.match(
    unknown.message,
    /^Invalid value at 'tools\[0\]\.computer_use\.environment' .*"ENVIRONMENT_TV"$/,
  );
  // The desktop environment is one the second model takes.
  const played = await ai.models.generateContent({
    model: "gemini-cu-desktop",
    contents,
    config: {
      tools: [{
        computerUse: { environment: Environment.ENVIRONMENT_DESKTOP },
      }],
    },
  });
  assert.equal(played.functionCalls?.[0].name, "type_text_at");
});

/** Every computer-use tool type of each provider the catalog names. */
const TOOL_TYPES: Record<string, string[]> = {
  anthropic: [
    "computer_toolset_20260801",
    "computer_20251124",
    "computer_20250124",
  ],
  openai: ["computer", "computer_use_preview"],
};

/** The wire each computer-use model's actions take, as the wire names them. */
const EXPECTED_ACTIONS: Record<string, string[]> = {
  computer_toolset_20260801: ["screenshot", "left_click", "type", "key"],
  computer_20251124: ["screenshot", "left_click", "type", "key"],
  computer_20250124: ["screenshot", "left_click", "type", "key"],
  computer: ["screenshot", "click", "type", "keypress"],
  computer_use_preview: ["screenshot", "click", "type", "keypress"],
  computer_use: ["type_text_at", "key_combination"],
};

const EPISODES = {
  anthropic: claudeEpisode,
  openai: openaiEpisode,
  gemini: geminiEpisode,
} as const;

for (
  const entry of DEFAULT_CATALOG.filter((model) =>
    model.computerUse && model.provider in EPISODES
  )
) {
  const use = entry.computerUse!;
  const provider = entry.provider as keyof typeof EPISODES;
  Deno.test(`the catalog's ${entry.id} plays its documented wire (${use.tool}) to Done, streamed and not, and refuses every other version`, async () => {
    // No `models` option: the gateway's own catalog decides.
    await using sim = await startSimulator();
    for (const stream of [false, true]) {
      const episode = await EPISODES[provider](
        sim,
        entry.upstream,
        use,
        stream,
      );
      assert.deepEqual(episode.actions, EXPECTED_ACTIONS[use.tool]);
      assert.match(episode.final, /^Done\./);
      // Batching wires take two turns: a screenshot, then the rest.
      const batched = use.tool === "computer" ||
        use.tool.startsWith("computer_toolset_");
      if (batched) assert.equal(episode.turns, 2);
    }
    for (const other of TOOL_TYPES[provider] ?? []) {
      if (other === use.tool) continue;
      const refused = await EPISODES[provider](
        sim,
        entry.upstream,
        { tool: other },
        false,
      ).then(() => undefined, (error: unknown) => error);
      assert.ok(
        refused instanceof Anthropic.BadRequestError ||
          refused instanceof OpenAI.BadRequestError,
        `${entry.id} refuses ${other}: ${refused}`,
      );
    }
  });
}

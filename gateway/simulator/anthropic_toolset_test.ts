import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import type {
  ContentBlock,
  Message,
  MessageCreateParamsNonStreaming,
  MessageParam,
  ToolResultBlockParam,
  ToolUnion,
} from "@anthropic-ai/sdk/resources/messages/messages";
import { encodePng, toBase64 } from "../../tests/fixtures/png.ts";
import { type SimulatedModel, startSimulator } from "./mod.ts";

const PROMPT =
  'The screen is 1280x800. Zoom into the form at (0, 0, 640, 400). Click the text box at (412, 300), type "hello", then press Enter.';
const TOOLSET: ToolUnion = { type: "computer_toolset_20260801" };
const THINKER: SimulatedModel = {
  provider: "anthropic",
  upstream: "claude-thinker",
  computerUse: { tool: "computer_toolset_20260801" },
  features: { thinkingBetweenTools: true },
};

interface Turn {
  blocks: ContentBlock[];
  message: Message;
}

/** Plays an episode, answering every member call with its result (echoing toolset_name). */
async function runEpisode(
  client: Anthropic,
  request: Omit<MessageCreateParamsNonStreaming, "messages">,
  stream: boolean,
): Promise<{ turns: Turn[]; final: string }> {
  const screenshot = toBase64(await encodePng(1280, 800));
  const messages: MessageParam[] = [{ role: "user", content: PROMPT }];
  const turns: Turn[] = [];
  for (let turn = 0; turn < 10; turn++) {
    const body = { ...request, messages };
    const message = stream
      ? await client.messages.stream(body).finalMessage()
      : await client.messages.create(body);
    messages.push({ role: "assistant", content: message.content });
    const uses = message.content.filter((block) => block.type === "tool_use");
    if (uses.length === 0) {
      const text = message.content.find((block) => block.type === "text");
      return { turns, final: text?.type === "text" ? text.text : "" };
    }
    turns.push({ blocks: message.content, message });
    messages.push({
      role: "user",
      content: uses.map((use): ToolResultBlockParam => ({
        type: "tool_result",
        tool_use_id: use.id,
        toolset_name: "computer",
        content: use.name === "screenshot" || use.name === "zoom"
          ? [{
            type: "image",
            source: {
              type: "base64",
              media_type: "image/png",
              data: screenshot,
            },
          }]
          : "Done.",
      })),
    });
  }
  throw new Error("The episode did not end");
}

function memberCalls(turn: Turn): [string, unknown][] {
  return turn.blocks.flatMap((block) =>
    block.type === "tool_use" ? [[block.name, block.input]] : []
  );
}

for (const stream of [false, true]) {
  Deno.test(`Claude's computer toolset (stream=${stream}): member tool_use blocks with toolset_name, a screenshot then the rest batched in one turn`, async () => {
    await using sim = await startSimulator();
    const client = new Anthropic({
      baseURL: sim.baseUrls.anthropic,
      apiKey: "sk",
    });
    const { turns, final } = await runEpisode(client, {
      model: "claude-ad-hoc",
      max_tokens: 1024,
      tools: [TOOLSET],
    }, stream);
    assert.deepEqual(turns.map(memberCalls), [
      [["screenshot", {}]],
      [
        ["zoom", { region: [0, 0, 640, 400] }],
        ["left_click", { coordinate: [412, 300] }],
        ["type", { text: "hello" }],
        ["key", { text: "Return" }],
      ],
    ]);
    for (const turn of turns) {
      assert.equal(turn.message.stop_reason, "tool_use");
      for (const block of turn.blocks) {
        assert.ok(block.type === "tool_use");
        assert.equal(block.toolset_name, "computer");
      }
      const ids = turn.blocks.map((block) => "id" in block && block.id);
      assert.equal(new Set(ids).size, ids.length, "tool_use ids are unique");
    }
    assert.match(final, /^Done\. I zoomed into \(0, 0, 640, 400\), clicked/);
    // No name on the toolset entry: the request went through as sent.
    const sent = sim.requests[0].body as { tools: unknown[] };
    assert.deepEqual(sent.tools, [{ type: "computer_toolset_20260801" }]);
  });
}

Deno.test("Claude's computer toolset leaves zoom out when configs.zoom.enabled is false", async () => {
  await using sim = await startSimulator();
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk",
  });
  const { turns } = await runEpisode(client, {
    model: "claude-ad-hoc",
    max_tokens: 1024,
    tools: [{
      type: "computer_toolset_20260801",
      configs: { zoom: { enabled: false } },
    }],
  }, false);
  assert.deepEqual(
    turns[1].blocks.map((block) => block.type === "tool_use" && block.name),
    ["left_click", "type", "key"],
  );
});

for (const stream of [false, true]) {
  Deno.test(`a model that thinks between tools puts one thinking block before each turn's calls, its text only when display asks (stream=${stream})`, async () => {
    await using sim = await startSimulator({ models: [THINKER] });
    const client = new Anthropic({
      baseURL: sim.baseUrls.anthropic,
      apiKey: "sk",
    });
    for (const display of [undefined, "summarized" as const]) {
      const { turns } = await runEpisode(client, {
        model: "claude-thinker",
        max_tokens: 4096,
        tools: [TOOLSET],
        ...(display
          ? { thinking: { type: "adaptive" as const, display } }
          : {}),
      }, stream);
      for (const turn of turns) {
        const [first, ...rest] = turn.blocks;
        assert.equal(first.type, "thinking");
        assert.ok(rest.every((block) => block.type === "tool_use"));
        if (first.type !== "thinking") continue;
        assert.equal(first.signature.length > 0, true);
        if (display) assert.match(first.thinking, /^Next: /);
        else assert.equal(first.thinking, "");
      }
    }
  });
}

Deno.test("computer_20251124 zooms with enable_zoom; computer_20250124 never does", async () => {
  await using sim = await startSimulator();
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk",
  });
  const actions = async (tool: Record<string, unknown>, beta: string) => {
    const seen: unknown[] = [];
    const messages: Anthropic.Beta.BetaMessageParam[] = [{
      role: "user",
      content: PROMPT,
    }];
    for (let turn = 0; turn < 10; turn++) {
      const message = await client.beta.messages.create({
        model: "claude-ad-hoc",
        max_tokens: 1024,
        betas: [beta],
        tools: [tool as unknown as Anthropic.Beta.BetaToolUnion],
        messages,
      });
      const use = message.content.find((block) => block.type === "tool_use");
      if (use?.type !== "tool_use") return seen;
      seen.push((use.input as { action: string }).action);
      messages.push({ role: "assistant", content: message.content }, {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: use.id, content: "ok" }],
      });
    }
    throw new Error("The episode did not end");
  };
  const single = {
    name: "computer",
    display_width_px: 1280,
    display_height_px: 800,
  };
  assert.deepEqual(
    await actions(
      { type: "computer_20251124", enable_zoom: true, ...single },
      "computer-use-2025-11-24",
    ),
    ["screenshot", "zoom", "left_click", "type", "key"],
  );
  assert.deepEqual(
    await actions(
      { type: "computer_20250124", ...single },
      "computer-use-2025-01-24",
    ),
    ["screenshot", "left_click", "type", "key"],
  );
});

Deno.test("a model that thinks between tools puts a thinking block before a function tool call too, and none before its final text", async () => {
  await using sim = await startSimulator({ models: [THINKER] });
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk",
  });
  const tools = [{
    name: "look",
    input_schema: { type: "object" as const, properties: {} },
  }];
  const first = await client.messages.create({
    model: "claude-thinker",
    max_tokens: 1024,
    tools,
    messages: [{ role: "user", content: "Use `look`." }],
  });
  assert.deepEqual(first.content.map((block) => block.type), [
    "thinking",
    "tool_use",
  ]);
  const use = first.content[1];
  assert.ok(use.type === "tool_use");
  const final = await client.messages.create({
    model: "claude-thinker",
    max_tokens: 1024,
    tools,
    messages: [
      { role: "user", content: "Use `look`." },
      { role: "assistant", content: first.content },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: use.id, content: "a" }],
      },
    ],
  });
  assert.deepEqual(final.content.map((block) => block.type), ["text"]);
});

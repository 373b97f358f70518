import assert from "node:assert/strict";
import { modelFacts, wireFacts } from "./convention.ts";

Deno.test("modelFacts() reads computer_use and features from a /v1/models entry", () => {
  assert.deepEqual(
    modelFacts({
      id: "claude-opus-5-5",
      routes: ["chat", "messages"],
      computer_use: { tool: "computer_toolset_20260801" },
      features: {
        disabled_thinking: false,
        forced_tool_choice: false,
        thinking_between_tools: true,
      },
    }),
    {
      convention: "messages",
      computerUse: { tool: "computer_toolset_20260801" },
      features: {
        disabledThinking: false,
        forcedToolChoice: false,
        thinkingBetweenTools: true,
      },
    },
  );
  assert.deepEqual(
    modelFacts({
      routes: ["gemini"],
      computer_use: {
        tool: "computer_use",
        environment: "ENVIRONMENT_BROWSER",
        environments: ["ENVIRONMENT_BROWSER", "ENVIRONMENT_DESKTOP"],
      },
    }).computerUse,
    {
      tool: "computer_use",
      environment: "ENVIRONMENT_BROWSER",
      environments: ["ENVIRONMENT_BROWSER", "ENVIRONMENT_DESKTOP"],
    },
  );
});

Deno.test("modelFacts() sends a computer-use model to its provider's route, and leaves chat models on chat", () => {
  const gpt = { routes: ["chat", "responses"] };
  assert.equal(modelFacts(gpt).convention, "chat");
  assert.equal(
    modelFacts({ ...gpt, computer_use: { tool: "computer" } }).convention,
    "responses",
  );
  assert.equal(
    modelFacts({ routes: ["chat"], computer_use: { tool: "computer" } })
      .convention,
    "chat",
  );
  assert.equal(modelFacts(undefined).convention, "chat");
});

Deno.test("modelFacts() leaves out what a gateway sends of the wrong type, never failing the run", () => {
  assert.deepEqual(
    modelFacts({
      routes: ["messages", 7],
      computer_use: { tool: 5, beta: "x" },
      features: { forced_tool_choice: "no", disabled_thinking: false },
    }),
    { convention: "messages", features: { disabledThinking: false } },
  );
  assert.deepEqual(
    modelFacts({
      routes: ["messages"],
      computer_use: {
        tool: "computer_20250124",
        beta: 1,
        environment: ["x"],
        environments: [1, "ENVIRONMENT_BROWSER"],
      },
      features: [],
    }),
    {
      convention: "messages",
      computerUse: {
        tool: "computer_20250124",
        environments: ["ENVIRONMENT_BROWSER"],
      },
    },
  );
});

Deno.test("wireFacts() spells facts as /v1/models does, and modelFacts() reads them back", () => {
  const facts = {
    convention: "messages" as const,
    computerUse: { tool: "computer_20251124", beta: "computer-use-2025-11-24" },
    features: { forcedToolChoice: false, thinkingBetweenTools: true },
  };
  const wire = wireFacts(facts);
  assert.deepEqual(wire, {
    computer_use: {
      tool: "computer_20251124",
      beta: "computer-use-2025-11-24",
    },
    features: { forced_tool_choice: false, thinking_between_tools: true },
  });
  assert.deepEqual(modelFacts({ routes: ["messages"], ...wire }), facts);
  assert.deepEqual(wireFacts({}), {});
});

import assert from "node:assert/strict";
import type { SimulatedModel } from "./model_facts.ts";
import { checkComputerTools, checkToolChoice } from "./openai_rules.ts";
import { BadRequestError } from "./request_flow.ts";

const REFUSES_FORCING: SimulatedModel = {
  provider: "openai",
  upstream: "gpt-test",
  features: { forcedToolChoice: false },
};

function message(check: () => void): string | undefined {
  try {
    check();
    return undefined;
  } catch (error) {
    assert.ok(error instanceof BadRequestError);
    return error.message;
  }
}

Deno.test("checkToolChoice() refuses what forces a tool, and only that", () => {
  const forced = [
    ["required", "required"],
    [{ type: "function", name: "look" }, "function"],
    [{ type: "allowed_tools", mode: "required", tools: [] }, "required"],
    [{ type: "computer_use_preview" }, "computer_use_preview"],
  ] as const;
  for (const [choice, named] of forced) {
    assert.equal(
      message(() => checkToolChoice({ tool_choice: choice }, REFUSES_FORCING)),
      `Unsupported value: 'tool_choice' does not support '${named}' with this model.`,
    );
  }
  for (
    const choice of [
      "auto",
      "none",
      undefined,
      { type: "allowed_tools", mode: "auto", tools: [] },
    ]
  ) {
    assert.equal(
      message(() => checkToolChoice({ tool_choice: choice }, REFUSES_FORCING)),
      undefined,
    );
  }
  assert.equal(
    message(() => checkToolChoice({ tool_choice: "required" }, undefined)),
    undefined,
  );
});

Deno.test("checkComputerTools() leaves function tools alone and names the refused tool", () => {
  const gpt: SimulatedModel = {
    provider: "openai",
    upstream: "gpt-5.4",
    computerUse: { tool: "computer" },
  };
  assert.equal(
    message(() =>
      checkComputerTools({
        model: "gpt-5.4",
        tools: [{ type: "function", name: "f" }, { type: "computer" }],
      }, gpt)
    ),
    undefined,
  );
  const refused = (() => {
    try {
      checkComputerTools({
        model: "gpt-5.4",
        tools: [{ type: "computer_use_preview" }],
      }, gpt);
    } catch (error) {
      return error;
    }
  })();
  assert.ok(refused instanceof BadRequestError);
  assert.equal(
    refused.message,
    "Tool 'computer_use_preview' is not supported with gpt-5.4.",
  );
  assert.deepEqual(refused.details, { param: "tools" });
});

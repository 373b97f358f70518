import assert from "node:assert/strict";
import {
  checkAnthropicRules,
  isClaudeComputerTool,
} from "./anthropic_rules.ts";
import type { SimulatedModel } from "./model_facts.ts";
import { BadRequestError } from "./request_flow.ts";

const OPUS_4_5: SimulatedModel = {
  provider: "anthropic",
  upstream: "claude-opus-4-5",
  computerUse: { tool: "computer_20251124", beta: "computer-use-2025-11-24" },
};

function refusal(
  body: Record<string, unknown>,
  model: SimulatedModel | undefined,
  beta?: string,
): string | undefined {
  const headers = new Headers(beta ? { "anthropic-beta": beta } : {});
  try {
    checkAnthropicRules({ model: "claude-opus-4-5", ...body }, headers, model);
    return undefined;
  } catch (error) {
    assert.ok(error instanceof BadRequestError);
    assert.equal(error.status, 400);
    return error.message;
  }
}

Deno.test("isClaudeComputerTool() knows the dated computer tools and toolsets, nothing else", () => {
  for (const type of ["computer_20250124", "computer_toolset_20260801"]) {
    assert.equal(isClaudeComputerTool({ type }), true);
  }
  for (const type of ["computer", "bash_20250124", "computer_use_preview"]) {
    assert.equal(isClaudeComputerTool({ type }), false);
  }
});

Deno.test("checkAnthropicRules() finds the needed beta among several, in any order", () => {
  const tools = [{ type: "computer_20251124", name: "computer" }];
  assert.equal(
    refusal(
      { tools },
      OPUS_4_5,
      "prompt-caching-2024-07-31, computer-use-2025-11-24",
    ),
    undefined,
  );
  assert.match(
    refusal({ tools }, OPUS_4_5, "computer-use-2025-01-24") ?? "",
    /^tools\.0: Input tag 'computer_20251124'/,
  );
});

Deno.test("checkAnthropicRules() names the failing tool's index", () => {
  const tools = [
    { name: "look", input_schema: { type: "object" } },
    { type: "computer_20251124", name: "computer" },
  ];
  assert.match(refusal({ tools }, OPUS_4_5) ?? "", /^tools\.1: /);
});

Deno.test("checkAnthropicRules() is lenient without facts, and where a feature is not refused", () => {
  const body = {
    tools: [{ type: "computer_20241022", name: "computer" }],
    thinking: { type: "disabled" },
    tool_choice: { type: "any" },
  };
  assert.equal(refusal(body, undefined), undefined);
  assert.equal(
    refusal({ ...body, tools: [] }, {
      ...OPUS_4_5,
      features: { disabledThinking: true, forcedToolChoice: true },
    }),
    undefined,
  );
});

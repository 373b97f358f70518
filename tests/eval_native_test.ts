/**
 * The runner's native agents, one per convention, against a scripted model
 * on loopback that speaks each provider's wire shape, with a real stdio
 * environment whose `computer` tool is backed by a recorded screen (a small
 * PNG) and logs every action: each native action reaches the `computer` tool
 * as the contract maps it, the screenshot goes back in the convention's own
 * form, safety checks are acknowledged and recorded, a native tool the
 * environment does not offer is never declared and is refused, and the cost
 * is the sum of the calls' `x-gateway-cost`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type EvalResult, parseTarget, runEval } from "../eval/mod.ts";
import {
  CALL_COST_USD,
  type ScriptedModel,
  type ScriptedTurn,
  startScriptedModel,
} from "./fixtures/eval_scripted_model.ts";

const ENV = new URL("./fixtures/eval_contract_env.ts", import.meta.url)
  .pathname;
const SCREEN =
  "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACAQAAAABazTCJAAAADElEQVQI12M4wHAAAAMEAYHFO6KpAAAAAElFTkSuQmCC";

type Json = Record<string, unknown>;

/**
 * Runs the `desktop` scenario with a scripted model on `routes`, listed with
 * `facts` (`computer_use`, `features`) as the gateway's `/v1/models` would.
 */
async function desktop(
  routes: string[],
  script: ScriptedTurn[],
  fn: (result: EvalResult, model: ScriptedModel) => void,
  facts: Record<string, unknown> = {},
) {
  await using model = startScriptedModel({
    models: [{ id: "native", routes, ...facts }],
    script,
  });
  const { results } = await runEval({
    target: parseTarget(ENV),
    tasks: [{ scenario: "desktop" }],
    endpoint: { gatewayUrl: model.url, key: "k", model: "native" },
  });
  const result = results[0];
  assert.equal(result.error, undefined);
  assert.equal(result.reward, 1);
  assert.equal(result.steps, script.length);
  assert.equal(
    Math.round(result.cost_usd * 1e6),
    Math.round(script.length * CALL_COST_USD * 1e6),
  );
  fn(result, model);
}

const actions = (result: EvalResult) => JSON.parse(result.content!) as Json[];

Deno.test("Messages (Claude): the native computer tool at the display size, actions mapped, screenshots as image blocks in tool_result, an undeclared bash refused", async () => {
  await desktop(["chat", "messages"], [
    {
      calls: [
        { name: "computer", args: { action: "screenshot" } },
        { name: "bash", args: { command: "ls" } },
      ],
    },
    {
      calls: [{
        name: "computer",
        args: { action: "left_click", coordinate: [412, 300] },
      }],
    },
    { calls: [{ name: "computer", args: { action: "type", text: "hello" } }] },
    { calls: [{ name: "computer", args: { action: "key", text: "Return" } }] },
    { text: "Done." },
  ], (result, model) => {
    assert.equal(result.convention, "messages");
    assert.equal(result.refused_tool_calls, 1);
    assert.deepEqual(result.tokens, { input: 50, output: 25 });
    assert.deepEqual(actions(result), [
      { action: "screenshot" },
      { action: "click", x: 412, y: 300, button: "left" },
      { action: "type", text: "hello" },
      { action: "key", keys: ["Return"] },
    ]);
    const [first, second] = model.requests;
    assert.equal(first.path, "/v1/messages");
    assert.equal(
      first.headers.get("anthropic-beta"),
      "computer-use-2025-01-24",
    );
    assert.deepEqual(first.body.tools, [{
      type: "computer_20250124",
      name: "computer",
      display_width_px: 1280,
      display_height_px: 800,
    }]);
    const turn = (second.body.messages as Json[]).at(-1)!;
    assert.equal(turn.role, "user");
    const [screenshot, bash] = turn.content as Json[];
    assert.equal(screenshot.type, "tool_result");
    assert.deepEqual((screenshot.content as Json[]).at(-1), {
      type: "image",
      source: { type: "base64", media_type: "image/png", data: SCREEN },
    });
    assert.equal(bash.is_error, true);
    assert.match(
      JSON.stringify(bash.content),
      /There is no tool \\"bash\\" in this task/,
    );
  }, {
    computer_use: {
      tool: "computer_20250124",
      beta: "computer-use-2025-01-24",
    },
  });
});

Deno.test("Responses (operator): computer_use_preview, computer_call_output with a computer_screenshot, safety checks acknowledged and recorded", async () => {
  await desktop(["responses"], [
    { calls: [{ name: "computer", args: { type: "screenshot" } }] },
    {
      calls: [{
        name: "computer",
        args: { type: "click", x: 412, y: 300, button: "left" },
        safety: true,
      }],
    },
    { calls: [{ name: "computer", args: { type: "type", text: "hello" } }] },
    {
      calls: [{
        name: "computer",
        args: { type: "keypress", keys: ["ENTER"] },
      }],
    },
    { text: "Done: submitted." },
  ], (result, model) => {
    assert.equal(result.convention, "responses");
    assert.deepEqual(result.safety_checks, [{
      id: "sc_1",
      code: "malicious_instructions",
      message: "Check the page first",
    }]);
    assert.deepEqual(actions(result), [
      { action: "screenshot" },
      { action: "click", x: 412, y: 300, button: "left" },
      { action: "type", text: "hello" },
      { action: "key", keys: ["ENTER"] },
    ]);
    const first = model.requests[0];
    assert.equal(first.path, "/v1/responses");
    assert.equal(first.body.truncation, "auto");
    assert.deepEqual(first.body.tools, [{
      type: "computer_use_preview",
      display_width: 1280,
      display_height: 800,
      environment: "browser",
    }]);
    const input = model.requests[2].body.input as Json[];
    // The whole history goes back: reasoning items included.
    assert.ok(input.some((item) => item.type === "reasoning"));
    const output = input.at(-1)!;
    assert.deepEqual(output, {
      type: "computer_call_output",
      call_id: "call_1_0",
      output: {
        type: "computer_screenshot",
        image_url: `data:image/png;base64,${SCREEN}`,
      },
      acknowledged_safety_checks: [{
        id: "sc_1",
        code: "malicious_instructions",
        message: "Check the page first",
      }],
    });
  }, { computer_use: { tool: "computer_use_preview" } });
});

Deno.test("Gemini native: computerUse, 0–999 coordinates denormalised to the display, functionResponse with inlineData, confirmation acknowledged", async () => {
  await desktop(["gemini"], [
    {
      calls: [{ name: "click_at", args: { x: 322, y: 375 }, safety: true }],
    },
    {
      calls: [{
        name: "type_text_at",
        args: { x: 322, y: 375, text: "hello" },
      }],
    },
    { calls: [{ name: "search", args: {} }] },
    { text: "Done" },
  ], (result, model) => {
    assert.equal(result.convention, "gemini");
    assert.deepEqual(result.tokens, { input: 40, output: 20 });
    assert.deepEqual(result.safety_checks, [{
      id: "click_at",
      code: "require_confirmation",
      message: "Submitting a form",
    }]);
    assert.deepEqual(actions(result), [
      { action: "click", x: 412, y: 300, button: "left" },
      { action: "click", x: 412, y: 300, button: "left" },
      { action: "key", keys: ["ctrl", "a"] },
      { action: "key", keys: ["backspace"] },
      { action: "type", text: "hello" },
      { action: "key", keys: ["enter"] },
    ]);
    const first = model.requests[0];
    assert.equal(first.path, "/v1beta/models/native:generateContent");
    assert.deepEqual(first.body.tools, [{
      computerUse: { environment: "ENVIRONMENT_BROWSER" },
    }]);
    const reply = (model.requests[1].body.contents as Json[]).at(-1)!;
    assert.equal(reply.role, "user");
    const response = (reply.parts as Json[])[0].functionResponse as Json;
    assert.equal(response.name, "click_at");
    assert.equal((response.response as Json).safety_acknowledgement, "true");
    assert.deepEqual(response.parts, [{
      inlineData: { mimeType: "image/png", data: SCREEN },
    }]);
    const search = ((model.requests[3].body.contents as Json[]).at(-1)!
      .parts as Json[])[0].functionResponse as Json;
    assert.match(
      String((search.response as Json).error),
      /search is not available/,
    );
    // The confirmation is in the trajectory, on the call that asked for it.
    assert.deepEqual(result.trajectory!.steps[0].tool_calls[0].safety_checks, [{
      id: "click_at",
      code: "require_confirmation",
      message: "Submitting a form",
    }]);
  }, {
    computer_use: { tool: "computer_use", environment: "ENVIRONMENT_BROWSER" },
  });
});

Deno.test("chat: the computer tool as a function, screenshots as image_url parts after the tool messages", async () => {
  await desktop(["chat"], [
    { calls: [{ name: "computer", args: { action: "screenshot" } }] },
    {
      calls: [{ name: "computer", args: { action: "click", x: 412, y: 300 } }],
    },
    { calls: [{ name: "computer", args: { action: "type", text: "hello" } }] },
    {
      calls: [{ name: "computer", args: { action: "key", keys: ["Return"] } }],
    },
    { text: "Done" },
  ], (result, model) => {
    assert.equal(result.convention, "chat");
    assert.deepEqual(actions(result), [
      { action: "screenshot" },
      { action: "click", x: 412, y: 300 },
      { action: "type", text: "hello" },
      { action: "key", keys: ["Return"] },
    ]);
    const messages = model.requests[1].body.messages as Json[];
    assert.deepEqual(messages.slice(-2), [
      { role: "tool", tool_call_id: "call_0_0", content: "did screenshot" },
      {
        role: "user",
        content: [{
          type: "image_url",
          image_url: { url: `data:image/png;base64,${SCREEN}` },
        }],
      },
    ]);
  });
});

Deno.test("--convention overrides the routes: a Messages-capable model spoken to over chat", async () => {
  await using model = startScriptedModel({
    models: [{ id: "native", routes: ["chat", "messages"] }],
    script: [{ text: "Done" }],
  });
  const { results } = await runEval({
    target: parseTarget(ENV),
    tasks: [{ scenario: "desktop" }],
    endpoint: { gatewayUrl: model.url, key: "k", model: "native" },
    convention: "chat",
  });
  assert.equal(results[0].convention, "chat");
  assert.equal(model.requests[0].path, "/v1/chat/completions");
});

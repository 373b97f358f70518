/**
 * The computer-use wires the runner picks from `GET /v1/models`, each
 * against a scripted model on loopback listed with that model's
 * `computer_use` and `features`, and a real stdio environment whose
 * `computer` tool logs every action: Claude's `computer_toolset_20260801`
 * (one `tools[]` entry, no beta; batched member calls run in order, each
 * answered by its own `tool_result` naming the toolset; the rest of a turn
 * after a failure "Not executed"; thinking blocks sent back with their
 * signatures), `computer_20251124` with its beta and zoom, a Claude model
 * without `computer_use` (the computer as a custom tool); OpenAI's GA
 * `computer` tool with batched `actions` answered by one output, and the
 * preview tool's environment; Gemini's `computerUse` in the scenario's
 * environment with `excludedPredefinedFunctions`, and a refusal of an
 * environment the model does not offer. Every model id here is one the code
 * has never seen.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type EvalResult, parseTarget, runEval } from "../eval/mod.ts";
import {
  type ScriptedModel,
  type ScriptedTurn,
  startScriptedModel,
} from "./fixtures/eval_scripted_model.ts";

const ENV = new URL("./fixtures/eval_contract_env.ts", import.meta.url)
  .pathname;

type Json = Record<string, unknown>;

/** Runs `scenario` with a scripted model listed as `entry` on /v1/models. */
async function run(
  entry: Json & { routes: string[] },
  script: ScriptedTurn[],
  scenario = "desktop",
): Promise<{ result: EvalResult; requests: ScriptedModel["requests"] }> {
  await using model = startScriptedModel({
    models: [{ id: "never-seen-model", ...entry }],
    script,
  });
  const { results } = await runEval({
    target: parseTarget(ENV),
    tasks: [{ scenario }],
    endpoint: { gatewayUrl: model.url, key: "k", model: "never-seen-model" },
  });
  return { result: results[0], requests: model.requests };
}

const actions = (result: EvalResult) => JSON.parse(result.content!) as Json[];
const lastTurn = (request: { body: Json }) =>
  (request.body.messages as Json[]).at(-1)!;

Deno.test("Claude's computer toolset: one tools[] entry, no beta, batched members run in order, each answered with its toolset_name, the rest of a failed turn not executed, thinking kept with its signature", async () => {
  const member = (name: string, args: Json = {}) => ({
    name,
    args,
    toolset: "computer",
  });
  const { result, requests } = await run({
    routes: ["chat", "messages"],
    computer_use: { tool: "computer_toolset_20260801" },
    features: {
      disabled_thinking: false,
      forced_tool_choice: false,
      thinking_between_tools: true,
    },
  }, [
    {
      thinking: "I will fill in the box.",
      calls: [
        member("left_click", { coordinate: [412, 300] }),
        member("type", { text: "hello" }),
        member("key", { text: "Return" }),
      ],
    },
    {
      calls: [
        member("zoom", { region: [400, 290, 560, 390] }),
        member("screenshot"),
      ],
    },
    {
      calls: [
        { name: "navigate", args: { url: "x" }, toolset: "browser" },
        member("scroll", { coordinate: [5, 5] }),
        member("left_click", { coordinate: [1, 1] }),
      ],
    },
    { text: "Done." },
  ]);
  assert.equal(result.error, undefined);
  assert.equal(result.reward, 1);
  assert.equal(result.convention, "messages");
  // In order; the left_click after the failed scroll never ran.
  assert.deepEqual(actions(result), [
    { action: "click", x: 412, y: 300, button: "left" },
    { action: "type", text: "hello" },
    { action: "key", keys: ["Return"] },
    { action: "zoom", region: [400, 290, 560, 390] },
    { action: "screenshot" },
  ]);
  for (const request of requests) {
    assert.deepEqual(request.body.tools, [{
      type: "computer_toolset_20260801",
    }]);
    assert.equal(request.headers.get("anthropic-beta"), null);
    assert.equal(request.body.thinking, undefined);
    assert.equal(request.body.tool_choice, undefined);
  }
  // The assistant turn goes back whole: the thinking block with its signature.
  const sentBack = (requests[1].body.messages as Json[]).at(-2)!;
  assert.deepEqual((sentBack.content as Json[])[0], {
    type: "thinking",
    thinking: "I will fill in the box.",
    signature: "sig_0",
  });
  assert.equal(result.trajectory!.steps[0].text, "I will fill in the box.");
  // One tool_result per member, in order, naming the toolset; an action
  // answers with text, no screenshot.
  const first = lastTurn(requests[1]).content as Json[];
  assert.deepEqual(first.map((r) => [r.tool_use_id, r.toolset_name]), [
    ["call_0_0", "computer"],
    ["call_0_1", "computer"],
    ["call_0_2", "computer"],
  ]);
  assert.ok(
    first.every((r) => (r.content as Json[]).every((c) => c.type === "text")),
  );
  // zoom and screenshot answer with pictures.
  const second = lastTurn(requests[2]).content as Json[];
  assert.ok(
    second.every((r) => (r.content as Json[]).some((c) => c.type === "image")),
  );
  // Another toolset's call is refused; the failed member stops the turn.
  const [browser, scroll, click] = lastTurn(requests[3]).content as Json[];
  assert.equal(browser.is_error, true);
  assert.equal(browser.toolset_name, "browser");
  assert.match(JSON.stringify(browser.content), /There is no tool/);
  assert.equal(scroll.is_error, true);
  assert.match(JSON.stringify(scroll.content), /scroll needs/);
  assert.equal(click.is_error, true);
  assert.deepEqual(click.content, [{
    type: "text",
    text: "Not executed: an earlier computer action in this turn failed.",
  }]);
  assert.equal(result.refused_tool_calls, 1);
});

Deno.test("Claude's computer_20251124: zoom enabled, the catalog's beta sent, zoom through the computer tool", async () => {
  const { result, requests } = await run({
    routes: ["chat", "messages"],
    computer_use: {
      tool: "computer_20251124",
      beta: "computer-use-2025-11-24",
    },
  }, [
    {
      calls: [{
        name: "computer",
        args: { action: "zoom", region: [0, 0, 640, 400] },
      }],
    },
    { text: "Done" },
  ]);
  assert.equal(result.reward, 1);
  assert.deepEqual(actions(result), [
    { action: "zoom", region: [0, 0, 640, 400] },
  ]);
  assert.deepEqual(requests[0].body.tools, [{
    type: "computer_20251124",
    name: "computer",
    display_width_px: 1280,
    display_height_px: 800,
    enable_zoom: true,
  }]);
  assert.equal(
    requests[0].headers.get("anthropic-beta"),
    "computer-use-2025-11-24",
  );
});

Deno.test("a Claude model without computer_use gets the computer as a custom tool, with no beta", async () => {
  const { result, requests } = await run({ routes: ["chat", "messages"] }, [
    { calls: [{ name: "computer", args: { action: "screenshot" } }] },
    { text: "Done" },
  ]);
  assert.equal(result.reward, 1);
  const [tool] = requests[0].body.tools as Json[];
  assert.equal(tool.name, "computer");
  assert.equal(tool.type, undefined);
  assert.ok(tool.input_schema);
  assert.equal(requests[0].headers.get("anthropic-beta"), null);
  assert.deepEqual(actions(result), [{ action: "screenshot" }]);
});

Deno.test("OpenAI's GA computer tool: {type: computer}, on Responses though chat is listed too; a computer_call's batched actions run in order, one output with the final screenshot; a failed action stops its batch", async () => {
  const { result, requests } = await run({
    routes: ["chat", "responses"],
    computer_use: { tool: "computer" },
  }, [
    {
      calls: [{
        name: "computer",
        batch: [
          { type: "click", x: 412, y: 300, button: "left" },
          { type: "type", text: "hello" },
          { type: "keypress", keys: ["ENTER"] },
        ],
      }],
    },
    {
      calls: [{
        name: "computer",
        batch: [{ type: "click", button: "left" }, { type: "type", text: "x" }],
      }],
    },
    {
      calls: [{
        name: "computer",
        batch: Array.from({ length: 101 }, () => ({ type: "wait" })),
      }],
    },
    { text: "Done" },
  ]);
  assert.equal(result.convention, "responses");
  assert.equal(result.reward, 1);
  assert.deepEqual(requests[0].body.tools, [{ type: "computer" }]);
  assert.deepEqual(actions(result), [
    { action: "click", x: 412, y: 300, button: "left" },
    { action: "type", text: "hello" },
    { action: "key", keys: ["ENTER"] },
    // The failed batch's and the refused batch's outputs need a screenshot.
    { action: "screenshot" },
    { action: "screenshot" },
  ]);
  const input = requests[1].body.input as Json[];
  const outputs = input.filter((item) => item.type === "computer_call_output");
  assert.equal(outputs.length, 1);
  assert.equal(outputs[0].call_id, "call_0_0");
  assert.equal((outputs[0].output as Json).type, "computer_screenshot");
  // The trajectory keeps the batch as the model sent it.
  assert.equal(
    (result.trajectory!.steps[0].tool_calls[0].arguments as Json[]).length,
    3,
  );
  const failed = (requests[2].body.input as Json[]).at(-1)!;
  assert.equal(failed.role, "user");
  assert.match(
    JSON.stringify(failed.content),
    /click needs \\"x\\" and \\"y\\".*1 later action/,
  );
  // An endless batch is refused whole: no wait ran.
  const flood = (requests[3].body.input as Json[]).at(-1)!;
  assert.match(
    JSON.stringify(flood.content),
    /at most 100 actions; this one has 101, none run/,
  );
});

Deno.test("the preview tool declares the scenario's environment: a desktop scenario is linux", async () => {
  const { result, requests } = await run(
    {
      routes: ["responses"],
      computer_use: { tool: "computer_use_preview" },
    },
    [{ text: "Done" }],
    "linux_desktop",
  );
  assert.equal(result.reward, 1);
  assert.deepEqual(requests[0].body.tools, [{
    type: "computer_use_preview",
    display_width: 1280,
    display_height: 800,
    environment: "linux",
  }]);
});

Deno.test("Gemini: computerUse in the environment the scenario asks for, its excluded tools as excludedPredefinedFunctions, an excluded function refused", async () => {
  const { result, requests } = await run({
    routes: ["gemini"],
    computer_use: {
      tool: "computer_use",
      environment: "ENVIRONMENT_BROWSER",
      environments: ["ENVIRONMENT_BROWSER", "ENVIRONMENT_DESKTOP"],
    },
  }, [
    { calls: [{ name: "navigate", args: { url: "https://example.com" } }] },
    { calls: [{ name: "click_at", args: { x: 322, y: 375 } }] },
    { text: "Done" },
  ], "linux_desktop");
  assert.equal(result.error, undefined);
  assert.equal(result.reward, 1);
  assert.deepEqual(requests[0].body.tools, [{
    computerUse: {
      environment: "ENVIRONMENT_DESKTOP",
      excludedPredefinedFunctions: [
        "go_back",
        "go_forward",
        "search",
        "navigate",
      ],
    },
  }]);
  assert.equal(result.refused_tool_calls, 1);
  assert.deepEqual(actions(result), [
    { action: "click", x: 412, y: 300, button: "left" },
  ]);
});

Deno.test("Gemini: a scenario asking for an environment the model does not offer fails in one line naming both", async () => {
  const { result, requests } = await run(
    {
      routes: ["gemini"],
      computer_use: {
        tool: "computer_use",
        environment: "ENVIRONMENT_BROWSER",
      },
    },
    [{ text: "Done" }],
    "linux_desktop",
  );
  assert.equal(requests.length, 0);
  assert.equal(result.reward, null);
  assert.equal(
    result.error,
    "The scenario asks for the desktop environment, and never-seen-model's computer use offers ENVIRONMENT_BROWSER",
  );
});

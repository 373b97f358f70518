/**
 * Every computer-use model the gateway lists, driven on a real desktop:
 * `examples/desktop` (Xvfb, xdotool, Chromium showing the page the
 * environment serves) run by the eval runner through the demo gateway and
 * the provider simulator, whose computer-use agent refuses any tool version
 * (and any missing or wrong beta) other than the one the model's catalog
 * entry names. For each `GET /v1/models` entry with `computer_use` (and one
 * an operator adds through `PUT /admin/models/{id}` under a name the runner
 * has never seen), the task scores 1, and the model calls carried the tool
 * and beta the entry names; the gateway's traces agree. A retired model
 * cannot be served and is left out, saying so.
 *
 * Skips, saying why, when Xvfb, xdotool, ImageMagick or Chromium is missing.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startDemo } from "../gateway/cli/demo.ts";
import {
  gatewayTransport,
  type JsonObject,
  type ModelRequest,
  type ModelTransport,
  parseTarget,
  runEval,
} from "../eval/mod.ts";
import { missingDesktopPrograms } from "./_desktop.ts";

const MAIN = new URL("../examples/desktop/main.ts", import.meta.url).pathname;
const missing = missingDesktopPrograms("eval_desktop_wires_test");

/** A model the runner has never heard of, added by an operator. */
const ADDED = {
  id: "acme-desk-pilot",
  entry: {
    provider: "anthropic",
    // The simulator knows this upstream's facts: it refuses any other tool.
    upstream: "claude-opus-5-5",
    routes: ["chat", "messages"],
    pricing: { input: 4, output: 20 },
    maxOutputTokens: 64000,
    computerUse: { tool: "computer_toolset_20260801" },
    features: {
      disabledThinking: false,
      forcedToolChoice: false,
      thinkingBetweenTools: true,
    },
  },
};

/** The computer tool's type in a request body, in each convention's shape. */
function computerToolOf(request: ModelRequest): string | undefined {
  const tools = (request.body.tools ?? []) as JsonObject[];
  for (const tool of tools) {
    if (typeof tool.type === "string" && /computer/.test(tool.type)) {
      return tool.type;
    }
    if (tool.computerUse) return "computer_use";
  }
  return undefined;
}

Deno.test({
  name:
    "every /v1/models entry with computer_use (and one an operator adds) completes the desktop task with reward 1, sending the documented tool and beta",
  ignore: missing.length > 0,
}, async () => {
  const demo = await startDemo({ quiet: true, port: 0 });
  const admin = { authorization: `Bearer ${demo.adminToken}` };
  try {
    const added = await fetch(
      `${demo.gateway.url}/admin/models/${ADDED.id}`,
      {
        method: "PUT",
        headers: { ...admin, "content-type": "application/json" },
        body: JSON.stringify(ADDED.entry),
      },
    );
    assert.equal(added.status, 200, await added.text());
    // The catalog reaches every process within its refresh interval.
    let models: JsonObject[] = [];
    for (let i = 0; i < 100; i++) {
      const listed = await (await fetch(`${demo.gateway.url}/v1/models`))
        .json() as { data: JsonObject[] };
      models = listed.data.filter((m) => m.computer_use);
      if (models.some((m) => m.id === ADDED.id)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(models.some((m) => m.id === ADDED.id), "the added model");
    const retired = models.filter((m) =>
      (m.lifecycle as JsonObject | undefined)?.status === "retired"
    );
    if (retired.length > 0) {
      console.log(
        `left out (retired, the gateway answers 410): ${
          retired.map((m) => m.id).join(", ")
        }`,
      );
    }
    const send = gatewayTransport({
      gatewayUrl: demo.gateway.url,
      key: demo.callerKey,
    });
    for (const model of models.filter((m) => !retired.includes(m))) {
      const id = String(model.id);
      const wire = model.computer_use as { tool: string; beta?: string };
      const sent: ModelRequest[] = [];
      const transport: ModelTransport = (request) => {
        sent.push(request);
        return send(request);
      };
      const { results } = await runEval({
        target: parseTarget(MAIN),
        tasks: [{ scenario: "fill_form", args: { word: "harbor-7" } }],
        endpoint: {
          gatewayUrl: demo.gateway.url,
          key: demo.callerKey,
          model: id,
          transport,
        },
        maxSteps: 15,
      });
      const [result] = results;
      assert.equal(result.error, undefined, id);
      assert.equal(result.refused_tool_calls, 0, id);
      assert.equal(result.reward, 1, `${id}: ${result.content}`);
      assert.ok(sent.length > 0, id);
      for (const request of sent) {
        assert.equal(computerToolOf(request), wire.tool, id);
        assert.equal(request.headers["anthropic-beta"], wire.beta, id);
        assert.equal(request.body.thinking, undefined, id);
        assert.equal(request.body.tool_choice, undefined, id);
      }
      // The gateway served every call of the run, to the model's provider.
      const traced = await fetch(
        `${demo.gateway.url}/v1/traces?trace_id=${result.trace_id}&limit=100`,
        { headers: { authorization: `Bearer ${demo.callerKey}` } },
      );
      assert.equal(traced.status, 200, id);
      const { data } = await traced.json() as { data: JsonObject[] };
      assert.equal(data.length, sent.length, id);
      for (const trace of data) {
        assert.equal(trace.status, 200, id);
        assert.equal(trace.provider, model.owned_by, id);
        assert.equal(trace.model, id, id);
      }
    }
  } finally {
    await demo.close();
  }
});

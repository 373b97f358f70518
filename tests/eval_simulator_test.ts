/**
 * The native agents against the provider simulator's computer-use agent,
 * through the demo gateway (in this process), with a real stdio environment
 * whose `computer` tool is backed by a recorded screen: every convention
 * (`operator` over Responses, `gemini-2.5-computer-use-preview` over Gemini,
 * `claude-haiku-4-5` over Messages, `gpt-4o-mini` over chat) finishes with
 * reward 1, the clicks land where the prompt said, safety checks are
 * acknowledged (the simulator refuses a request that does not), and every
 * run's cost equals what the gateway's ledger charged.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startDemo } from "../gateway/cli/demo.ts";
import { parseTarget, runEval } from "../eval/mod.ts";

const ENV = new URL("./fixtures/eval_contract_env.ts", import.meta.url)
  .pathname;

const CASES = [
  { model: "operator", convention: "responses", enter: "ENTER" },
  { model: "gemini-2.5-computer-use-preview", convention: "gemini" },
  { model: "claude-haiku-4-5", convention: "messages", enter: "Return" },
  { model: "gpt-4o-mini", convention: "chat", enter: "Return" },
] as const;

type Json = Record<string, unknown>;

Deno.test("every convention's native agent completes the recorded desktop task against the simulator, cost equal to the ledger's charge", async () => {
  const demo = await startDemo({ quiet: true, port: 0 });
  const balance = async () => {
    const response = await fetch(`${demo.gateway.url}/v1/credits`, {
      headers: { authorization: `Bearer ${demo.callerKey}` },
    });
    return Math.round(Number((await response.json()).balance) * 1e6);
  };
  try {
    for (const { model, convention, ...expected } of CASES) {
      for (const confirm of [false, true]) {
        const before = await balance();
        const { results } = await runEval({
          target: parseTarget(ENV),
          tasks: [{ scenario: "desktop", args: { confirm } }],
          endpoint: {
            gatewayUrl: demo.gateway.url,
            key: demo.callerKey,
            model,
          },
        });
        const [result] = results;
        const label = `${model}${confirm ? " [confirm]" : ""}`;
        assert.equal(result.error, undefined, label);
        assert.equal(result.convention, convention, label);
        assert.equal(result.reward, 1, label);
        assert.equal(result.refused_tool_calls, 0, label);
        const spent = before - await balance();
        assert.ok(spent > 0, label);
        assert.equal(Math.round(result.cost_usd * 1e6), spent, label);
        const actions = JSON.parse(result.content!) as Json[];
        const clicks = actions.filter((a) => a.action === "click");
        assert.ok(clicks.length >= 1, label);
        for (const click of clicks) {
          assert.deepEqual([click.x, click.y], [412, 300], label);
        }
        assert.deepEqual(
          actions.filter((a) => a.action === "type"),
          [{ action: "type", text: "hello" }],
          label,
        );
        const keys = actions.filter((a) => a.action === "key").at(-1);
        assert.deepEqual(
          keys?.keys,
          [("enter" in expected && expected.enter) || "Enter"],
          label,
        );
        const expectChecks = confirm &&
          (convention === "responses" || convention === "gemini");
        assert.equal(result.safety_checks.length, expectChecks ? 1 : 0, label);
      }
    }
  } finally {
    await demo.close();
  }
});

/**
 * Computer use end to end, offline: `examples/desktop` (a real Xvfb,
 * xdotool and Chromium showing a page the environment serves) run by the
 * eval runner through the demo gateway and the provider simulator's
 * computer-use agent, with each convention's native agent: `operator`
 * (Responses), `gemini-2.5-computer-use-preview` (Gemini), `claude-haiku-4-5`
 * (Messages) and `gpt-4o-mini` (chat). Every task scores 1 and every run's
 * cost equals what the gateway's ledger charged; `deno task eval
 * examples/desktop/main.ts --model <id>` does the same from the command
 * line for one model of each computer-use wire, and its recording shows the
 * tool and beta the catalog documents for the model.
 *
 * Skips, saying why, while `examples/desktop/main.ts` does not exist or
 * Xvfb, xdotool or Chromium is missing.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startDemo } from "../gateway/cli/demo.ts";
import {
  Environment,
  type EvalTask,
  parseTarget,
  parseTasks,
  runEval,
} from "../eval/mod.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const MAIN = `${ROOT}examples/desktop/main.ts`;
const TASKS = `${ROOT}examples/desktop/tasks.jsonl`;

const MODELS = [
  { model: "operator", convention: "responses" },
  { model: "gemini-2.5-computer-use-preview", convention: "gemini" },
  { model: "claude-haiku-4-5", convention: "messages" },
  { model: "gpt-4o-mini", convention: "chat" },
] as const;

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

function onPath(binary: string): boolean {
  return (Deno.env.get("PATH") ?? "").split(":").some((dir) =>
    exists(`${dir}/${binary}`)
  );
}

const chromium = Deno.env.get("CHROMIUM_PATH") ??
  ["chromium", "chromium-browser", "google-chrome"].find(onPath);
const missing = [
  ...(exists(MAIN) ? [] : ["examples/desktop/main.ts"]),
  ...["Xvfb", "xdotool"].filter((binary) => !onPath(binary)),
  ...(chromium ? [] : ["chromium"]),
];
if (missing.length > 0) {
  console.log(
    `eval_desktop_test: skipped, missing ${missing.join(", ")}`,
  );
}

/** The example's tasks: its task file, else each scenario once. */
async function desktopTasks(): Promise<EvalTask[]> {
  if (exists(TASKS)) return parseTasks(await Deno.readTextFile(TASKS));
  const env = await Environment.connect(parseTarget(MAIN));
  try {
    return (await env.scenarios()).map((scenario) => ({
      scenario: scenario.name,
      args: Object.fromEntries(
        scenario.arguments.filter((a) => a.required).map((a) => [
          a.name,
          "mcpkit",
        ]),
      ),
    }));
  } finally {
    await env.close();
  }
}

Deno.test({
  name:
    "examples/desktop: each convention's native agent completes every task on a real desktop with reward 1, cost equal to the ledger's charge",
  ignore: missing.length > 0,
}, async () => {
  const tasks = await desktopTasks();
  assert.ok(tasks.length > 0, "the example offers no scenario");
  const demo = await startDemo({ quiet: true, port: 0 });
  const balance = async () => {
    const response = await fetch(`${demo.gateway.url}/v1/credits`, {
      headers: { authorization: `Bearer ${demo.callerKey}` },
    });
    return Math.round(Number((await response.json()).balance) * 1e6);
  };
  try {
    for (const { model, convention } of MODELS) {
      const before = await balance();
      const { results } = await runEval({
        target: parseTarget(MAIN),
        tasks,
        endpoint: { gatewayUrl: demo.gateway.url, key: demo.callerKey, model },
        maxSteps: 15,
      });
      const spent = before - await balance();
      for (const result of results) {
        const label = `${model} ${result.scenario} ${
          JSON.stringify(result.args)
        }`;
        assert.equal(result.error, undefined, label);
        assert.equal(result.convention, convention, label);
        assert.equal(result.refused_tool_calls, 0, label);
        assert.equal(result.reward, 1, `${label}: ${result.content}`);
      }
      const charged = results.reduce(
        (sum, r) => sum + Math.round(r.cost_usd * 1e6),
        0,
      );
      assert.ok(charged > 0, model);
      assert.equal(charged, spent, model);
    }
  } finally {
    await demo.close();
  }
});

/** What each wire sends, as the catalog documents it, for the command-line runs. */
const CLI_MODELS = [
  { model: "operator", convention: "responses", tool: "computer_use_preview" },
  { model: "gpt-5.4", convention: "responses", tool: "computer" },
  {
    model: "claude-opus-5-5",
    convention: "messages",
    tool: "computer_toolset_20260801",
  },
  {
    model: "claude-opus-4-5",
    convention: "messages",
    tool: "computer_20251124",
    beta: "computer-use-2025-11-24",
  },
  {
    model: "gemini-2.5-computer-use-preview",
    convention: "gemini",
    tool: "computer_use",
  },
] as const;

for (const expected of CLI_MODELS) {
  Deno.test({
    name:
      `deno task eval examples/desktop/main.ts --model ${expected.model} runs offline through the demo: reward 1, the ledger agrees, the recording shows ${expected.tool}${
        "beta" in expected ? ` with ${expected.beta}` : ""
      }`,
    ignore: missing.length > 0,
  }, async () => {
    const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-desktop-" });
    try {
      const output = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          `${ROOT}eval/main.ts`,
          MAIN,
          "--model",
          expected.model,
          "--scenario",
          "fill_form",
          "--out",
          `${dir}/results.jsonl`,
          "--record",
          `${dir}/recording`,
        ],
        cwd: dir,
        env: { NO_COLOR: "1" },
        stdin: "null",
      }).output();
      const stdout = new TextDecoder().decode(output.stdout);
      const stderr = new TextDecoder().decode(output.stderr);
      assert.equal(output.code, 0, stderr);
      assert.match(
        stderr,
        new RegExp(`with ${expected.model} \\(${expected.convention}\\)`),
      );
      const results = (await Deno.readTextFile(`${dir}/results.jsonl`))
        .trim().split("\n").map((line) => JSON.parse(line));
      assert.ok(results.length > 0);
      for (const result of results) assert.equal(result.reward, 1, stdout);
      const cost =
        /model calls cost \$([\d.]+); the gateway's ledger charged \$([\d.]+)/
          .exec(stdout);
      assert.ok(cost, stdout);
      assert.equal(cost[1], cost[2]);
      // Every model call of the run carried the documented tool and beta.
      let calls = 0;
      for await (
        const run of Deno.readDir(`${dir}/recording/exchanges`)
      ) {
        for await (
          const file of Deno.readDir(`${dir}/recording/exchanges/${run.name}`)
        ) {
          const exchange = JSON.parse(
            await Deno.readTextFile(
              `${dir}/recording/exchanges/${run.name}/${file.name}`,
            ),
          );
          const tools = JSON.stringify(exchange.request.tools);
          const declared = expected.tool === "computer_use"
            ? tools.includes('"computerUse"')
            : tools.includes(`"type":"${expected.tool}"`);
          assert.ok(declared, tools.slice(0, 300));
          assert.equal(
            exchange.headers["anthropic-beta"],
            "beta" in expected ? expected.beta : undefined,
          );
          calls++;
        }
      }
      assert.ok(calls > 0);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

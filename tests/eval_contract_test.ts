/**
 * The runner enforces the scenario's contract against a model that does not
 * play by it (a scripted model on loopback) and an environment run as a real
 * stdio (or http) subprocess: only the tools the agent was given are
 * callable, the harness token and `--env` variables reach the process, a
 * reward that is not a finite number is an error, tool results are capped,
 * a tool that hangs or an environment that dies is an error, and the display
 * size reaches the environment's initialize hook.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type EvalResult, parseTarget, runEval } from "../eval/mod.ts";
import type { EvalOptions } from "../eval/run/runner.ts";
import { freePort } from "./_ports.ts";
import {
  type ScriptedTurn,
  startScriptedModel,
} from "./fixtures/eval_scripted_model.ts";

const ENV = new URL("./fixtures/eval_contract_env.ts", import.meta.url)
  .pathname;

type Message = { role: string; content: unknown; tool_call_id?: string };

/** The tool messages a chat request carried. */
function toolMessages(body: Record<string, unknown>): string[] {
  return (body.messages as Message[]).filter((m) => m.role === "tool").map((
    m,
  ) => String(m.content));
}

/** Runs one task of the contract environment against a scripted chat model. */
async function runScripted(
  scenario: string,
  script: ScriptedTurn[],
  options: Partial<EvalOptions> = {},
) {
  await using model = startScriptedModel({
    models: [{ id: "scripted", routes: ["chat"] }],
    script,
  });
  const { results } = await runEval({
    target: parseTarget(ENV),
    tasks: [{ scenario }],
    endpoint: { gatewayUrl: model.url, key: "k", model: "scripted" },
    ...options,
  });
  return { result: results[0], requests: model.requests };
}

/** A final answer that repeats every tool result the model saw. */
const echo: ScriptedTurn = {
  text: (body) => `Done: ${toolMessages(body).join(" | ")}`,
};

Deno.test("a tool the scenario excluded, a harness tool and an unknown one are refused with an error the model reads, counted, and never run", async () => {
  const { result, requests } = await runScripted("cheat", [
    { calls: [{ name: "secret_dump" }] },
    {
      calls: [{
        name: "_hud_submit",
        args: { scenario: "cheat", answer: "4817" },
      }],
    },
    { calls: [{ name: "nonexistent" }, { name: "look" }] },
    echo,
  ]);
  assert.equal(result.error, undefined);
  assert.equal(
    result.reward,
    0,
    "the excluded tool's answer never reached the agent",
  );
  assert.equal(result.refused_tool_calls, 3);
  const declared = (requests[0].body.tools as { function: { name: string } }[])
    .map((t) => t.function.name);
  assert.deepEqual(declared, ["look"]);
  const seen = toolMessages(requests.at(-1)!.body);
  assert.equal(seen.length, 4);
  for (
    const [i, name] of ["secret_dump", "_hud_submit", "nonexistent"].entries()
  ) {
    assert.match(seen[i], new RegExp(`There is no tool "${name}".*look`));
  }
  assert.equal(seen[3], "You see a locked box.");
  assert.equal(result.convention, "chat");
});

Deno.test("the harness token and --env variables reach a stdio environment, so the agent cannot use the setup hub", async () => {
  const { result, requests } = await runScripted("harness", [
    { calls: [{ name: "setup", args: { name: "reveal" } }] },
    echo,
  ], { harnessToken: "tok-1", env: { EVAL_FIXTURE_GREETING: "hello" } });
  assert.equal(result.error, undefined);
  assert.deepEqual(JSON.parse(result.content!), {
    token: "tok-1",
    greeting: "hello",
  });
  assert.equal(result.reward, 1);
  const [refusal] = toolMessages(requests.at(-1)!.body);
  assert.match(refusal, /answers only the evaluation harness/);
});

Deno.test("a reward that is not a finite number is an error, not a zero", async () => {
  const { result } = await runScripted("nan", [{ text: "Done" }]);
  assert.match(result.error ?? "", /reward of "nan" is not a finite number/);
  assert.equal(result.reward, null);
  assert.equal(result.steps, 1);
  assert.ok(result.cost_usd > 0, "the model call made before it still counts");
});

Deno.test("a tool result is capped: text to the byte limit with a marker, images to the image limit", async () => {
  const capped = await runScripted(
    "flood",
    [{ calls: [{ name: "flood" }] }, { text: "Done" }],
    { maxToolResultBytes: 1000, maxToolResultImages: 2 },
  );
  assert.equal(capped.result.error, undefined);
  const messages = capped.requests[1].body.messages as Message[];
  const tool = messages.find((m) => m.role === "tool")!;
  const text = String(tool.content);
  assert.ok(text.startsWith("x".repeat(1000) + "\n"), text.slice(0, 40));
  assert.ok(new TextEncoder().encode(text).length < 1300, `${text.length}`);
  assert.match(
    text,
    /\[truncated: the result has 1000000 bytes of text; the first 1000 are shown\]/,
  );
  assert.match(text, /\[8 image\(s\) left out: at most 2 per result\]/);
  const images = messages.at(-1)!;
  assert.equal(images.role, "user");
  assert.equal((images.content as unknown[]).length, 2);

  const defaults = await runScripted("flood", [
    { calls: [{ name: "flood" }] },
    { text: "Done" },
  ]);
  const full = toolMessages(defaults.requests[1].body)[0];
  assert.ok(full.length > 100_000 && full.length < 100_300, `${full.length}`);
  assert.match(full, /the first 100000 are shown/);
});

Deno.test("a tool that does not answer within the time-out is an error, not a zero", async () => {
  const started = performance.now();
  const { result } = await runScripted(
    "hang",
    [{ calls: [{ name: "hang" }] }, { text: "Done" }],
    { toolTimeoutMs: 1000 },
  );
  assert.match(
    result.error ?? "",
    /The tool "hang" did not answer within 11 s/,
  );
  assert.equal(result.reward, null);
  assert.ok(performance.now() - started < 15_000);
});

Deno.test("an environment that dies during a tool call is an error, not a zero", async () => {
  const { result } = await runScripted("crash", [
    { calls: [{ name: "crash" }] },
    { text: "Done" },
  ]);
  assert.match(
    result.error ?? "",
    /The tool "crash" failed in the environment/,
  );
  assert.equal(result.reward, null);
});

Deno.test("the display size reaches the environment's initialize hook over stdio (handshake) and http (stateless era)", async () => {
  const display = async (target: EvalOptions["target"], size?: {
    width: number;
    height: number;
  }) => {
    await using model = startScriptedModel({
      models: [{ id: "scripted", routes: ["chat"] }],
      script: [{ text: "Done" }],
    });
    const { results } = await runEval({
      target,
      tasks: [{ scenario: "display" }],
      endpoint: { gatewayUrl: model.url, key: "k", model: "scripted" },
      display: size,
    });
    const result: EvalResult = results[0];
    assert.equal(result.error, undefined);
    return JSON.parse(result.content!);
  };
  assert.deepEqual(
    await display(parseTarget(ENV), { width: 800, height: 600 }),
    { display_width: 800, display_height: 600 },
  );
  assert.deepEqual(await display(parseTarget(ENV)), {
    display_width: 1280,
    display_height: 800,
  });
  const port = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ENV, "http", String(port)],
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    const url = `http://127.0.0.1:${port}/mcp`;
    for (let i = 0; i < 100; i++) {
      const up = await fetch(url, { method: "GET" }).then(async (r) => {
        await r.body?.cancel();
        return true;
      }, () => false);
      if (up) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.deepEqual(
      await display({ url }, { width: 1024, height: 768 }),
      { display_width: 1024, display_height: 768 },
    );
  } finally {
    child.kill();
    await child.status;
  }
});

import assert from "node:assert/strict";
import {
  evaluationOfText,
  promptArguments,
  scenariosOfPrompts,
  setupOfPrompt,
} from "./scenario_wire.ts";

Deno.test("scenariosOfPrompts() keeps only the prompts named {env}:…, without the prefix", () => {
  assert.deepEqual(
    scenariosOfPrompts([
      { name: "game:guess", description: "Guess", arguments: [{ name: "n" }] },
      { name: "help" },
      { name: "other:guess" },
    ], "game"),
    [{ name: "guess", description: "Guess", arguments: [{ name: "n" }] }],
  );
});

Deno.test("promptArguments() sends strings as they are and anything else as JSON", () => {
  assert.deepEqual(promptArguments({ a: "x", b: 7, c: { d: [1] } }), {
    a: "x",
    b: "7",
    c: '{"d":[1]}',
  });
});

Deno.test("setupOfPrompt() reads the tool filters, computer environment and network of _meta, and ignores values of the wrong type", () => {
  assert.deepEqual(
    setupOfPrompt({
      messages: [],
      _meta: {
        exclude_tools: ["secret"],
        allowed_tools: ["look"],
        computer_environment: "browser",
        network: "bridge",
      },
    }),
    {
      messages: [],
      exclude: ["secret"],
      allowed: ["look"],
      computerEnvironment: "browser",
      network: "bridge",
    },
  );
  assert.deepEqual(
    setupOfPrompt({ messages: [], _meta: { exclude_tools: "x", network: 1 } }),
    { messages: [], exclude: [], allowed: undefined },
  );
});

Deno.test("evaluationOfText() refuses what is not a JSON object with a finite reward, unless evaluation failed", () => {
  assert.equal(
    evaluationOfText('{"reward": 0.5, "done": true}', "s").reward,
    0.5,
  );
  assert.throws(
    () => evaluationOfText("nope", "s"),
    /^EnvironmentError: The evaluation of "s" is not JSON: nope$/,
  );
  assert.throws(() => evaluationOfText("[1]", "s"), /is not a JSON object/);
  assert.throws(
    () => evaluationOfText('{"reward": null}', "s"),
    /The reward of "s" is not a finite number: null/,
  );
  assert.deepEqual(evaluationOfText('{"isError": true, "content": "x"}', "s"), {
    isError: true,
    content: "x",
  });
});

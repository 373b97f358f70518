import assert from "node:assert/strict";
import {
  doneText,
  normalise,
  planComputerUse,
  spellKey,
  turnActions,
} from "./computer_use.ts";

const SENTENCE =
  'The screen is 1280x800. Click the text box at (412, 300), type "hello", then press Enter.';

Deno.test("planComputerUse() reads the contract's sentence: a screenshot, then click, type and key in order", () => {
  assert.deepEqual(planComputerUse(SENTENCE, undefined, "anthropic"), {
    width: 1280,
    height: 800,
    actions: [
      { type: "screenshot" },
      { type: "click", x: 412, y: 300 },
      { type: "type", text: "hello" },
      { type: "key", keys: ["enter"] },
    ],
    confirmAt: undefined,
  });
});

Deno.test("planComputerUse() is case-insensitive and reads ×, curly quotes, double clicks, combinations and [confirm]", () => {
  const plan = planComputerUse(
    "[CONFIRM] SCREEN IS 800 × 600. DOUBLE-CLICK the word at ( 10 , 20 ); " +
      "then Type “two words” and PRESS Ctrl+A, press the Return key, click (1,2).",
    undefined,
    "responses",
  );
  assert.deepEqual(plan, {
    width: 800,
    height: 600,
    actions: [
      { type: "screenshot" },
      { type: "double_click", x: 10, y: 20 },
      { type: "type", text: "two words" },
      { type: "key", keys: ["ctrl", "a"] },
      { type: "key", keys: ["enter"] },
      { type: "click", x: 1, y: 2 },
    ],
    confirmAt: 1,
  });
});

Deno.test("planComputerUse() takes the tool's screen, else 1920×1080, and needs at least one instruction", () => {
  assert.deepEqual(
    planComputerUse("click (5, 6)", { width: 1024, height: 768 }, "chat")
      ?.width,
    1024,
  );
  const fallback = planComputerUse("press tab", undefined, "chat");
  assert.equal(fallback?.width, 1920);
  assert.equal(fallback?.height, 1080);
  assert.equal(
    planComputerUse("The screen is 1280x800. Look around.", undefined, "chat"),
    undefined,
  );
  assert.equal(planComputerUse("hello", undefined, "gemini"), undefined);
});

Deno.test("planComputerUse() for Gemini skips the screenshot, folds click + type and doubles a double click", () => {
  assert.deepEqual(planComputerUse(SENTENCE, undefined, "gemini")?.actions, [
    { type: "type", text: "hello", at: { x: 412, y: 300 } },
    { type: "key", keys: ["enter"] },
  ]);
  const plan = planComputerUse(
    '[confirm] double-click (4, 5), press ctrl+c, type "x"',
    undefined,
    "gemini",
  );
  assert.deepEqual(plan?.actions, [
    { type: "click", x: 4, y: 5 },
    { type: "click", x: 4, y: 5 },
    { type: "key", keys: ["ctrl", "c"] },
    { type: "type", text: "x", at: { x: 4, y: 5 } },
  ]);
  assert.equal(plan?.confirmAt, 0);
});

Deno.test("planComputerUse() reads a hostile prompt quickly and caps the steps", () => {
  const started = performance.now();
  const plan = planComputerUse(
    "click ".repeat(15_000) + "(1, 2) " + "press a ".repeat(1_000),
    undefined,
    "chat",
  );
  assert.ok(performance.now() - started < 2000);
  assert.ok(plan && plan.actions.length <= 201);
});

Deno.test("normalise() maps agent pixels to Gemini's 0–999 grid and back within a pixel", () => {
  assert.equal(normalise(412, 1280), 322);
  assert.equal(normalise(300, 800), 375);
  assert.equal(normalise(0, 1280), 0);
  assert.equal(normalise(1279, 1280), 999);
  for (let x = 0; x < 1280; x += 7) {
    const back = Math.floor((normalise(x, 1280) / 1000) * 1280);
    assert.ok(Math.abs(back - x) <= 1, `x=${x} came back as ${back}`);
  }
});

Deno.test("spellKey() spells keys per convention", () => {
  assert.deepEqual(
    ["enter", "ctrl", "a", "f5", "pageup", "meta"].map((
      key,
    ) => [
      spellKey(key, "xdotool"),
      spellKey(key, "openai"),
      spellKey(key, "gemini"),
    ]),
    [
      ["Return", "ENTER", "Enter"],
      ["ctrl", "CTRL", "Control"],
      ["a", "A", "A"],
      ["F5", "F5", "F5"],
      ["Page_Up", "PAGEUP", "PageUp"],
      ["super", "CMD", "Meta"],
    ],
  );
});

Deno.test("doneText() starts with Done and says what was done", () => {
  const plan = planComputerUse(SENTENCE, undefined, "anthropic")!;
  assert.equal(
    doneText(plan.actions),
    'Done. I clicked (412, 300), typed "hello" and pressed Enter.',
  );
  assert.equal(doneText([{ type: "screenshot" }]), "Done.");
});

Deno.test("planComputerUse() reads zoom regions only where the tool can zoom", () => {
  const text =
    "Zoom into the form at (0, 0, 640, 400), then click it at (10, 20).";
  assert.deepEqual(
    planComputerUse(text, undefined, "anthropic", { zoom: true })?.actions,
    [
      { type: "screenshot" },
      { type: "zoom", region: [0, 0, 640, 400] },
      { type: "click", x: 10, y: 20 },
    ],
  );
  assert.deepEqual(
    planComputerUse(text, undefined, "responses")?.actions.map((action) =>
      action.type
    ),
    ["screenshot", "click"],
  );
  assert.equal(
    planComputerUse("Zoom into (0, 0, 5, 5).", undefined, "gemini"),
    undefined,
  );
});

Deno.test("turnActions() plays one action per turn, or a screenshot then the rest batched, a safety check starting its own turn", () => {
  const plan = planComputerUse(
    'Click (1, 2), type "a", press Enter. [confirm]',
    undefined,
    "responses",
  )!;
  const types = (done: number, batched: boolean) =>
    turnActions(plan, done, batched).map((action) => action.type);
  assert.deepEqual(types(0, false), ["screenshot"]);
  assert.deepEqual(types(1, false), ["click"]);
  assert.deepEqual(types(0, true), ["screenshot"]);
  // The click carries the check (confirmAt 1): it starts the batch.
  assert.deepEqual(types(1, true), ["click", "type", "key"]);
  assert.deepEqual(types(4, true), []);
  const unconfirmed = { ...plan, confirmAt: 2 };
  assert.deepEqual(
    turnActions(unconfirmed, 1, true).map((action) => action.type),
    ["click"],
  );
  assert.deepEqual(
    turnActions(unconfirmed, 2, true).map((action) => action.type),
    ["type", "key"],
  );
});

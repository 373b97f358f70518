/**
 * Every native computer action of each convention, mapped to calls of the
 * environment's `computer` tool (contract §1), and the bad ones answered with
 * an error the model reads.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  claudeComputerPlan,
  type ComputerPlan,
  conventionForRoutes,
  geminiComputerPlan,
  parseConvention,
  responsesComputerPlan,
} from "../eval/mod.ts";
import type { ClaudePointer } from "../eval/agents/claude_computer.ts";

type Json = Record<string, unknown>;

const calls = (plan: ComputerPlan): Json[] => {
  assert.ok("calls" in plan, JSON.stringify(plan));
  return plan.calls;
};
const error = (plan: ComputerPlan): string => {
  assert.ok("error" in plan, JSON.stringify(plan));
  return plan.error;
};

Deno.test("the convention follows the model's routes, and --convention takes only known names", () => {
  assert.equal(conventionForRoutes(["chat", "messages"]), "messages");
  assert.equal(conventionForRoutes(["responses"]), "responses");
  assert.equal(conventionForRoutes(["chat", "responses"]), "chat");
  assert.equal(conventionForRoutes(["gemini"]), "gemini");
  assert.equal(conventionForRoutes(["chat"]), "chat");
  assert.equal(parseConvention("gemini"), "gemini");
  assert.throws(() => parseConvention("grpc"), /Unknown convention "grpc"/);
});

Deno.test("Claude's computer actions map to the computer tool", () => {
  const map = (input: Json, pointer: ClaudePointer = {}) =>
    calls(claudeComputerPlan(input, pointer));
  const at = { coordinate: [10, 20] };
  assert.deepEqual(map({ action: "screenshot" }), [{ action: "screenshot" }]);
  assert.deepEqual(map({ action: "cursor_position" }), [{
    action: "cursor_position",
  }]);
  for (
    const [action, button] of [
      ["left_click", "left"],
      ["right_click", "right"],
      ["middle_click", "middle"],
    ]
  ) {
    assert.deepEqual(map({ action, ...at }), [
      { action: "click", x: 10, y: 20, button },
    ]);
  }
  assert.deepEqual(map({ action: "double_click", ...at }), [
    { action: "double_click", x: 10, y: 20 },
  ]);
  assert.deepEqual(map({ action: "triple_click", ...at }), [
    { action: "triple_click", x: 10, y: 20 },
  ]);
  assert.deepEqual(map({ action: "mouse_move", ...at }), [
    { action: "move", x: 10, y: 20 },
  ]);
  assert.deepEqual(
    map({ action: "left_click_drag", start_coordinate: [1, 2], ...at }),
    [{ action: "drag", path: [{ x: 1, y: 2 }, { x: 10, y: 20 }] }],
  );
  assert.deepEqual(
    map({
      action: "scroll",
      ...at,
      scroll_direction: "up",
      scroll_amount: 5,
    }),
    [{ action: "scroll", x: 10, y: 20, scroll_x: 0, scroll_y: -5 }],
  );
  assert.deepEqual(
    map({ action: "scroll", scroll_direction: "right" }),
    [{ action: "scroll", scroll_x: 3, scroll_y: 0 }],
  );
  assert.deepEqual(map({ action: "type", text: "hi" }), [
    { action: "type", text: "hi" },
  ]);
  assert.deepEqual(map({ action: "key", text: "ctrl+a Page_Down" }), [
    { action: "key", keys: ["ctrl", "a"] },
    { action: "key", keys: ["pagedown"] },
  ]);
  assert.deepEqual(map({ action: "hold_key", text: "shift", duration: 1.5 }), [
    { action: "hold_key", keys: ["shift"], duration_ms: 1500 },
  ]);
  assert.deepEqual(map({ action: "wait", duration: 2 }), [
    { action: "wait", duration_ms: 2000 },
  ]);
});

Deno.test("keys held during a click, drag or scroll map to hold_keys (Claude's text, the Responses keys)", () => {
  assert.deepEqual(
    calls(claudeComputerPlan({
      action: "left_click",
      coordinate: [10, 20],
      text: "ctrl+shift",
    }, {})),
    [{
      action: "click",
      x: 10,
      y: 20,
      button: "left",
      hold_keys: ["ctrl", "shift"],
    }],
  );
  assert.deepEqual(
    calls(claudeComputerPlan({
      action: "scroll",
      coordinate: [10, 20],
      scroll_direction: "down",
      scroll_amount: 2,
      text: "shift",
    }, {})),
    [{
      action: "scroll",
      x: 10,
      y: 20,
      scroll_x: 0,
      scroll_y: 2,
      hold_keys: ["shift"],
    }],
  );
  assert.deepEqual(
    calls(claudeComputerPlan({
      action: "left_click_drag",
      start_coordinate: [1, 2],
      coordinate: [3, 4],
      text: "alt",
    }, {})),
    [{
      action: "drag",
      path: [{ x: 1, y: 2 }, { x: 3, y: 4 }],
      hold_keys: ["alt"],
    }],
  );
  assert.deepEqual(
    calls(
      responsesComputerPlan({ type: "click", x: 5, y: 6, keys: ["SHIFT"] }),
    ),
    [{ action: "click", x: 5, y: 6, button: "left", hold_keys: ["SHIFT"] }],
  );
  assert.deepEqual(
    calls(responsesComputerPlan({
      type: "drag",
      path: [{ x: 1, y: 1 }, { x: 2, y: 2 }],
      keys: ["CTRL"],
    })),
    [{
      action: "drag",
      path: [{ x: 1, y: 1 }, { x: 2, y: 2 }],
      hold_keys: ["CTRL"],
    }],
  );
});

Deno.test("Claude's zoom and repeated keys map to the computer tool (computer_20251124, the toolset's members)", () => {
  assert.deepEqual(
    calls(
      claudeComputerPlan({ action: "zoom", region: [10, 20, 330.4, 220] }, {}),
    ),
    [{ action: "zoom", region: [10, 20, 330, 220] }],
  );
  assert.deepEqual(
    calls(claudeComputerPlan({ action: "key", text: "Tab", repeat: 3 }, {})),
    [
      { action: "key", keys: ["Tab"] },
      { action: "key", keys: ["Tab"] },
      { action: "key", keys: ["Tab"] },
    ],
  );
});

Deno.test("Claude's left_mouse_down, mouse_move and left_mouse_up become one drag along the path", () => {
  const pointer: ClaudePointer = {};
  const step = (input: Json) => calls(claudeComputerPlan(input, pointer));
  step({ action: "mouse_move", coordinate: [5, 5] });
  assert.deepEqual(step({ action: "left_mouse_down" }), [{
    action: "screenshot",
  }]);
  step({ action: "mouse_move", coordinate: [50, 5] });
  step({ action: "mouse_move", coordinate: [50, 60] });
  assert.deepEqual(step({ action: "left_mouse_up" }), [{
    action: "drag",
    path: [{ x: 5, y: 5 }, { x: 50, y: 5 }, { x: 50, y: 60 }],
  }]);
  // A press and release in place is a click.
  step({ action: "left_mouse_down" });
  assert.deepEqual(step({ action: "left_mouse_up" }), [
    { action: "click", x: 50, y: 60, button: "left" },
  ]);
});

Deno.test("Claude's bad computer actions are errors the model reads", () => {
  const fail = (input: Json) => error(claudeComputerPlan(input, {}));
  assert.match(fail({ action: "left_click" }), /needs a "coordinate"/);
  assert.match(
    fail({ action: "left_click", coordinate: ["a", 1] }),
    /must be \[x, y\]/,
  );
  assert.match(
    fail({ action: "left_click", coordinate: [1, 1], text: "shift ctrl" }),
    /left_click holds one key combination in "text"/,
  );
  assert.match(fail({ action: "left_mouse_down" }), /mouse_move/);
  assert.match(fail({ action: "left_mouse_up" }), /without left_mouse_down/);
  assert.match(fail({ action: "scroll" }), /scroll_direction/);
  assert.match(fail({ action: "key" }), /needs "text"/);
  assert.match(fail({ action: "zoom" }), /zoom needs "region"/);
  assert.match(
    fail({ action: "zoom", region: [1, 2, "x", 4] }),
    /zoom needs "region"/,
  );
  assert.match(
    fail({ action: "key", text: "a", repeat: 1000 }),
    /"repeat" must be from 1 to 100/,
  );
  assert.match(
    fail({ action: "teleport" }),
    /Unknown computer action "teleport"/,
  );
});

Deno.test("Responses computer actions map to the computer tool", () => {
  const map = (action: Json) => calls(responsesComputerPlan(action));
  assert.deepEqual(map({ type: "screenshot" }), [{ action: "screenshot" }]);
  assert.deepEqual(map({ type: "click", x: 3, y: 4, button: "right" }), [
    { action: "click", x: 3, y: 4, button: "right" },
  ]);
  assert.deepEqual(map({ type: "click", x: 3, y: 4, button: "wheel" }), [
    { action: "click", x: 3, y: 4, button: "middle" },
  ]);
  assert.deepEqual(map({ type: "click", x: 3, y: 4, button: "back" }), [
    { action: "key", keys: ["alt", "left"] },
  ]);
  assert.deepEqual(map({ type: "double_click", x: 3, y: 4 }), [
    { action: "double_click", x: 3, y: 4 },
  ]);
  assert.deepEqual(
    map({
      type: "drag",
      path: [{ x: 1, y: 1 }, { x: 2, y: 2 }, { x: 3, y: 9 }],
    }),
    [{
      action: "drag",
      path: [{ x: 1, y: 1 }, { x: 2, y: 2 }, { x: 3, y: 9 }],
    }],
  );
  assert.deepEqual(map({ type: "keypress", keys: ["CTRL", "A"] }), [
    { action: "key", keys: ["CTRL", "A"] },
  ]);
  assert.deepEqual(map({ type: "move", x: 7, y: 8 }), [
    { action: "move", x: 7, y: 8 },
  ]);
  assert.deepEqual(
    map({ type: "scroll", x: 7, y: 8, scroll_x: 0, scroll_y: -250 }),
    [{ action: "scroll", x: 7, y: 8, scroll_x: 0, scroll_y: -3 }],
  );
  assert.deepEqual(map({ type: "type", text: "hi" }), [
    { action: "type", text: "hi" },
  ]);
  assert.deepEqual(map({ type: "wait" }), [
    { action: "wait", duration_ms: 1000 },
  ]);
  assert.match(error(responsesComputerPlan({ type: "click" })), /needs "x"/);
  assert.match(
    error(responsesComputerPlan({ type: "drag", path: [{ x: 1, y: 1 }] })),
    /at least two/,
  );
  assert.match(
    error(responsesComputerPlan({ type: "teleport" })),
    /Unknown computer action/,
  );
});

Deno.test("Gemini's computer functions map to the computer tool, coordinates denormalised from 0–999", () => {
  const screen = { width: 1000, height: 500 };
  const map = (name: string, args: Json = {}) =>
    calls(geminiComputerPlan(name, args, screen));
  assert.deepEqual(map("open_web_browser"), [{ action: "screenshot" }]);
  assert.deepEqual(map("wait_5_seconds"), [{
    action: "wait",
    duration_ms: 5000,
  }]);
  assert.deepEqual(map("go_back"), [{ action: "key", keys: ["alt", "left"] }]);
  assert.deepEqual(map("go_forward"), [
    { action: "key", keys: ["alt", "right"] },
  ]);
  assert.deepEqual(map("navigate", { url: "http://x.test/" }), [
    { action: "key", keys: ["ctrl", "l"] },
    { action: "type", text: "http://x.test/" },
    { action: "key", keys: ["enter"] },
  ]);
  assert.deepEqual(map("click_at", { x: 500, y: 500 }), [
    { action: "click", x: 500, y: 250, button: "left" },
  ]);
  assert.deepEqual(map("click_at", { x: 999, y: 0 }), [
    { action: "click", x: 999, y: 0, button: "left" },
  ]);
  assert.deepEqual(map("hover_at", { x: 100, y: 100 }), [
    { action: "move", x: 100, y: 50 },
  ]);
  assert.deepEqual(
    map("type_text_at", {
      x: 100,
      y: 100,
      text: "w",
      press_enter: false,
      clear_before_typing: false,
    }),
    [
      { action: "click", x: 100, y: 50, button: "left" },
      { action: "type", text: "w" },
    ],
  );
  assert.deepEqual(map("key_combination", { keys: "Control+A" }), [
    { action: "key", keys: ["Control", "A"] },
  ]);
  assert.deepEqual(map("scroll_document", { direction: "down" }), [
    { action: "scroll", x: 500, y: 250, scroll_x: 0, scroll_y: 10 },
  ]);
  assert.deepEqual(
    map("scroll_at", { x: 200, y: 200, direction: "left", magnitude: 400 }),
    [{ action: "scroll", x: 200, y: 100, scroll_x: -4, scroll_y: 0 }],
  );
  assert.deepEqual(
    map("drag_and_drop", {
      x: 0,
      y: 0,
      destination_x: 500,
      destination_y: 998,
    }),
    [{ action: "drag", path: [{ x: 0, y: 0 }, { x: 500, y: 499 }] }],
  );
  const fail = (name: string, args: Json = {}) =>
    error(geminiComputerPlan(name, args, screen));
  assert.match(fail("search"), /search is not available/);
  assert.match(fail("click_at", { x: 1000, y: 5 }), /between 0 and 999/);
  assert.match(fail("navigate"), /needs a "url"/);
  assert.match(fail("scroll_document", { direction: "in" }), /direction/);
  assert.match(fail("fly_to"), /Unknown computer function/);
});

Deno.test("a scroll direction that names an Object member (constructor, toString) is an error the model reads, in Claude's and Gemini's actions", () => {
  const display = { width: 1000, height: 500 };
  for (const direction of ["constructor", "toString", "__proto__"]) {
    assert.match(
      error(geminiComputerPlan("scroll_document", { direction }, display)),
      /needs "direction"/,
    );
    assert.match(
      error(
        claudeComputerPlan(
          { action: "scroll", coordinate: [1, 1], scroll_direction: direction },
          {},
        ),
      ),
      /scroll_direction/,
    );
  }
  for (const action of ["constructor", "toString"]) {
    assert.match(
      error(claudeComputerPlan({ action, coordinate: [1, 1] }, {})),
      /Unknown computer action/,
    );
  }
  assert.deepEqual(
    calls(claudeComputerPlan({ action: "key", text: "ctrl+constructor" }, {})),
    [{ action: "key", keys: ["ctrl", "constructor"] }],
    "the key goes on by its name, for the computer tool to refuse",
  );
});

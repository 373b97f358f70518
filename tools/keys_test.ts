import assert from "node:assert/strict";
import { keysyms } from "./keys.ts";

Deno.test("keysyms() maps the aliases of each provider to xdotool keysyms", () => {
  const cases: [string[], string[]][] = [
    [["ctrl", "a"], ["ctrl", "a"]],
    [["Control+A"], ["ctrl", "a"]],
    [["CTRL", "SHIFT", "T"], ["ctrl", "shift", "t"]],
    [["ctrl+a"], ["ctrl", "a"]],
    [["cmd", "c"], ["super", "c"]],
    [["META"], ["super"]],
    [["win"], ["super"]],
    [["Super_L"], ["super"]],
    [["alt", "Tab"], ["alt", "Tab"]],
    [["ENTER"], ["Return"]],
    [["Return"], ["Return"]],
    [["esc"], ["Escape"]],
    [["ESCAPE"], ["Escape"]],
    [["space"], ["space"]],
    [[" "], ["space"]],
    [["backspace"], ["BackSpace"]],
    [["BackSpace"], ["BackSpace"]],
    [["DELETE"], ["Delete"]],
    [["ArrowUp"], ["Up"]],
    [["down"], ["Down"]],
    [["ARROWLEFT"], ["Left"]],
    [["right"], ["Right"]],
    [["PageUp"], ["Page_Up"]],
    [["Page_Down"], ["Page_Down"]],
    [["home"], ["Home"]],
    [["END"], ["End"]],
    [["f1"], ["F1"]],
    [["F12"], ["F12"]],
    [["A"], ["A"]],
    [["7"], ["7"]],
    [["+"], ["plus"]],
    [["ctrl++"], ["ctrl", "plus"]],
    [["ctrl", "-"], ["ctrl", "minus"]],
    [["/"], ["slash"]],
    [["shift+Tab"], ["shift", "Tab"]],
    [["KP_5"], ["KP_5"]],
    [["VolumeUp"], ["XF86AudioRaiseVolume"]],
  ];
  for (const [input, expected] of cases) {
    assert.deepEqual(keysyms(input), expected, JSON.stringify(input));
  }
});

Deno.test("keysyms() refuses unknown and empty keys, naming them", () => {
  assert.throws(() => keysyms(["hyperdrive"]), /Unknown key "hyperdrive"/);
  assert.throws(() => keysyms([]), /key list is empty/);
  assert.throws(() => keysyms(["ctrl+"]), /Unknown key|empty key name/);
  assert.throws(() => keysyms([""]), /empty key name/);
  assert.throws(() => keysyms(["ctrl; rm -rf /"]), /Unknown key/);
});

Deno.test("keysyms() refuses names of Object's own members (constructor, __proto__, toString) as unknown keys", () => {
  for (const name of ["constructor", "__proto__", "toString", "valueOf"]) {
    assert.throws(() => keysyms([name]), {
      name: "RangeError",
      message: `Unknown key "${name}"`,
    });
    assert.throws(() => keysyms([`ctrl+${name}`]), RangeError);
  }
});

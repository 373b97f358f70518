import assert from "node:assert/strict";
import { planFromPrompt } from "./agent.ts";

Deno.test("planFromPrompt() reads the screen size and the steps in order", () => {
  assert.deepEqual(
    planFromPrompt(
      'The screen is 1024x640. Click the text box at (411, 339), type "harbor-7", then press Enter.',
    ),
    {
      screen: { width: 1024, height: 640 },
      steps: [
        { action: "click", x: 411, y: 339 },
        { action: "type", text: "harbor-7" },
        { action: "key", keys: ["Enter"] },
      ],
    },
  );
});

Deno.test("planFromPrompt() knows double-clicks and key combinations, and works without a size", () => {
  assert.deepEqual(
    planFromPrompt("Double-click the icon at (5, 6) and press ctrl+a."),
    {
      steps: [
        { action: "double_click", x: 5, y: 6 },
        { action: "key", keys: ["ctrl+a"] },
      ],
    },
  );
  assert.deepEqual(planFromPrompt("Nothing to do."), { steps: [] });
});

import assert from "node:assert/strict";
import { displayRequest, isDisplayTool } from "./display.ts";

Deno.test("displayRequest takes the display keys of hello params or a _meta, and nothing else", () => {
  assert.deepEqual(
    displayRequest({ display_width: 1024, display_height: 640, run_id: "r" }),
    { display_width: 1024, display_height: 640 },
  );
  assert.deepEqual(displayRequest({ display_width: 800 }), {
    display_width: 800,
    display_height: undefined,
  });
  assert.equal(displayRequest({ run_id: "r" }), undefined);
  assert.equal(displayRequest(null), undefined);
  assert.ok(isDisplayTool({ configure() {} }));
  assert.ok(!isDisplayTool({ configure: 1 }));
});

import assert from "node:assert/strict";
import { MCPServer } from "../mcp/mod.ts";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { initializeMessage, rawPeer } from "../tests/_mcp_client.ts";
import { ComputerTool } from "./computer.ts";
import type { ComputerInput } from "./computer_input.ts";
import { agentSize, scaleCoordinate } from "./display.ts";
import {
  type Executor,
  type RecordedAction,
  RecordingExecutor,
} from "./executor.ts";
import { pngSize } from "./png.ts";

function computer(real = { width: 1920, height: 1200 }) {
  const screen = new RecordingExecutor({ size: real });
  const tool = new ComputerTool({ executor: screen, settleMs: 0 });
  return { screen, tool };
}

function textOf(result: CallToolResult): string {
  const first = result.content[0];
  assert.equal(first.type, "text");
  return (first as { text: string }).text;
}

function imageSize(result: CallToolResult) {
  const image = result.content.find((item) => item.type === "image") as
    | { data: string; mimeType: string }
    | undefined;
  assert.ok(image, "expected an image item");
  assert.equal(image.mimeType, "image/png");
  const bytes = Uint8Array.from(atob(image.data), (c) => c.charCodeAt(0));
  return pngSize(bytes);
}

/** The actions other than screenshots. */
function inputs(actions: RecordedAction[]): RecordedAction[] {
  return actions.filter((action) => action.action !== "screenshot");
}

Deno.test("agentSize() reads display_width/display_height, else 1920x1080", () => {
  assert.deepEqual(agentSize(undefined), { width: 1920, height: 1080 });
  assert.deepEqual(agentSize({}), { width: 1920, height: 1080 });
  assert.deepEqual(agentSize({ display_width: 1280, display_height: 800 }), {
    width: 1280,
    height: 800,
  });
  assert.deepEqual(agentSize({ display_width: "1024", display_height: 768 }), {
    width: 1024,
    height: 768,
  });
  assert.throws(
    () => agentSize({ display_width: -5 }),
    /display_width -5: expected an integer from 1 to 8192/,
  );
  assert.throws(() => agentSize({ display_height: 1.5 }), RangeError);
  assert.throws(() => agentSize({ display_width: 100_000 }), RangeError);
});

Deno.test("scaleCoordinate() maps pixel centres and keeps the edges inside", () => {
  assert.equal(scaleCoordinate(0, 1280, 1920), 0);
  assert.equal(scaleCoordinate(640, 1280, 1920), 960);
  assert.equal(scaleCoordinate(1279, 1280, 1920), 1919);
  assert.equal(scaleCoordinate(1919, 1920, 1280), 1279);
  assert.equal(scaleCoordinate(960, 1920, 1280), 640);
  // Every agent pixel round-trips when the real screen is larger.
  for (let x = 0; x < 1280; x++) {
    const real = scaleCoordinate(x, 1280, 1920);
    assert.equal(scaleCoordinate(real, 1920, 1280), x);
  }
});

Deno.test("ComputerTool scales agent coordinates to the real screen and back", async () => {
  const { screen, tool } = computer({ width: 1920, height: 1200 });
  tool.configure({ display_width: 1280, display_height: 800 });
  await tool.call({ action: "click", x: 640, y: 400, screenshot: false });
  await tool.call({ action: "click", x: 0, y: 0, screenshot: false });
  await tool.call({ action: "click", x: 1279, y: 799, screenshot: false });
  assert.deepEqual(
    inputs(screen.actions).map((a) => a.action === "click" && a.at),
    [{ x: 960, y: 600 }, { x: 0, y: 0 }, { x: 1919, y: 1199 }],
  );
  await screen.move({ x: 1500, y: 300 }); // the pointer moved by someone else
  const where = await tool.call({ action: "cursor_position" });
  assert.equal(textOf(where), '{"x":1000,"y":200}');
  assert.deepEqual(where.structuredContent, { x: 1000, y: 200 });
});

Deno.test("ComputerTool scales up when the agent's screen is larger than the real one", async () => {
  const { screen, tool } = computer({ width: 800, height: 600 });
  tool.configure({ display_width: 1600, display_height: 1200 });
  await tool.call({ action: "move", x: 1599, y: 601, screenshot: false });
  assert.deepEqual(inputs(screen.actions), [{
    action: "move",
    to: { x: 799, y: 300 },
  }]);
});

Deno.test("ComputerTool screenshots have the agent's size: 1920x1080 by default, the configured one after", async () => {
  const { screen, tool } = computer({ width: 1280, height: 800 });
  assert.deepEqual(tool.agentSize, { width: 1920, height: 1080 });
  const first = await tool.call({ action: "screenshot" });
  assert.deepEqual(imageSize(first), { width: 1920, height: 1080 });
  tool.configure({ display_width: 1024, display_height: 640 });
  const second = await tool.call({ action: "click", x: 10, y: 10 });
  assert.equal(textOf(second), "Clicked left at (10, 10)");
  assert.deepEqual(imageSize(second), { width: 1024, height: 640 });
  assert.deepEqual(screen.actions.filter((a) => a.action === "screenshot"), [
    { action: "screenshot", size: { width: 1920, height: 1080 } },
    { action: "screenshot", size: { width: 1024, height: 640 } },
  ]);
  const quiet = await tool.call({
    action: "move",
    x: 5,
    y: 5,
    screenshot: false,
  });
  assert.deepEqual(quiet.content.map((item) => item.type), ["text"]);
});

Deno.test("ComputerTool carries out every action", async () => {
  const { screen, tool } = computer({ width: 1000, height: 1000 });
  tool.configure({ display_width: 500, display_height: 500 });
  const calls = [
    { action: "click", x: 10, y: 20, button: "right" },
    { action: "double_click", x: 10, y: 20 },
    { action: "triple_click", x: 10, y: 20, button: "middle" },
    { action: "move", x: 100, y: 100 },
    {
      action: "drag",
      path: [{ x: 1, y: 2 }, { x: 50, y: 60 }, { x: 99, y: 98 }],
    },
    { action: "scroll", x: 250, y: 250, scroll_y: 3 },
    { action: "scroll", scroll_x: -2 },
    { action: "type", text: "-hello world" },
    { action: "key", keys: ["Control+A"] },
    { action: "key", keys: ["ENTER"] },
    { action: "hold_key", keys: ["shift"], duration_ms: 500 },
    { action: "wait", duration_ms: 5 },
  ] satisfies ComputerInput[];
  const texts = [];
  for (const call of calls) {
    const result = await tool.call({ ...call, screenshot: false });
    assert.equal(result.isError, undefined, textOf(result));
    texts.push(textOf(result));
  }
  assert.deepEqual(texts, [
    "Clicked right at (10, 20)",
    "Double-clicked left at (10, 20)",
    "Triple-clicked middle at (10, 20)",
    "Moved the pointer to (100, 100)",
    "Dragged from (1, 2) to (99, 98)",
    "Scrolled 0, 3 at (250, 250)",
    "Scrolled -2, 0",
    'Typed "-hello world"',
    "Pressed ctrl+a",
    "Pressed Return",
    "Held shift for 500 ms",
    "Waited 5 ms",
  ]);
  assert.deepEqual(screen.actions, [
    { action: "click", at: { x: 21, y: 41 }, button: "right", count: 1 },
    { action: "click", at: { x: 21, y: 41 }, button: "left", count: 2 },
    { action: "click", at: { x: 21, y: 41 }, button: "middle", count: 3 },
    { action: "move", to: { x: 201, y: 201 } },
    {
      action: "drag",
      path: [{ x: 3, y: 5 }, { x: 101, y: 121 }, { x: 199, y: 197 }],
    },
    { action: "scroll", at: { x: 501, y: 501 }, dx: 0, dy: 3 },
    { action: "scroll", dx: -2, dy: 0 },
    { action: "type", text: "-hello world" },
    { action: "key", keys: ["ctrl", "a"] },
    { action: "key", keys: ["Return"] },
    { action: "hold_key", keys: ["shift"], durationMs: 500 },
  ]);
  // The scroll at (250, 250) left the pointer there.
  const where = await tool.call({
    action: "cursor_position",
    screenshot: false,
  });
  assert.deepEqual(where.structuredContent, { x: 250, y: 250 });
});

Deno.test("ComputerTool answers bad input with isError and one line, doing nothing", async () => {
  const { screen, tool } = computer({ width: 1280, height: 800 });
  tool.configure({ display_width: 1280, display_height: 800 });
  const refusals: [Record<string, unknown>, RegExp][] = [
    [
      { action: "click", x: 1280, y: 5 },
      /Coordinate \(1280, 5\) is outside the 1280x800 screen/,
    ],
    [{ action: "click", x: -1, y: 5 }, /outside the 1280x800 screen/],
    [{ action: "click", x: 5 }, /Action "click" needs x and y/],
    [{ action: "move", x: Infinity, y: 5 }, /outside/],
    [
      { action: "drag", path: [{ x: 1, y: 1 }] },
      /needs a path of 2 to 100 points/,
    ],
    [{ action: "drag", path: [{ x: 1, y: 1 }, { x: 5000, y: 1 }] }, /outside/],
    [{ action: "scroll", x: 5, y: 5 }, /needs scroll_x or scroll_y/],
    [{ action: "scroll", scroll_y: 500 }, /from -50 to 50/],
    [{ action: "type" }, /needs text/],
    [{ action: "type", text: "a\0b" }, /NUL/],
    [{ action: "type", text: "x".repeat(10_001) }, /at most 10000/],
    [{ action: "key" }, /needs keys/],
    [{ action: "key", keys: ["ctrl", "warp"] }, /Unknown key "warp"/],
    [{ action: "hold_key", keys: ["a"] }, /needs duration_ms/],
    [
      { action: "hold_key", keys: ["a"], duration_ms: 60_000 },
      /duration_ms must be from 0 to 30000/,
    ],
    [
      { action: "wait", duration_ms: -1 },
      /duration_ms must be from 0 to 30000/,
    ],
    [
      { action: "teleport" },
      /Unknown action "teleport": expected one of screenshot, click/,
    ],
  ];
  for (const [input, message] of refusals) {
    // deno-lint-ignore no-explicit-any -- hostile input on purpose
    const result = await tool.call(input as any);
    assert.equal(result.isError, true, JSON.stringify(input));
    assert.match(textOf(result), message);
    assert.ok(!textOf(result).includes("\n"), "one line");
    assert.equal(result.content.length, 1, "no screenshot with an error");
  }
  assert.deepEqual(screen.actions, []);
});

Deno.test("ComputerTool reports a failing executor as isError, and a screenshot of the wrong size", async () => {
  const broken: Executor = Object.assign(new RecordingExecutor(), {
    click: () =>
      Promise.reject(new Error('"xdotool mousemove" failed with exit code 1')),
  });
  const tool = new ComputerTool({ executor: broken, settleMs: 0 });
  const failed = await tool.call({ action: "click", x: 1, y: 1 });
  assert.equal(failed.isError, true);
  assert.equal(textOf(failed), '"xdotool mousemove" failed with exit code 1');

  const liar: Executor = Object.assign(new RecordingExecutor(), {
    screenshot: () =>
      new RecordingExecutor().screenshot({ width: 10, height: 10 }),
  });
  const wrong = await new ComputerTool({ executor: liar, settleMs: 0 }).call({
    action: "screenshot",
  });
  assert.equal(wrong.isError, true);
  assert.match(textOf(wrong), /answered a 10x10 PNG instead of 1920x1080/);
});

Deno.test("ComputerTool's wait ends early when the request is cancelled", async () => {
  const { tool } = computer();
  const controller = new AbortController();
  const started = performance.now();
  const pending = tool.call(
    { action: "wait", duration_ms: 10_000, screenshot: false },
    // deno-lint-ignore no-explicit-any -- only the signal is read
    { signal: controller.signal } as any,
  );
  setTimeout(() => controller.abort(), 20);
  const result = await pending;
  assert.equal(result.isError, true);
  assert.equal(textOf(result), "The wait was cancelled");
  assert.ok(performance.now() - started < 2_000);
});

async function initializedPeer(mcp: MCPServer, meta?: Record<string, unknown>) {
  const peer = await rawPeer(mcp);
  await peer.send(initializeMessage(1, meta));
  await peer.response(1);
  await peer.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  return peer;
}

async function screenshotOverMcp(meta?: Record<string, unknown>) {
  const screen = new RecordingExecutor({ size: { width: 1280, height: 800 } });
  const computer = new ComputerTool({ executor: screen, settleMs: 0 });
  const mcp = new MCPServer({ name: "desktop-test" });
  mcp.addTool(computer);
  mcp.initialize((ctx) => {
    computer.configure(ctx.meta);
  });
  const peer = await initializedPeer(mcp, meta);
  try {
    await peer.send({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "computer", arguments: { action: "screenshot" } },
    });
    const answer = await peer.response(2) as unknown as {
      result: CallToolResult;
    };
    return imageSize(answer.result);
  } finally {
    await peer.close();
  }
}

Deno.test("over MCP the screenshot has the size of the initialize request's display_width/height", async () => {
  assert.deepEqual(
    await screenshotOverMcp({ display_width: 1024, display_height: 768 }),
    { width: 1024, height: 768 },
  );
});

Deno.test("over MCP without display_width/height the screenshot is 1920x1080", async () => {
  assert.deepEqual(await screenshotOverMcp(), { width: 1920, height: 1080 });
});

Deno.test("over MCP a bad action is refused by the input schema", async () => {
  const computer = new ComputerTool({
    executor: new RecordingExecutor(),
    settleMs: 0,
  });
  const mcp = new MCPServer({ name: "desktop-test" });
  mcp.addTool(computer);
  const peer = await initializedPeer(mcp);
  try {
    await peer.send({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "computer", arguments: { action: "teleport" } },
    });
    const answer = await peer.response(2) as unknown as {
      result?: CallToolResult;
      error?: { message: string };
    };
    const message = answer.error?.message ??
      (answer.result?.isError ? textOf(answer.result) : "");
    assert.match(message, /action/);
  } finally {
    await peer.close();
  }
});

Deno.test("ComputerTool zoom shows a region in agent pixels enlarged to fit the agent's screen, from the real screen's matching region", async () => {
  const { screen, tool } = computer({ width: 2560, height: 1600 });
  tool.configure({ display_width: 1280, display_height: 800 });
  const result = await tool.call({
    action: "zoom",
    region: [100, 50, 420, 250],
  });
  assert.equal(result.isError, undefined);
  assert.match(
    textOf(result),
    /Zoomed into \(100, 50\)–\(420, 250\), shown at 1280x800/,
  );
  assert.deepEqual(imageSize(result), { width: 1280, height: 800 });
  assert.deepEqual(screen.actions, [{
    action: "zoom",
    region: { x: 200, y: 100, width: 640, height: 400 },
    size: { width: 1280, height: 800 },
  }]);
  // A wide strip keeps its shape: as wide as the screen, a quarter as tall.
  const strip = await tool.call({ action: "zoom", region: [0, 0, 1280, 200] });
  assert.deepEqual(imageSize(strip), { width: 1280, height: 200 });
});

Deno.test("ComputerTool zoom refuses a region outside the screen, inside out, or missing, and a screen that cannot zoom", async () => {
  const { screen, tool } = computer({ width: 1280, height: 800 });
  tool.configure({ display_width: 1280, display_height: 800 });
  for (
    const region of [[0, 0, 1281, 10], [10, 10, 5, 20], [-1, 0, 5, 5]] as [
      number,
      number,
      number,
      number,
    ][]
  ) {
    const result = await tool.call({ action: "zoom", region });
    assert.equal(result.isError, true, JSON.stringify(region));
    assert.match(textOf(result), /must lie inside the 1280x800 screen/);
  }
  const missing = await tool.call({ action: "zoom" });
  assert.match(
    textOf(missing),
    /Action "zoom" needs region \[x1, y1, x2, y2\]/,
  );
  assert.deepEqual(screen.actions, []);
  const blind: Executor = Object.assign(new RecordingExecutor(), {
    screenshotRegion: undefined,
  });
  const plain = new ComputerTool({ executor: blind, settleMs: 0 });
  const refused = await plain.call({ action: "zoom", region: [0, 0, 10, 10] });
  assert.equal(refused.isError, true);
  assert.match(textOf(refused), /This screen cannot zoom/);
});

Deno.test("ComputerTool holds hold_keys down around a click, move, drag or scroll, releasing them when it fails; a screen that cannot hold keys says so first", async () => {
  const { screen, tool } = computer({ width: 1280, height: 800 });
  tool.configure({ display_width: 1280, display_height: 800 });
  const clicked = await tool.call({
    action: "click",
    x: 10,
    y: 20,
    hold_keys: ["Shift", "control"],
    screenshot: false,
  });
  assert.equal(textOf(clicked), "Clicked left at (10, 20), holding shift+ctrl");
  assert.deepEqual(screen.actions, [
    { action: "keys_down", keys: ["shift", "ctrl"] },
    { action: "click", at: { x: 10, y: 20 }, button: "left", count: 1 },
    { action: "keys_up", keys: ["shift", "ctrl"] },
  ]);
  // Bad input is refused before any key goes down.
  screen.actions.length = 0;
  const outside = await tool.call({
    action: "click",
    x: 5000,
    y: 1,
    hold_keys: ["shift"],
  });
  assert.equal(outside.isError, true);
  assert.deepEqual(screen.actions, []);
  // A failing action still releases the keys.
  const failing = Object.assign(new RecordingExecutor(), {
    drag: () => Promise.reject(new Error("xdotool died")),
  });
  const dragger = new ComputerTool({ executor: failing, settleMs: 0 });
  dragger.configure({ display_width: 1280, display_height: 800 });
  const dragged = await dragger.call({
    action: "drag",
    path: [{ x: 1, y: 1 }, { x: 2, y: 2 }],
    hold_keys: ["alt"],
  });
  assert.equal(dragged.isError, true);
  assert.deepEqual(failing.actions.map((a) => a.action), [
    "keys_down",
    "keys_up",
  ]);
  const stiff: Executor = Object.assign(new RecordingExecutor(), {
    keysDown: undefined,
  });
  const plain = new ComputerTool({ executor: stiff, settleMs: 0 });
  const refused = await plain.call({
    action: "scroll",
    scroll_y: 1,
    hold_keys: ["shift"],
  });
  assert.equal(refused.isError, true);
  assert.match(textOf(refused), /This screen cannot hold keys/);
});

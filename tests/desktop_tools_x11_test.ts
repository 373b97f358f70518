// The `computer` tool on a real desktop: Xvfb, xdotool, ImageMagick and
// Chromium showing a page that tells its own server where its parts are and
// what was clicked. Through an MCP client whose initialize request carries
// the display size (or none), the screenshot has the agent's size and a
// click the agent aims at a visible element lands on it, at several sizes.
import assert from "node:assert/strict";
import { MCPServer } from "../mcp/mod.ts";
import { ComputerTool, X11Executor } from "../tools/mod.ts";
import { startDesktop } from "../examples/desktop/desktop.ts";
import {
  elementCenter,
  type PageElement,
  type PageLayout,
} from "../examples/desktop/page_server.ts";
import { Client, InMemoryTransport } from "./_mcp_client.ts";
import {
  missingDesktopPrograms,
  pngSizeOf,
  sendInitializeMeta,
} from "./_desktop.ts";

const missing = missingDesktopPrograms("tests/desktop_tools_x11_test.ts");

type Result = {
  content: { type: string; text?: string; data?: string }[];
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
};

/** An MCP client of a server offering `computer` on `display`, initialized with `meta`. */
async function computerClient(
  display: string,
  meta: Record<string, unknown> | undefined,
) {
  const computer = new ComputerTool({
    executor: new X11Executor({ display }),
  });
  const mcp = new MCPServer({ name: "x11-test" });
  mcp.addTool(computer);
  mcp.initialize((ctx) => {
    computer.configure(ctx.meta);
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await mcp.createInstance().connect(serverSide);
  const client = new Client({ name: "x11-test", version: "1.0.0" });
  await client.connect(sendInitializeMeta(clientSide, meta));
  const act = async (args: Record<string, unknown>): Promise<Result> => {
    const result = await client.callTool({
      name: "computer",
      arguments: args,
    }) as Result;
    assert.notEqual(result.isError, true, result.content[0]?.text ?? "");
    return result;
  };
  return { client, computer, act };
}

function screenshotSize(result: Result) {
  const image = result.content.find((item) => item.type === "image");
  assert.ok(image?.data, "a screenshot");
  // A blank screen compresses to a few hundred bytes; the page's text does not.
  assert.ok(
    image.data.length > 8_000,
    `the screenshot shows the page (${image.data.length} base64 characters)`,
  );
  return pngSizeOf(image.data);
}

function inside(
  layout: PageLayout,
  element: PageElement,
  x: number,
  y: number,
) {
  const box = layout.elements[element];
  return x >= box.left && x <= box.left + box.width && y >= box.top &&
    y <= box.top + box.height;
}

const CASES: {
  name: string;
  meta?: Record<string, unknown>;
  agent: { width: number; height: number };
}[] = [
  {
    name: "display 1024x640",
    meta: { display_width: 1024, display_height: 640 },
    agent: { width: 1024, height: 640 },
  },
  { name: "no display size", agent: { width: 1920, height: 1080 } },
  {
    name: "display 800x500",
    meta: { display_width: 800, display_height: 500 },
    agent: { width: 800, height: 500 },
  },
];

Deno.test({
  name:
    "the computer tool on Xvfb + Chromium: screenshots at the agent's size, clicks land on the element at every size",
  ignore: missing.length > 0,
  async fn(t) {
    await using desktop = await startDesktop({
      size: { width: 1280, height: 800 },
    });
    for (const { name, meta, agent } of CASES) {
      await t.step(name, async () => {
        const { client, computer, act } = await computerClient(
          desktop.xvfb.display,
          meta,
        );
        try {
          assert.deepEqual(computer.agentSize, agent);
          const shot = await act({ action: "screenshot" });
          assert.deepEqual(screenshotSize(shot), agent);

          const { run, layout } = await desktop.page.startRun(15_000);
          for (const element of ["word", "submit"] as const) {
            const aim = await computer.toAgent(elementCenter(layout, element));
            const clicked = await act({ action: "click", x: aim.x, y: aim.y });
            assert.deepEqual(screenshotSize(clicked), agent);
            const seen = await waitFor(() =>
              desktop.page.clicks.find((c) =>
                c.run === run && c.target === element
              )
            );
            assert.ok(
              seen,
              `the page saw no click on "${element}" in run ${run} (aimed at ${aim.x}, ${aim.y} of ${agent.width}x${agent.height}); clicks seen: ${
                JSON.stringify(desktop.page.clicks)
              }`,
            );
            assert.ok(
              inside(layout, element, seen.x, seen.y),
              `the click at screen (${seen.x}, ${seen.y}) is inside "${element}"`,
            );
            const where = await act({
              action: "cursor_position",
              screenshot: false,
            });
            assert.deepEqual(where.structuredContent, { x: aim.x, y: aim.y });
          }
        } finally {
          await client.close();
        }
      });
    }

    await t.step(
      "control: real coordinates sent unscaled miss the box",
      async () => {
        const { client, computer, act } = await computerClient(
          desktop.xvfb.display,
          { display_width: 800, display_height: 500 },
        );
        try {
          const { run, layout } = await desktop.page.startRun(15_000);
          const real = elementCenter(layout, "word");
          assert.notDeepEqual(await computer.toAgent(real), real);
          assert.ok(real.x < 800 && real.y < 500, "inside the agent's screen");
          await act({
            action: "click",
            x: real.x,
            y: real.y,
            screenshot: false,
          });
          await new Promise((resolve) => setTimeout(resolve, 500));
          assert.equal(
            desktop.page.clicks.find((c) =>
              c.run === run && c.target === "word"
            ),
            undefined,
          );
        } finally {
          await client.close();
        }
      },
    );

    await t.step(
      "typing into the box and pressing Enter submits the word",
      async () => {
        const { client, computer, act } = await computerClient(
          desktop.xvfb.display,
          { display_width: 1366, display_height: 768 },
        );
        try {
          const { run, layout } = await desktop.page.startRun(15_000);
          const box = await computer.toAgent(elementCenter(layout, "word"));
          await act({ action: "click", x: box.x, y: box.y, screenshot: false });
          await act({
            action: "type",
            text: "-Quoted 'word' $HOME",
            screenshot: false,
          });
          await act({ action: "key", keys: ["ctrl+a"], screenshot: false });
          await act({ action: "type", text: "lantern", screenshot: false });
          await act({ action: "key", keys: ["ENTER"] });
          assert.equal(await desktop.page.submission(run, 5_000), "lantern");
        } finally {
          await client.close();
        }
      },
    );
  },
});

async function waitFor<T>(
  read: () => T | undefined,
  ms = 5_000,
): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const value = read();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return read();
}

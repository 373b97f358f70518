// The desktop example as real subprocesses over stdio, driven by the SDK
// client and the scripted agent: a real Xvfb, xdotool and Chromium. Two
// environments run at once with different agent sizes, each to reward 1;
// a wrong word scores 0; closing the client (stdio) and SIGTERM (HTTP) stop
// Chromium and Xvfb.
import assert from "node:assert/strict";
import { playPrompt } from "../examples/desktop/agent.ts";
import { startServerProcess } from "./_example_process.ts";
import {
  Client,
  StdioClientTransport,
  StreamableHTTPClientTransport,
} from "./_mcp_client.ts";
import {
  missingDesktopPrograms,
  pngSizeOf,
  processRunning,
  sendInitializeMeta,
} from "./_desktop.ts";

const MAIN = new URL("../examples/desktop/main.ts", import.meta.url).pathname;
const ROOT = new URL("..", import.meta.url).pathname;
const missing = missingDesktopPrograms("tests/example_desktop_test.ts");

interface Status {
  screen: { width: number; height: number };
  agent: { width: number; height: number };
  display: string;
  processes: { xvfb: number; chromium: number };
}

async function connect(
  meta?: Record<string, unknown>,
  env?: Record<string, string>,
) {
  const transport = sendInitializeMeta(
    new StdioClientTransport({
      command: Deno.execPath(),
      args: ["run", "-A", MAIN, "stdio"],
      cwd: ROOT,
      env: { ...Deno.env.toObject(), NO_COLOR: "1", ...env },
      stderr: "ignore",
    }),
    meta,
  );
  const client = new Client({ name: "desktop-player", version: "1.0.0" });
  await client.connect(transport, { timeout: 60_000 });
  return client;
}

async function status(client: Client): Promise<Status> {
  const read = await client.readResource({ uri: "desktop://status" });
  return JSON.parse((read.contents[0] as { text: string }).text);
}

async function run(client: Client, word: string, typed = word) {
  const prompt = await client.getPrompt({
    name: "desktop:fill_form",
    arguments: { word },
  });
  const text = (prompt.messages[0].content as { text: string }).text;
  const results = await playPrompt(
    client,
    text.replace(`"${word}"`, `"${typed}"`),
  );
  await client.callTool({
    name: "_hud_submit",
    arguments: { scenario: "fill_form", answer: "Done" },
  });
  const evaluation = await client.readResource({ uri: "desktop:fill_form" });
  const result = JSON.parse(
    (evaluation.contents[0] as { text: string }).text,
  ) as { reward: number; content: string };
  const screenshots = results.map(({ result }) => {
    const image = result.content.find((item) => item.type === "image");
    assert.ok(image?.data, "every action answers with a screenshot");
    return pngSizeOf(image.data);
  });
  return { prompt: text, result, screenshots };
}

async function waitGone(pids: number[], ms = 10_000): Promise<number[]> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!pids.some(processRunning)) return [];
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return pids.filter(processRunning);
}

Deno.test({
  name:
    "two desktop environments at once, agent 1024x640 and the default 1920x1080, each fill the form to reward 1",
  ignore: missing.length > 0,
  async fn() {
    const [small, large] = await Promise.all([
      connect({ display_width: 1024, display_height: 640 }),
      connect(),
    ]);
    try {
      const [a, b] = [await status(small), await status(large)];
      assert.notEqual(a.display, b.display, "each has its own X display");
      assert.deepEqual(a.agent, { width: 1024, height: 640 });
      assert.deepEqual(b.agent, { width: 1920, height: 1080 });
      assert.deepEqual(a.screen, { width: 1280, height: 800 });
      const [first, second] = await Promise.all([
        run(small, "lantern"),
        run(large, "harbor-7"),
      ]);
      assert.match(
        first.prompt,
        /^The screen is 1024x640\. Click the text box at \(\d+, \d+\), type "lantern", then press Enter\.$/,
      );
      assert.match(second.prompt, /^The screen is 1920x1080\. /);
      assert.deepEqual(first.result.reward, 1, first.result.content);
      assert.deepEqual(second.result.reward, 1, second.result.content);
      assert.ok(
        first.screenshots.every((s) => s.width === 1024 && s.height === 640),
      );
      assert.ok(
        second.screenshots.every((s) => s.width === 1920 && s.height === 1080),
      );
      // A second run in the same process starts from a fresh page.
      const again = await run(small, "second");
      assert.equal(again.result.reward, 1, again.result.content);
    } finally {
      await small.close();
      await large.close();
    }
  },
});

Deno.test({
  name:
    "the desktop scores a wrong word 0 and stops Chromium and Xvfb when the client closes",
  ignore: missing.length > 0,
  async fn() {
    const client = await connect({ display_width: 1280, display_height: 800 }, {
      DESKTOP_SCREEN: "1024x768",
    });
    let processes: number[] = [];
    try {
      const current = await status(client);
      assert.deepEqual(current.screen, { width: 1024, height: 768 });
      processes = [current.processes.xvfb, current.processes.chromium];
      assert.ok(processes.every(processRunning));
      const wrong = await run(client, "lantern", "lanterns");
      assert.equal(wrong.result.reward, 0);
      assert.equal(
        wrong.result.content,
        'The page submitted "lanterns", not "lantern"',
      );
    } finally {
      await client.close();
    }
    assert.deepEqual(
      await waitGone(processes),
      [],
      "Xvfb and Chromium stopped",
    );
  },
});

Deno.test({
  name:
    "the desktop over Streamable HTTP reaches reward 1, and SIGTERM stops Chromium and Xvfb and exits 0",
  ignore: missing.length > 0,
  async fn() {
    const server = await startServerProcess(
      Deno.execPath(),
      ["run", "-A", MAIN, "http"],
      60_000,
    );
    let processes: number[] = [];
    try {
      const client = new Client({ name: "http-player", version: "1.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp`)),
      );
      try {
        const current = await status(client);
        processes = [current.processes.xvfb, current.processes.chromium];
        assert.deepEqual(current.agent, { width: 1920, height: 1080 });
        const played = await run(client, "Quartz");
        assert.equal(played.result.reward, 1, played.result.content);
      } finally {
        await client.close();
      }
    } finally {
      const exit = await server.stop("SIGTERM");
      assert.equal(exit.code, 0, server.stderr());
    }
    assert.deepEqual(
      await waitGone(processes),
      [],
      "Xvfb and Chromium stopped",
    );
  },
});

Deno.test({
  name:
    "the desktop fails to start at once with one line and exit 1 when Chromium cannot run",
  ignore: missing.length > 0,
  async fn() {
    const started = Date.now();
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", MAIN, "stdio"],
      cwd: ROOT,
      env: { CHROMIUM_PATH: "/bin/false", NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(output.code, 1);
    assert.ok(
      Date.now() - started < 20_000,
      "fails fast, not at the time limit",
    );
    assert.equal(
      new TextDecoder().decode(output.stdout),
      "",
      "stdout stays clean for MCP",
    );
    assert.equal(
      new TextDecoder().decode(output.stderr).trim(),
      'desktop: cannot start the desktop: Chromium ("/bin/false") exited with code 1 before the page was ready',
    );
  },
});

Deno.test({
  name:
    "after an agent closed Chromium the next run's setup says so in one line",
  ignore: missing.length > 0,
  async fn() {
    const client = await connect();
    try {
      const { processes } = await status(client);
      await client.callTool({
        name: "computer",
        arguments: { action: "key", keys: ["ctrl", "w"], screenshot: false },
      });
      assert.deepEqual(await waitGone([processes.chromium]), []);
      await assert.rejects(
        () =>
          client.getPrompt({
            name: "desktop:fill_form",
            arguments: { word: "lantern" },
          }),
        /Chromium is no longer running \(an earlier run closed it\): restart the environment/,
      );
    } finally {
      await client.close();
    }
  },
});

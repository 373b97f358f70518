import assert from "node:assert/strict";
import { z } from "zod";
import { BaseHub, BaseTool, MCPServer } from "../mod.ts";
import {
  type CallToolResult,
  connectInMemory,
  connectSession,
  initializeMessage,
  rawPeer,
  ToolListChangedNotificationSchema,
} from "../../tests/_mcp_client.ts";

function resourceText(result: { contents: object[] }): string {
  const first = result.contents[0];
  assert.ok("text" in first, "expected a text resource");
  return String(first.text);
}

function textOf(result: unknown): string {
  const content = (result as CallToolResult).content;
  return content.map((item) => (item.type === "text" ? item.text : "")).join(
    "",
  );
}

Deno.test("tool() returns the same function and registers it", async () => {
  const mcp = new MCPServer({ name: "t" });
  const add = ({ a, b }: { a: number; b: number }) => a + b;
  const returned = mcp.tool({
    name: "add",
    description: "Adds.",
    input: { a: z.number(), b: z.number() },
  }, add);
  assert.equal(returned, add);
  const client = await connectInMemory(mcp);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), ["add"]);
  assert.equal(tools[0].description, "Adds.");
  assert.deepEqual(Object.keys(tools[0].inputSchema.properties ?? {}), [
    "a",
    "b",
  ]);
  const result = await client.callTool({
    name: "add",
    arguments: { a: 2, b: 3 },
  });
  assert.equal(textOf(result), "5");
  await client.close();
});

Deno.test("tool() works as a TC39 method decorator on static and instance methods", async () => {
  const mcp = new MCPServer({ name: "t" });
  class Tools {
    prefix = "hi ";
    @mcp.tool({ description: "Greets.", input: { who: z.string() } })
    greet({ who }: { who: string }): string {
      return this.prefix + who;
    }
    @mcp.tool({ name: "shout", input: { text: z.string() } })
    static shout({ text }: { text: string }): string {
      return text.toUpperCase();
    }
  }
  const tools = new Tools();
  assert.equal(tools.greet({ who: "x" }), "hi x");
  const client = await connectInMemory(mcp);
  const names = (await client.listTools()).tools.map((t) => t.name).sort();
  assert.deepEqual(names, ["greet", "shout"]);
  assert.equal(
    textOf(await client.callTool({ name: "greet", arguments: { who: "ada" } })),
    "hi ada",
  );
  assert.equal(
    textOf(await client.callTool({ name: "shout", arguments: { text: "ok" } })),
    "OK",
  );
  await client.close();
});

Deno.test("the SDK's registerTool() behaves as in the SDK, with a zod object or a raw shape", async () => {
  const mcp = new MCPServer({ name: "t" });
  const registered = mcp.registerTool(
    "echo",
    { description: "Echoes.", inputSchema: z.object({ text: z.string() }) },
    ({ text }) => ({
      content: [{ type: "text", text }],
    }),
  );
  mcp.registerTool(
    "shout",
    { inputSchema: { text: z.string() } },
    ({ text }) => ({ content: [{ type: "text", text: text.toUpperCase() }] }),
  );
  assert.equal(typeof registered.remove, "function");
  const client = await connectInMemory(mcp);
  assert.equal(
    textOf(await client.callTool({ name: "echo", arguments: { text: "a" } })),
    "a",
  );
  assert.equal(
    textOf(await client.callTool({ name: "shout", arguments: { text: "a" } })),
    "A",
  );
  await client.close();
});

Deno.test("addTool() accepts a BaseTool and a raw definition", async () => {
  class ClickTool extends BaseTool<{ x: z.ZodNumber }> {
    override description = "Clicks.";
    override input = { x: z.number() };
    call({ x }: { x: number }) {
      return { clicked: x, by: this.env.user };
    }
  }
  const mcp = new MCPServer({ name: "t" });
  mcp.addTool(new ClickTool({ user: "ada" }));
  mcp.addTool({
    name: "raw",
    description: "Raw.",
    handler: () => "raw result",
  });
  const client = await connectInMemory(mcp);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), ["click", "raw"]);
  const click = await client.callTool({ name: "click", arguments: { x: 4 } });
  assert.deepEqual(click.structuredContent, { clicked: 4, by: "ada" });
  assert.equal(
    textOf(await client.callTool({ name: "raw", arguments: {} })),
    "raw result",
  );
  await client.close();
});

Deno.test("tool results are normalised: strings, objects, content lists, evaluate results, void", async () => {
  const mcp = new MCPServer({ name: "t" });
  mcp.tool({ name: "str" }, () => "hello");
  mcp.tool({ name: "obj" }, () => ({ a: 1 }));
  mcp.tool(
    { name: "list" },
    () => [{ type: "text", text: "one" }, { type: "text", text: "two" }],
  );
  mcp.tool(
    { name: "evaluate" },
    () => ({ reward: 0.5, done: true, info: { steps: 3 } }),
  );
  mcp.tool({ name: "nothing" }, () => {});
  const client = await connectInMemory(mcp);
  assert.deepEqual(await client.callTool({ name: "str" }), {
    content: [{ type: "text", text: "hello" }],
  });
  const obj = await client.callTool({ name: "obj" });
  assert.deepEqual(obj.structuredContent, { a: 1 });
  assert.deepEqual(JSON.parse(textOf(obj)), { a: 1 });
  assert.equal(textOf(await client.callTool({ name: "list" })), "onetwo");
  const evaluation = await client.callTool({ name: "evaluate" });
  assert.deepEqual(evaluation.structuredContent, {
    reward: 0.5,
    done: true,
    info: { steps: 3 },
  });
  assert.deepEqual((await client.callTool({ name: "nothing" })).content, []);
  await client.close();
});

Deno.test("a throwing tool becomes isError and the server keeps serving", async () => {
  const mcp = new MCPServer({ name: "t" });
  mcp.tool({ name: "boom" }, () => {
    throw new Error("Disk is full");
  });
  mcp.tool({ name: "ok" }, () => "fine");
  const client = await connectInMemory(mcp);
  const failed = await client.callTool({ name: "boom" });
  assert.equal(failed.isError, true);
  assert.match(textOf(failed), /Disk is full/);
  assert.equal(textOf(await client.callTool({ name: "ok" })), "fine");
  await client.close();
});

Deno.test("arguments that fail the zod shape give an input validation error naming the field", async () => {
  const mcp = new MCPServer({ name: "t" });
  mcp.tool(
    { name: "square", input: { side: z.number() } },
    ({ side }) => side * side,
  );
  const client = await connectInMemory(mcp);
  const result = await client.callTool({
    name: "square",
    arguments: { side: "four" },
  });
  assert.equal(result.isError, true);
  assert.match(textOf(result), /Invalid arguments for tool square/);
  assert.match(textOf(result), /side: .*expected number/);
  await client.close();
});

function counterServer(harnessToken?: string) {
  const mcp = new MCPServer({ name: "counter", harnessToken });
  const setup = new BaseHub("setup");
  setup.env = { count: 0 };
  setup.tool("reset", {
    description: "Sets the count.",
    input: { to: z.number() },
  }, ({ to }) => {
    setup.env.count = to;
    return `count is ${to}`;
  });
  setup.tool("explode", () => {
    throw new Error("Setup exploded");
  });
  mcp.tool({ name: "read" }, () => String(setup.env.count));
  mcp.mount(setup);
  return { mcp, setup };
}

Deno.test("mount(hub) lists one dispatcher and hides the hub's tools", async () => {
  const { mcp } = counterServer();
  const client = await connectInMemory(mcp);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ["read", "setup"]);
  const dispatcher = tools.find((t) => t.name === "setup")!;
  const properties = dispatcher.inputSchema.properties as Record<
    string,
    { enum?: string[] }
  >;
  assert.deepEqual(properties.name.enum, ["reset", "explode"]);
  assert.ok("arguments" in properties);
  await client.close();
});

Deno.test("the hub dispatcher takes object and JSON-string arguments", async () => {
  const { mcp, setup } = counterServer();
  const client = await connectInMemory(mcp);
  const viaObject = await client.callTool({
    name: "setup",
    arguments: { name: "reset", arguments: { to: 3 } },
  });
  assert.equal(textOf(viaObject), "count is 3");
  const viaString = await client.callTool({
    name: "setup",
    arguments: { name: "reset", arguments: '{"to": 7}' },
  });
  assert.equal(textOf(viaString), "count is 7");
  assert.equal(setup.env.count, 7);
  await client.close();
});

Deno.test("an unknown hub tool name is an isError naming the tool and the hub's tools", async () => {
  const { mcp } = counterServer();
  const client = await connectInMemory(mcp);
  const result = await client.callTool({
    name: "setup",
    arguments: { name: "nope", arguments: {} },
  });
  assert.equal(result.isError, true);
  assert.match(textOf(result), /"nope"/);
  assert.match(textOf(result), /"reset", "explode"/);
  await client.close();
});

Deno.test("a throwing hub tool is an isError and the server keeps serving", async () => {
  const { mcp } = counterServer();
  const client = await connectInMemory(mcp);
  const result = await client.callTool({
    name: "setup",
    arguments: { name: "explode" },
  });
  assert.equal(result.isError, true);
  assert.match(textOf(result), /Setup exploded/);
  const bad = await client.callTool({
    name: "setup",
    arguments: { name: "reset", arguments: { to: "x" } },
  });
  assert.equal(bad.isError, true);
  assert.match(textOf(bad), /setup\/reset: to: /);
  assert.equal(textOf(await client.callTool({ name: "read" })), "0");
  await client.close();
});

Deno.test("the {hub}://functions resource lists name, description and input schema", async () => {
  const { mcp } = counterServer();
  const client = await connectInMemory(mcp);
  const { contents } = await client.readResource({ uri: "setup://functions" });
  const functions = JSON.parse(resourceText({ contents }));
  assert.equal(functions[0].name, "reset");
  assert.equal(functions[0].description, "Sets the count.");
  assert.equal(functions[0].input_schema.properties.to.type, "number");
  assert.equal(functions[1].name, "explode");
  await client.close();
});

Deno.test("tools a hub gains after mount join the dispatcher", async () => {
  const { mcp, setup } = counterServer();
  setup.tool("later", () => "late");
  const client = await connectInMemory(mcp);
  const dispatcher = (await client.listTools()).tools.find((t) =>
    t.name === "setup"
  )!;
  const properties = dispatcher.inputSchema.properties as Record<
    string,
    { enum?: string[] }
  >;
  assert.deepEqual(properties.name.enum, ["reset", "explode", "later"]);
  assert.equal(
    textOf(
      await client.callTool({ name: "setup", arguments: { name: "later" } }),
    ),
    "late",
  );
  await client.close();
});

Deno.test("mounting after a client connected sends tools/list_changed", async () => {
  const mcp = new MCPServer({ name: "t" });
  mcp.tool({ name: "first" }, () => "1");
  const client = await connectInMemory(mcp);
  const changed = Promise.withResolvers<void>();
  client.setNotificationHandler(
    ToolListChangedNotificationSchema,
    () => changed.resolve(),
  );
  const hub = new BaseHub("evaluate");
  hub.tool("score", () => ({ reward: 1, done: true }));
  mcp.mount(hub);
  await changed.promise;
  assert.deepEqual((await client.listTools()).tools.map((t) => t.name), [
    "first",
    "evaluate",
  ]);
  await client.close();
});

Deno.test("mount(server, prefix) composes tools, resources and prompts with a prefix", async () => {
  const child = new MCPServer({ name: "child" });
  child.tool(
    { name: "ping", input: { n: z.number() } },
    ({ n }) => `pong ${n}`,
  );
  child.resource("status://env", () => ({ ok: true }));
  child.prompt({ name: "hello", description: "Says hello." }, () => "hi");
  const parent = new MCPServer({ name: "parent" });
  parent.mount(child, "kid");
  child.tool({ name: "late" }, () => "late tool");
  const client = await connectInMemory(parent);
  assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), [
    "kid_late",
    "kid_ping",
  ]);
  assert.equal(
    textOf(await client.callTool({ name: "kid_ping", arguments: { n: 2 } })),
    "pong 2",
  );
  const { contents } = await client.readResource({ uri: "status://kid/env" });
  assert.deepEqual(JSON.parse(resourceText({ contents })), { ok: true });
  assert.deepEqual((await client.listPrompts()).prompts.map((p) => p.name), [
    "kid_hello",
  ]);
  await client.close();
});

Deno.test("resource(uri, fn) serialises to JSON and returns fn", async () => {
  const mcp = new MCPServer({ name: "t" });
  const status = () => ({ running: true, step: 2 });
  assert.equal(mcp.resource("status://env", status), status);
  const text = mcp.resource(
    "notes://readme",
    { description: "Notes." },
    () => "plain text",
  );
  assert.equal(typeof text, "function");
  mcp.resource(
    "raw://result",
    () => ({ contents: [{ uri: "raw://result", text: "as is" }] }),
  );
  const client = await connectInMemory(mcp);
  const listed = (await client.listResources()).resources.map((r) => r.uri);
  assert.deepEqual(listed, ["status://env", "notes://readme", "raw://result"]);
  const json = await client.readResource({ uri: "status://env" });
  assert.equal(json.contents[0].mimeType, "application/json");
  assert.deepEqual(JSON.parse(resourceText(json)), { running: true, step: 2 });
  assert.equal(
    resourceText(await client.readResource({ uri: "notes://readme" })),
    "plain text",
  );
  assert.equal(
    resourceText(await client.readResource({ uri: "raw://result" })),
    "as is",
  );
  await client.close();
});

Deno.test("resource URI templates like file://{path} match paths with slashes", async () => {
  const mcp = new MCPServer({ name: "t" });
  mcp.resource("file://{path}", { name: "file" }, ({ path }) => ({ path }));
  const client = await connectInMemory(mcp);
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.equal(resourceTemplates[0].uriTemplate, "file://{path}");
  const nested = await client.readResource({ uri: "file:///tmp/notes.txt" });
  assert.deepEqual(JSON.parse(resourceText(nested)), {
    path: "/tmp/notes.txt",
  });
  const simple = await client.readResource({ uri: "file://notes.txt" });
  assert.deepEqual(JSON.parse(resourceText(simple)), { path: "notes.txt" });
  await client.close();
});

Deno.test("initialize hooks run inside initialize, once per process, and their tools are listed", async () => {
  const mcp = new MCPServer({ name: "t" });
  let runs = 0;
  const hub = new BaseHub("setup");
  hub.tool("noop", () => {});
  mcp.initialize(() => {
    runs++;
    mcp.tool({ name: "from_hook" }, () => "hooked");
    mcp.mount(hub);
  });
  const first = await connectInMemory(mcp);
  assert.equal(runs, 1);
  assert.deepEqual((await first.listTools()).tools.map((t) => t.name), [
    "from_hook",
    "setup",
  ]);
  const second = await connectSession(mcp);
  assert.equal(runs, 1);
  assert.deepEqual((await second.listTools()).tools.map((t) => t.name), [
    "from_hook",
    "setup",
  ]);
  await first.close();
  await second.close();
});

Deno.test("initialize hooks see _meta and send progress to a client that asked for it", async () => {
  const mcp = new MCPServer({ name: "t" });
  let seen: Record<string, unknown> | undefined;
  mcp.initialize(async (ctx) => {
    seen = ctx.meta;
    await ctx.progress(50, "starting");
    await ctx.session.sendProgressNotification({
      progressToken: "tok",
      progress: 70,
      total: 100,
      message: "direct",
    });
  });
  const peer = await rawPeer(mcp);
  await peer.send(
    initializeMessage(1, {
      progressToken: "tok",
      display_width: 1280,
      display_height: 720,
      extra: "x",
    }),
  );
  const response = await peer.response(1);
  assert.ok("result" in response);
  assert.deepEqual(seen, {
    progressToken: "tok",
    display_width: 1280,
    display_height: 720,
    extra: "x",
  });
  const progress = peer.received.filter((m) =>
    "method" in m && m.method === "notifications/progress"
  );
  assert.deepEqual(progress.map((m) => "params" in m && m.params), [
    { progressToken: "tok", progress: 50, total: 100, message: "starting" },
    { progressToken: "tok", progress: 70, total: 100, message: "direct" },
  ]);
  assert.ok(
    peer.received.indexOf(progress[0]) < peer.received.indexOf(response),
  );
  await peer.close();
});

Deno.test("ctx.progress does nothing without a progress token", async () => {
  const mcp = new MCPServer({ name: "t" });
  mcp.initialize(async (ctx) => {
    assert.equal(ctx.meta, undefined);
    await ctx.progress(10, "quiet");
  });
  const peer = await rawPeer(mcp);
  await peer.send(initializeMessage(1));
  await peer.response(1);
  assert.equal(peer.received.length, 1);
  await peer.close();
});

Deno.test("a throwing initialize hook fails initialize with its message, after a failure progress", async () => {
  const mcp = new MCPServer({ name: "t" });
  mcp.initialize(() => {
    throw new Error("Browser did not start");
  });
  const peer = await rawPeer(mcp);
  await peer.send(initializeMessage(1, { progressToken: 9 }));
  const response = await peer.response(1);
  assert.ok("error" in response);
  assert.equal(response.error.message, "Browser did not start");
  const progress = peer.received.find((m) =>
    "method" in m && m.method === "notifications/progress"
  );
  assert.ok(progress && "params" in progress);
  assert.equal(
    progress.params?.message,
    "Initialization failed: Browser did not start",
  );
  await peer.close();
  await assert.rejects(connectSession(mcp), /Browser did not start/);
});

Deno.test("console.log in an initialize hook goes to stderr", async () => {
  const mcp = new MCPServer({ name: "t" });
  const original = console.log;
  let during: typeof console.log | undefined;
  mcp.initialize(() => {
    during = console.log;
  });
  const client = await connectInMemory(mcp);
  assert.notEqual(during, original);
  assert.equal(console.log, original);
  await client.close();
});

Deno.test("with a harness token the setup dispatcher answers only requests whose _meta carries it", async () => {
  const { mcp, setup } = counterServer("harness-secret");
  const client = await connectInMemory(mcp);
  const agent = await client.callTool({
    name: "setup",
    arguments: { name: "reset", arguments: { to: 5 } },
  });
  assert.equal(agent.isError, true);
  assert.match(textOf(agent), /harness_token/);
  const wrong = await client.callTool({
    name: "setup",
    arguments: { name: "reset", arguments: { to: 5 } },
    _meta: { harness_token: "guess" },
  });
  assert.equal(wrong.isError, true);
  assert.equal(setup.env.count, 0);
  const harness = await client.callTool({
    name: "setup",
    arguments: { name: "reset", arguments: { to: 5 } },
    _meta: { harness_token: "harness-secret" },
  });
  assert.equal(textOf(harness), "count is 5");
  // Plain tools stay open to the agent.
  assert.equal(textOf(await client.callTool({ name: "read" })), "5");
  await client.close();
});

Deno.test("mounting a hub with no tools warns on stderr, naming the hub", () => {
  const errors: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => errors.push(args.join(" "));
  try {
    const mcp = new MCPServer({ name: "empty" });
    mcp.mount(new BaseHub("setup"));
    const full = new BaseHub("evaluate");
    full.tool("score", () => "1");
    mcp.mount(full);
  } finally {
    console.error = original;
  }
  assert.equal(errors.length, 1);
  assert.match(errors[0], /hub "setup" is mounted with no tools/);
});

Deno.test("a run's tool filters refuse the agent's tools the scenario left out, but not the harness's setup hub", async () => {
  const { mcp } = counterServer();
  mcp.tool({ name: "peek" }, () => "the answer");
  mcp.scenario(
    { name: "count", allowedTools: ["read"] },
    async function* () {
      yield "Read the count.";
    },
  );
  const client = await connectInMemory(mcp);
  try {
    const meta = { run_id: "r" };
    await client.getPrompt({ name: "counter:count", _meta: meta });
    const peek = await client.callTool({
      name: "peek",
      arguments: {},
      _meta: meta,
    });
    assert.equal(peek.isError, true);
    assert.match(textOf(peek), /left out of this run by scenario "count"/);
    const reset = await client.callTool({
      name: "setup",
      arguments: { name: "reset", arguments: { to: 4 } },
      _meta: meta,
    });
    assert.equal(textOf(reset), "count is 4");
    assert.equal(
      textOf(
        await client.callTool({ name: "read", arguments: {}, _meta: meta }),
      ),
      "4",
    );
  } finally {
    await client.close();
  }
});

import assert from "node:assert/strict";
import { createHttpApp } from "./http.ts";
import { createCounterEnv } from "../../tests/fixtures/mcp_counter_env.ts";

const HOST = { host: "127.0.0.1:8765" };

async function withApp(
  fn: (
    request: (path: string, init?: RequestInit) => Promise<Response>,
  ) => Promise<void>,
) {
  const env = createCounterEnv();
  const http = createHttpApp(env.mcp, "http", "127.0.0.1");
  try {
    await fn(async (path, init) =>
      await http.app.request(`http://127.0.0.1:8765${path}`, {
        ...init,
        headers: { ...HOST, ...init?.headers },
      })
    );
  } finally {
    await http.close();
  }
}

Deno.test("GET /dev describes the server with absolute endpoint URLs", async () => {
  await withApp(async (request) => {
    const body = await (await request("/dev")).json();
    assert.deepEqual(body, {
      name: "counter-env",
      version: "1.2.3",
      transport: "http",
      endpoints: {
        tools: "http://127.0.0.1:8765/dev/tools",
        resources: "http://127.0.0.1:8765/dev/resources",
        prompts: "http://127.0.0.1:8765/dev/prompts",
      },
    });
  });
});

Deno.test("GET /dev/tools lists visible tools and hub tools marked with their hub", async () => {
  await withApp(async (request) => {
    const body = await (await request("/dev/tools")).json();
    assert.equal(body.server, "counter-env");
    assert.equal(body.count, body.tools.length);
    const byName = (name: string, hub?: string) =>
      body.tools.find((t: { name: string; hub?: string }) =>
        t.name === name && t.hub === hub
      );
    assert.equal(byName("increment").description, "Add one.");
    assert.equal(byName("increment").input_schema.properties.by.type, "number");
    assert.ok(byName("setup") && byName("evaluate"));
    assert.equal(byName("reset", "setup").description, "Set the count.");
    assert.equal(
      byName("reset", "setup").input_schema.properties.to.type,
      "number",
    );
    assert.ok(byName("reached", "evaluate"));
    assert.equal(body.count, 5);
  });
});

Deno.test("GET /dev/resources and /dev/prompts list resources and prompts", async () => {
  await withApp(async (request) => {
    const resources = await (await request("/dev/resources")).json();
    assert.equal(resources.server, "counter-env");
    const uris = resources.resources.map((r: { uri: string }) => r.uri);
    assert.deepEqual(uris, [
      "status://counter",
      "setup://functions",
      "evaluate://functions",
    ]);
    assert.deepEqual(resources.resources[0], {
      uri: "status://counter",
      name: "status://counter",
      description: "The count.",
      mimeType: "application/json",
    });
    assert.equal(resources.count, 3);
    const prompts = await (await request("/dev/prompts")).json();
    assert.deepEqual(prompts, {
      server: "counter-env",
      prompts: [{
        name: "goal",
        description: "The task.",
        arguments: [{ name: "target", required: true }],
      }],
      count: 1,
    });
  });
});

Deno.test("POST /dev/tools/{name} calls visible tools and hub tools by path or encoded slash", async () => {
  await withApp(async (request) => {
    const post = (path: string, body: unknown) =>
      request(path, {
        method: "POST",
        body: JSON.stringify(body),
        headers: { "content-type": "application/json" },
      });
    const reset = await post("/dev/tools/setup/reset", { to: 4 });
    assert.equal(reset.status, 200);
    assert.deepEqual(await reset.json(), { content: [] });
    const increment = await (await post("/dev/tools/increment", { by: 2 }))
      .json();
    assert.deepEqual(increment.content, [{ type: "text", text: "6" }]);
    const reached =
      await (await post("/dev/tools/evaluate%2Freached", { target: 6 })).json();
    assert.deepEqual(reached.structuredContent, { reward: 1, done: true });
    const unknown = await (await post("/dev/tools/setup/nope", {})).json();
    assert.equal(unknown.isError, true);
    const bad = await request("/dev/tools/increment", {
      method: "POST",
      body: "[1]",
    });
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
  });
});

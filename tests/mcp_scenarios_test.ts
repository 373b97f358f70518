/**
 * The scenario wire format (prompt `{env}:{scenario}` → `_hud_submit` →
 * resource read) with the official SDK clients of both eras: the v1
 * `Client` (legacy session) and the v2 `Client` pinned to 2026-07-28
 * (stateless, runs keyed by `_meta.run_id`), through the real HTTP app.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernHttp,
} from "@modelcontextprotocol/client";
import {
  Client as LegacyClient,
  StreamableHTTPClientTransport as LegacyHttp,
} from "./_mcp_client.ts";
import { createHttpApp } from "../mcp/transports/http.ts";
import { createScenarioEnv } from "./fixtures/mcp_scenario_env.ts";
import type { MCPServer } from "../mcp/mod.ts";

/** The calls a scenario needs, whichever SDK makes them. */
interface Driver {
  getPrompt(params: Record<string, unknown>): Promise<Record<string, unknown>>;
  callTool(params: Record<string, unknown>): Promise<Record<string, unknown>>;
  readResource(
    params: Record<string, unknown>,
  ): Promise<{ contents: { text?: string }[] }>;
  close(): Promise<void>;
}

function inProcessFetch(mcp: MCPServer) {
  const http = createHttpApp(mcp, "http", "127.0.0.1");
  return {
    http,
    fetch: async (input: string | URL | Request, init?: RequestInit) => {
      const request = new Request(input, init);
      request.headers.set("host", "127.0.0.1");
      return await http.app.fetch(request);
    },
  };
}

const URL_ = new URL("http://127.0.0.1/mcp");

async function connect(
  era: "legacy" | "modern",
  fetch: ReturnType<typeof inProcessFetch>["fetch"],
): Promise<Driver> {
  if (era === "legacy") {
    const client = new LegacyClient({ name: "v1", version: "1.0.0" });
    await client.connect(new LegacyHttp(URL_, { fetch }));
    return client as unknown as Driver;
  }
  const client = new ModernClient({ name: "v2", version: "1.0.0" }, {
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  await client.connect(new ModernHttp(URL_, { fetch }));
  assert.equal(client.getProtocolEra(), "modern");
  return client as unknown as Driver;
}

/** One run: prompt, submit, read. */
async function play(
  client: Driver,
  scenario: string,
  args: Record<string, string>,
  answer: unknown,
  runId: string,
) {
  const _meta = { run_id: runId };
  const prompt = await client.getPrompt({
    name: `scenario-env:${scenario}`,
    arguments: args,
    _meta,
  });
  const submitted = await client.callTool({
    name: "_hud_submit",
    arguments: { scenario, answer },
    _meta,
  });
  const read = await client.readResource({
    uri: `scenario-env:${scenario}`,
    _meta,
  });
  return {
    prompt,
    submitted,
    result: JSON.parse(read.contents[0].text ?? "{}"),
  };
}

for (const era of ["legacy", "modern"] as const) {
  Deno.test(`${era}: prompt, submit and read run a scenario, with coerced arguments, tool filters and subscores`, async () => {
    const env = createScenarioEnv();
    const { http, fetch } = inProcessFetch(env);
    const client = await connect(era, fetch);
    try {
      const { prompt, submitted, result } = await play(
        client,
        "echo-target",
        { target: "7", options: '{"strict": true}', tags: '["a","b"]' },
        "I say 7",
        "run-1",
      );
      assert.deepEqual(prompt.messages, [{
        role: "user",
        content: { type: "text", text: "Say 7." },
      }]);
      const meta = prompt._meta as Record<string, unknown>;
      assert.deepEqual(meta.exclude_tools, ["debug_*"]);
      assert.deepEqual(meta.allowed_tools, ["vis*"]);
      assert.equal(submitted.isError, undefined);
      assert.deepEqual(result, {
        reward: 1,
        done: true,
        content: "said it",
        info: { target: 7, options: { strict: true }, tags: ["a", "b"] },
        subscores: [
          { name: "said", weight: 0.5, value: 1 },
          { name: "strict", weight: 0.5, value: 1 },
        ],
      });
      // The run ended with its evaluation: a second read has nothing to score.
      await assert.rejects(
        client.readResource({
          uri: "scenario-env:echo-target",
          _meta: { run_id: "run-1" },
        }),
        /No run of scenario "echo-target" to evaluate/,
      );
    } finally {
      await client.close();
      await http.close();
    }
  });

  Deno.test(`${era}: a bad argument is an invalid-params error naming it; setup and evaluation failures never hang a run`, async () => {
    const env = createScenarioEnv();
    const { http, fetch } = inProcessFetch(env);
    const client = await connect(era, fetch);
    try {
      await assert.rejects(
        client.getPrompt({
          name: "scenario-env:echo-target",
          arguments: { target: "seven" },
        }),
        (error: Error & { code?: number }) => {
          assert.equal(error.code, -32602);
          assert.match(error.message, /echo-target: target: /);
          return true;
        },
      );
      await assert.rejects(
        client.getPrompt({ name: "scenario-env:bad-setup", arguments: {} }),
        /Setup of scenario bad-setup failed: the database is down/,
      );
      const failed = await play(client, "bad-eval", {}, "x", "run-2");
      assert.deepEqual(failed.result, {
        reward: 0,
        done: true,
        isError: true,
        content: "the grader crashed",
      });
      const plain = await play(client, "no-eval", {}, "x", "run-3");
      assert.equal((plain.prompt.messages as unknown[]).length, 2);
      assert.deepEqual(plain.result, { reward: 1, done: true });
      const number = await play(client, "reward-number", {}, "x", "run-4");
      assert.deepEqual(number.result, { reward: 0.25, done: true });
      const orphan = await client.callTool({
        name: "_hud_submit",
        arguments: { scenario: "echo-target", answer: "7" },
        _meta: { run_id: "never-started" },
      });
      assert.equal(orphan.isError, true);
    } finally {
      await client.close();
      await http.close();
    }
  });
}

Deno.test("8 concurrent runs on one HTTP server, legacy sessions and modern run ids, are each scored on their own answer", async () => {
  const env = createScenarioEnv();
  const { http, fetch } = inProcessFetch(env);
  const clients = await Promise.all(
    Array.from(
      { length: 8 },
      (_, i) => connect(i % 2 === 0 ? "legacy" : "modern", fetch),
    ),
  );
  try {
    // Every run starts before any submits, then answers land interleaved:
    // even runs answer right, odd runs name their neighbour's target.
    const runs = clients.map((client, i) => ({
      client,
      target: 100 + i,
      runId: `concurrent-${i}`,
    }));
    await Promise.all(runs.map(({ client, target, runId }) =>
      client.getPrompt({
        name: "scenario-env:echo-target",
        arguments: { target: String(target) },
        _meta: { run_id: runId },
      })
    ));
    await Promise.all(
      runs.map(({ client, target, runId }, i) =>
        client.callTool({
          name: "_hud_submit",
          arguments: {
            scenario: "echo-target",
            answer: `It is ${i % 2 === 0 ? target : target + 1}`,
          },
          _meta: { run_id: runId },
        })
      ),
    );
    const results = await Promise.all(runs.map(async ({ client, runId }) => {
      const read = await client.readResource({
        uri: "scenario-env:echo-target",
        _meta: { run_id: runId },
      });
      return JSON.parse(read.contents[0].text ?? "{}");
    }));
    results.forEach((result, i) => {
      assert.equal(result.reward, i % 2 === 0 ? 1 : 0, `run ${i}`);
      assert.equal(result.info.target, 100 + i);
    });
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    await http.close();
  }
});

Deno.test("with a harness token, the scenario prompt, _hud_submit and the scenario resource answer only the harness", async () => {
  const env = createScenarioEnv("secret-token");
  const { http, fetch } = inProcessFetch(env);
  const client = await connect("modern", fetch);
  try {
    await assert.rejects(
      client.getPrompt({
        name: "scenario-env:reward-number",
        arguments: {},
        _meta: { run_id: "h" },
      }),
      /only the evaluation harness/,
    );
    await client.getPrompt({
      name: "scenario-env:reward-number",
      arguments: {},
      _meta: { run_id: "h", harness_token: "secret-token" },
    });
    const agent = await client.callTool({
      name: "_hud_submit",
      arguments: { scenario: "reward-number", answer: "mine" },
      _meta: { run_id: "h" },
    });
    assert.equal(agent.isError, true);
    await assert.rejects(
      client.readResource({
        uri: "scenario-env:reward-number",
        _meta: { run_id: "h" },
      }),
      /only the evaluation harness/,
    );
    const harness = { run_id: "h", harness_token: "secret-token" };
    const ok = await client.callTool({
      name: "_hud_submit",
      arguments: { scenario: "reward-number", answer: "ok" },
      _meta: harness,
    });
    assert.equal(ok.isError, undefined);
    const read = await client.readResource({
      uri: "scenario-env:reward-number",
      _meta: harness,
    });
    assert.equal(JSON.parse(read.contents[0].text ?? "{}").reward, 0.25);
  } finally {
    await client.close();
    await http.close();
  }
});

Deno.test("with a harness token, 1,024 token-less prompts/get start no run and evict none: the harness's live run still scores", async () => {
  const env = createScenarioEnv("secret-token");
  const { http, fetch } = inProcessFetch(env);
  const client = await connect("modern", fetch);
  try {
    const harness = { run_id: "victim", harness_token: "secret-token" };
    await client.getPrompt({
      name: "scenario-env:reward-number",
      arguments: {},
      _meta: harness,
    });
    const refused = await Promise.allSettled(
      Array.from({ length: 1024 }, (_, i) =>
        client.getPrompt({
          name: "scenario-env:reward-number",
          arguments: {},
          _meta: { run_id: `flood-${i}` },
        })),
    );
    assert.equal(
      refused.filter((r) => r.status === "rejected").length,
      1024,
      "every token-less prompt is refused",
    );
    const read = await client.readResource({
      uri: "scenario-env:reward-number",
      _meta: harness,
    });
    assert.equal(JSON.parse(read.contents[0].text ?? "{}").reward, 0.25);
  } finally {
    await client.close();
    await http.close();
  }
});

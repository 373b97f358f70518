/**
 * The catalog's provider facts as a client sees them: `GET /v1/models` read
 * through the official OpenAI SDK shows each model's computer-use wire,
 * context window and refusals; a model named as its provider names it
 * (`computer-use-preview`) is the same entry as `operator` on every route;
 * and the live catalog refuses a bad fact with a 400 naming the field.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { type Harness, startHarness } from "./_gateway_harness.ts";
import { createCaller } from "../gateway/state/callers.ts";
import { DEFAULT_CATALOG } from "../gateway/state/catalog.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";

const ADMIN_TOKEN = "admin-token-catalog-facts-0123";

function openai(h: Harness, apiKey = h.caller.key): OpenAI {
  return new OpenAI({ baseURL: `${h.url}/v1`, apiKey, maxRetries: 0 });
}

/** A listed model with the gateway's fields the SDK passes through. */
type ListedModel = OpenAI.Models.Model & {
  computer_use?: Record<string, unknown>;
  context_window?: number;
  features?: Record<string, boolean>;
  aliases?: string[];
};

Deno.test("models.list() and models.retrieve() show each model's computer_use, context_window and features, and leave them out where the catalog has none", async () => {
  await using h = await startHarness();
  const client = openai(h);
  const listed = new Map<string, ListedModel>();
  for await (const model of client.models.list()) {
    listed.set(model.id, model as ListedModel);
  }
  assert.equal(listed.size, DEFAULT_CATALOG.length);
  for (const entry of DEFAULT_CATALOG) {
    const model = listed.get(entry.id)!;
    if (!entry.computerUse) {
      assert.equal("computer_use" in model, false, entry.id);
      continue;
    }
    const { tool, beta, environment, environments } = entry.computerUse;
    assert.deepEqual(model.computer_use, {
      tool,
      ...(beta && { beta }),
      ...(environment && { environment }),
      ...(environments && { environments }),
    }, entry.id);
    assert.equal(model.context_window, entry.contextWindow, entry.id);
  }
  assert.deepEqual(listed.get("claude-sonnet-5-5")!.computer_use, {
    tool: "computer_toolset_20260801",
  });
  assert.deepEqual(listed.get("claude-sonnet-5-5")!.features, {
    disabled_thinking: false,
    forced_tool_choice: false,
    thinking_between_tools: true,
  });
  assert.deepEqual(listed.get("claude-haiku-4-5")!.computer_use, {
    tool: "computer_20250124",
    beta: "computer-use-2025-01-24",
  });
  assert.deepEqual(
    listed.get("gemini-2.5-computer-use-preview")!.computer_use,
    {
      tool: "computer_use",
      environment: "ENVIRONMENT_BROWSER",
      environments: ["ENVIRONMENT_BROWSER"],
    },
  );
  const plain = listed.get("grok-4-1-fast")!;
  for (const field of ["computer_use", "context_window", "features"]) {
    assert.equal(field in plain, false, field);
  }
  // The provider's name for a model retrieves the catalog's entry.
  const byAlias = await client.models.retrieve(
    "computer-use-preview",
  ) as ListedModel;
  assert.equal(byAlias.id, "operator");
  assert.deepEqual(byAlias.computer_use, { tool: "computer_use_preview" });
  assert.deepEqual(byAlias.aliases, ["computer-use-preview"]);
  const gpt = await client.models.retrieve("gpt-5.4") as ListedModel;
  assert.deepEqual(gpt.computer_use, { tool: "computer" });
});

Deno.test("a call that names computer-use-preview is served as operator on the responses route, allowed by an allowlist of operator, and refused off it as operator is", async () => {
  await using h = await startHarness();
  const restricted = await createCaller(h.kv, {
    name: "operator-only",
    creditsMicros: usdToMicros(10),
    limits: { models: ["operator"] },
  });
  const response = await openai(h, restricted.key).responses.create({
    model: "computer-use-preview",
    input: "hello operator",
  });
  assert.equal(response.status, "completed");
  const upstream = h.sim.requests.at(-1)!;
  assert.equal(upstream.provider, "openai");
  assert.equal(
    (upstream.body as { model: string }).model,
    "computer-use-preview",
  );
  // Off its route, the alias gets operator's own refusal.
  const refusals = await Promise.all(
    ["operator", "computer-use-preview"].map(async (model) => {
      const refused = await h.post("/v1/chat/completions", {
        model,
        messages: [{ role: "user", content: "hi" }],
      });
      assert.equal(refused.status, 400);
      return (await refused.json()).error.message;
    }),
  );
  assert.equal(refusals[0], refusals[1]);
  assert.match(refusals[0], /"operator" is not available on the chat route/);
});

Deno.test("PUT /admin/models/{id} refuses a bad computer-use fact or a taken alias with a 400 naming the field, and serves a good one on GET /v1/models/{id}", async () => {
  await using h = await startHarness({
    env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
  });
  const put = (id: string, body: unknown) =>
    fetch(`${h.url}/admin/models/${id}`, {
      method: "PUT",
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        "content-type": "application/json",
      },
      body: JSON.stringify(body),
    });
  const entry = {
    provider: "anthropic",
    upstream: "claude-house",
    routes: ["chat", "messages"],
    pricing: { input: 1, output: 5 },
    maxOutputTokens: 64000,
  };
  const cases: [Record<string, unknown>, string][] = [
    [{ computerUse: { tool: "computer 2025" } }, "computerUse.tool"],
    [{
      computerUse: { tool: "computer_20250124", beta: "x\r\nevil: 1" },
    }, "computerUse.beta"],
    [{
      computerUse: { tool: "computer_use", environment: "ENVIRONMENT_BROWSER" },
    }, "computerUse.environment"],
    [{ features: { forcedToolChoice: "never" } }, "features.forcedToolChoice"],
    [{ contextWindow: 1000 }, "maxOutputTokens"],
    [{ sources: ["ftp://example.com"] }, "sources[0]"],
    [{ aliases: ["computer-use-preview"] }, "aliases[0]"],
    [{ aliases: ["fine", "gpt-4o"] }, "aliases[1]"],
  ];
  for (const [fields, param] of cases) {
    const refused = await put("house-claude", { ...entry, ...fields });
    assert.equal(refused.status, 400, JSON.stringify(fields));
    const { error } = await refused.json();
    assert.equal(error.param, param, error.message);
    assert.ok(error.message.includes(`"${param}"`), error.message);
  }
  const accepted = await put("house-claude", {
    ...entry,
    aliases: ["claude-house"],
    computerUse: { tool: "computer_20251124", beta: "computer-use-2025-11-24" },
    contextWindow: 200000,
    features: { forcedToolChoice: false },
    sources: [
      "https://platform.claude.com/docs/en/agents-and-tools/tool-use/computer-use-tool",
    ],
  });
  assert.equal(accepted.status, 200, await accepted.clone().text());
  // The live catalog reloads within its refresh period.
  const deadline = Date.now() + 6_000;
  let shown: ListedModel | undefined;
  while (!shown && Date.now() < deadline) {
    const got = await fetch(`${h.url}/v1/models/claude-house`, {
      headers: h.auth(),
    });
    if (got.ok) shown = await got.json();
    else {
      await got.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  assert.ok(shown, "the new model never reached GET /v1/models");
  assert.equal(shown.id, "house-claude");
  assert.deepEqual(shown.computer_use, {
    tool: "computer_20251124",
    beta: "computer-use-2025-11-24",
  });
  assert.deepEqual(shown.features, { forced_tool_choice: false });
  assert.equal(shown.context_window, 200000);
});

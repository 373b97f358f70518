import assert from "node:assert/strict";
import { billableFeatures, unpricedOn } from "./billable.ts";
import { GatewayError } from "../errors.ts";
import { DEFAULT_CATALOG } from "../state/catalog.ts";

const NO_HEADERS = new Headers();

function refusedParam(thrown: unknown): string | null | undefined {
  assert.ok(thrown instanceof GatewayError);
  assert.equal(thrown.status, 400);
  return thrown.param;
}

Deno.test("billableFeatures() reads the standard tiers as no tier and refuses a name it does not know", () => {
  for (const tier of ["auto", "default", null]) {
    assert.equal(
      billableFeatures("chat", { service_tier: tier }, NO_HEADERS).tier,
      undefined,
    );
  }
  assert.equal(
    billableFeatures("responses", { service_tier: "flex" }, NO_HEADERS).tier,
    "flex",
  );
  assert.throws(
    () => billableFeatures("chat", { service_tier: "scale" }, NO_HEADERS),
    (thrown) => refusedParam(thrown) === "service_tier",
  );
});

Deno.test("billableFeatures() holds web search for the bound the call sets, across every search tool", () => {
  const body = {
    tools: [
      { type: "web_search_20250305", name: "web_search", max_uses: 5 },
      { type: "web_search_20260209", name: "web_search_2", max_uses: 3 },
    ],
  };
  assert.equal(billableFeatures("messages", body, NO_HEADERS).webSearches, 8);
  assert.throws(
    () =>
      billableFeatures("messages", {
        tools: [{ type: "web_search_20250305", max_uses: 1e9 }],
      }, NO_HEADERS),
    (thrown) => refusedParam(thrown) === "tools[0].max_uses",
  );
});

Deno.test("billableFeatures() leaves client tools, and off switches, alone", () => {
  assert.deepEqual(
    billableFeatures("chat", {
      tools: [{ type: "function", function: { name: "f" } }],
      search_parameters: { mode: "off" },
      plugins: [],
      deferred: false,
    }, NO_HEADERS),
    { webSearches: 0, tier: undefined },
  );
  assert.deepEqual(
    billableFeatures("messages", {
      tools: [{ type: "computer_20250124", name: "computer" }],
      mcp_servers: [],
    }, NO_HEADERS),
    { webSearches: 0 },
  );
});

Deno.test("unpricedOn() names what a model has no price for", () => {
  const model = (id: string) =>
    DEFAULT_CATALOG.find((entry) => entry.id === id)!;
  const beta = billableFeatures(
    "messages",
    {},
    new Headers({ "anthropic-beta": "prompt-caching, context-1m-2025-08-07" }),
  );
  assert.equal(unpricedOn(model("claude-sonnet-4-5"), beta), undefined);
  assert.equal(
    unpricedOn(model("claude-haiku-4-5"), beta)?.param,
    "anthropic-beta",
  );
  assert.equal(
    unpricedOn(model("gpt-4o"), { webSearches: 1 })?.param,
    "tools",
  );
  assert.equal(
    unpricedOn(model("gpt-5.1"), { webSearches: 1, tier: "priority" }),
    undefined,
  );
});

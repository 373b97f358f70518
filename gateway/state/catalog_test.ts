import assert from "node:assert/strict";
import { resolveModel } from "../call/input.ts";
import {
  Catalog,
  catalogEntryByUpstream,
  CatalogEntryError,
  DEFAULT_CATALOG,
  lifecycleHeaders,
  modelStatus,
  parseCatalogEntry,
} from "./catalog.ts";
import { GatewayError } from "../errors.ts";
import type { CatalogEntry, ModelLifecycle } from "./catalog.ts";

function entry(id: string, lifecycle?: ModelLifecycle): CatalogEntry {
  return {
    id,
    provider: "anthropic",
    upstream: id,
    routes: ["chat", "messages"],
    pricing: { input: 1, output: 2 },
    maxOutputTokens: 1024,
    ...(lifecycle && { lifecycle }),
  };
}

Deno.test("modelStatus() turns at the exact instant of each date, a bare day at 00:00 UTC", () => {
  const model = entry("m", { deprecated: "2026-09-30", retires: "2026-11-30" });
  const retires = Date.UTC(2026, 10, 30);
  const deprecated = Date.UTC(2026, 8, 30);
  assert.equal(modelStatus(model, deprecated - 1), "active");
  assert.equal(modelStatus(model, deprecated), "deprecated");
  assert.equal(modelStatus(model, retires - 1), "deprecated");
  assert.equal(modelStatus(model, retires), "retired");
  assert.equal(modelStatus(entry("plain"), retires), "active");
  // An instant with an offset is that instant.
  const noon = entry("n", { retires: "2026-11-30T12:00:00+02:00" });
  assert.equal(modelStatus(noon, Date.UTC(2026, 10, 30, 9, 59)), "active");
  assert.equal(modelStatus(noon, Date.UTC(2026, 10, 30, 10)), "retired");
});

Deno.test("lifecycleHeaders() writes RFC 9745 and RFC 8594 dates and the successor link, and nothing for a model without dates", () => {
  assert.deepEqual(lifecycleHeaders(entry("plain")), {});
  assert.deepEqual(lifecycleHeaders(entry("s", { successor: "t" })), {});
  assert.deepEqual(
    lifecycleHeaders(entry("org/old model", {
      deprecated: "2026-09-30T12:34:56.789Z",
      retires: "2026-11-30T00:00:00-05:00",
      successor: "org/new",
    })),
    {
      deprecation: `@${Math.floor(Date.UTC(2026, 8, 30, 12, 34, 56) / 1000)}`,
      sunset: "Mon, 30 Nov 2026 05:00:00 GMT",
      link:
        '</v1/models/org%2Fold%20model>; rel="deprecation"; type="application/json", </v1/models/org%2Fnew>; rel="successor-version"',
    },
  );
  // Only a retirement date: Sunset, no Deprecation.
  const sunsetOnly = lifecycleHeaders(entry("x", { retires: "2030-06-01" }));
  assert.equal(sunsetOnly.deprecation, undefined);
  assert.equal(sunsetOnly.sunset, "Sat, 01 Jun 2030 00:00:00 GMT");
});

Deno.test("parseCatalogEntry() names the lifecycle field at fault", () => {
  const cases: [unknown, string][] = [
    [{ deprecated: "yesterday" }, "lifecycle.deprecated"],
    [{ retires: 20261130 }, "lifecycle.retires"],
    [{ retires: "9999-12-31T23:59:60Z" }, "lifecycle.retires"],
    [{ retires: "10000-01-01" }, "lifecycle.retires"],
    [{ reroute: "yes" }, "lifecycle.reroute"],
    [{ successor: "" }, "lifecycle.successor"],
    [{ successor: "m" }, "lifecycle.successor"],
    [
      { retires: "2026-01-01", successor: "n", reroute: true, extra: 1 },
      "lifecycle",
    ],
  ];
  for (const [lifecycle, field] of cases) {
    assert.throws(
      () => parseCatalogEntry({ ...entry("m"), lifecycle }),
      (error: unknown) =>
        error instanceof CatalogEntryError && error.field === field,
      JSON.stringify(lifecycle),
    );
  }
});

Deno.test("the shipped catalog names successors it serves", () => {
  const catalog = new Catalog(DEFAULT_CATALOG);
  for (const model of catalog.list()) {
    const successor = model.lifecycle?.successor;
    if (successor) {
      assert.ok(catalog.get(successor), `${model.id} → ${successor}`);
    }
  }
});

Deno.test("resolveModel() follows a chain of rerouted retirements, and refuses a loop or a missing successor with 410", () => {
  const retired = "2020-01-01";
  const models = new Catalog([
    entry("a", { retires: retired, successor: "b", reroute: true }),
    entry("b", { retires: retired, successor: "c", reroute: true }),
    entry("c"),
    entry("loop-1", { retires: retired, successor: "loop-2", reroute: true }),
    entry("loop-2", { retires: retired, successor: "loop-1", reroute: true }),
    entry("orphan", { retires: retired, successor: "nowhere", reroute: true }),
    entry("refused", { retires: retired, successor: "c" }),
    { ...entry("chat-only"), routes: ["chat"] },
    entry("to-chat-only", {
      retires: retired,
      successor: "chat-only",
      reroute: true,
    }),
  ]);
  const deps = {
    model: (id: string) => models.get(id),
    modelsOn: () => ["c"],
  };
  assert.equal(resolveModel(deps, "chat", "a").id, "c");
  const refusal = (id: string, pattern: RegExp, status = 410) =>
    assert.throws(
      () => resolveModel(deps, "messages", id),
      (error: unknown) =>
        error instanceof GatewayError && error.status === status &&
        pattern.test(error.message),
      id,
    );
  refusal("loop-1", /"loop-\d" was retired on 2020-01-01; use its successor/);
  refusal("orphan", /successor "nowhere" is not served here/);
  refusal(
    "refused",
    /"refused" was retired on 2020-01-01; use its successor "c"/,
  );
  refusal(
    "to-chat-only",
    /"chat-only" \(the successor of retired "to-chat-only"\) is not available on the messages route/,
    400,
  );
  // Before its date the model serves itself.
  assert.equal(
    resolveModel(deps, "chat", "refused", Date.UTC(2019, 0, 1)).id,
    "refused",
  );
});

Deno.test("parseCatalogEntry() names the computer-use, feature, context, source and alias field at fault", () => {
  const anthropic = entry("m");
  const gemini: CatalogEntry = { ...entry("g"), provider: "gemini" };
  const cases: [CatalogEntry, Record<string, unknown>, string][] = [
    [anthropic, { computerUse: {} }, "computerUse.tool"],
    [anthropic, { computerUse: { tool: "Computer Tool" } }, "computerUse.tool"],
    [anthropic, { computerUse: { tool: "computer", x: 1 } }, "computerUse"],
    [
      anthropic,
      { computerUse: { tool: "computer", beta: "a b\r\nx: y" } },
      "computerUse.beta",
    ],
    [{ ...anthropic, provider: "openai" }, {
      computerUse: { tool: "computer", beta: "computer-use-2025-11-24" },
    }, "computerUse.beta"],
    [anthropic, {
      computerUse: { tool: "computer_use", environment: "ENVIRONMENT_BROWSER" },
    }, "computerUse.environment"],
    [gemini, {
      computerUse: { tool: "computer_use", environment: "browser" },
    }, "computerUse.environment"],
    [gemini, {
      computerUse: {
        tool: "computer_use",
        environment: "ENVIRONMENT_DESKTOP",
        environments: ["ENVIRONMENT_BROWSER"],
      },
    }, "computerUse.environment"],
    [gemini, {
      computerUse: { tool: "computer_use", environments: [] },
    }, "computerUse.environments"],
    [
      anthropic,
      { features: { forcedToolChoice: "no" } },
      "features.forcedToolChoice",
    ],
    [anthropic, { features: { unknown: true } }, "features"],
    [anthropic, { contextWindow: 0 }, "contextWindow"],
    [anthropic, { contextWindow: 512 }, "maxOutputTokens"],
    [anthropic, { sources: [] }, "sources"],
    [anthropic, { sources: ["http://example.com/docs"] }, "sources[0]"],
    [anthropic, { sources: ["javascript:alert(1)"] }, "sources[0]"],
    [anthropic, { aliases: ["m"] }, "aliases[0]"],
    [anthropic, { aliases: ["a", "b", "a"] }, "aliases[2]"],
    [anthropic, { aliases: [""] }, "aliases[0]"],
  ];
  for (const [base, fields, field] of cases) {
    assert.throws(
      () => parseCatalogEntry({ ...base, ...fields }),
      (error: unknown) =>
        error instanceof CatalogEntryError && error.field === field,
      `${JSON.stringify(fields)} → ${field}`,
    );
  }
  const accepted = parseCatalogEntry({
    ...gemini,
    aliases: ["g-provider-name"],
    computerUse: {
      tool: "computer_use",
      environment: "ENVIRONMENT_DESKTOP",
      environments: ["ENVIRONMENT_BROWSER", "ENVIRONMENT_DESKTOP"],
    },
    contextWindow: 1_000_000,
    features: { forcedToolChoice: false },
    sources: ["https://ai.google.dev/gemini-api/docs/computer-use"],
  });
  assert.equal(accepted.computerUse?.environment, "ENVIRONMENT_DESKTOP");
});

Deno.test("Catalog.get() finds a model by an alias, and the catalog refuses an alias another model answers to", () => {
  const catalog = new Catalog([
    { ...entry("operator"), aliases: ["computer-use-preview"] },
    entry("other"),
  ]);
  assert.equal(catalog.get("computer-use-preview")?.id, "operator");
  assert.equal(catalog.get("operator")?.id, "operator");
  // The listing names each model once, under its id.
  assert.deepEqual(catalog.list().map((model) => model.id), [
    "operator",
    "other",
  ]);
  assert.throws(
    () => new Catalog([entry("a"), { ...entry("b"), aliases: ["a"] }]),
    /alias "a" of model "b" already names model "a"/,
  );
  assert.throws(
    () =>
      new Catalog([
        { ...entry("a"), aliases: ["x"] },
        { ...entry("b"), aliases: ["x"] },
      ]),
    /alias "x" of model "b" already names model "a"/,
  );
  // replace() takes the new aliases and drops the old ones.
  catalog.replace([entry("operator")]);
  assert.equal(catalog.get("computer-use-preview"), undefined);
});

Deno.test("catalogEntryByUpstream() finds a model by the provider and the id sent upstream", () => {
  assert.equal(
    catalogEntryByUpstream("openai", "computer-use-preview")?.id,
    "operator",
  );
  assert.equal(
    catalogEntryByUpstream("gemini", "gemini-2.5-computer-use-preview-10-2025")
      ?.computerUse?.tool,
    "computer_use",
  );
  // Another provider's model of the same name is not it.
  assert.equal(
    catalogEntryByUpstream("anthropic", "computer-use-preview"),
    undefined,
  );
  assert.equal(
    catalogEntryByUpstream("openai", "x", [{
      ...entry("x"),
      provider: "openai",
    }])
      ?.id,
    "x",
  );
});

Deno.test("the shipped catalog cites a source for every computer-use model and rule, and sends a beta exactly with the beta tools", () => {
  const catalog = new Catalog(DEFAULT_CATALOG);
  const withComputerUse = catalog.list().filter((model) => model.computerUse);
  assert.ok(withComputerUse.length >= 10);
  for (const model of catalog.list()) {
    if (model.computerUse || model.features) {
      assert.ok(model.sources?.length, `${model.id} cites its sources`);
    }
    const computerUse = model.computerUse;
    if (model.provider !== "anthropic" || !computerUse) continue;
    // Anthropic's GA toolset takes no beta header; every earlier version does.
    assert.equal(
      computerUse.beta === undefined,
      computerUse.tool === "computer_toolset_20260801",
      model.id,
    );
  }
  // The facts the issue names, as the providers document them.
  const facts = (id: string) => catalog.get(id)!;
  assert.deepEqual(facts("claude-sonnet-5-5").features, {
    disabledThinking: false,
    forcedToolChoice: false,
    thinkingBetweenTools: true,
  });
  assert.deepEqual(facts("claude-opus-4-5").computerUse, {
    tool: "computer_20251124",
    beta: "computer-use-2025-11-24",
  });
  assert.deepEqual(facts("computer-use-preview").computerUse, {
    tool: "computer_use_preview",
  });
  assert.equal(facts("gpt-5.4").computerUse?.tool, "computer");
  assert.equal(facts("claude-sonnet-4-5").lifecycle?.retires, "2026-11-30");
  assert.equal(facts("claude-opus-4-1").lifecycle?.retires, "2026-08-05");
});

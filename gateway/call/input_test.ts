import assert from "node:assert/strict";
import { GatewayError } from "../errors.ts";
import type { CatalogEntry } from "../state/catalog.ts";
import type { RouteName } from "../conventions.ts";
import { anthropic } from "../upstream/providers/anthropic.ts";
import { openai } from "../upstream/providers/openai.ts";
import type { CallRequest } from "./deps.ts";
import {
  buildExchange,
  fallbackCandidates,
  jsonObject,
  outputLimit,
  parseCall,
  resolveModel,
} from "./input.ts";

const PRICE = { input: 1, output: 2 };

/** A small catalog: lookups over plain entries. */
function catalogOf(entries: CatalogEntry[]) {
  const byId = new Map(entries.map((entry) => [entry.id, entry]));
  return {
    model: (id: string) => byId.get(id),
    modelsOn: (route: RouteName) =>
      entries.filter((entry) => entry.routes.includes(route)).map((entry) =>
        entry.id
      ),
  };
}

function entry(id: string, extra: Partial<CatalogEntry> = {}): CatalogEntry {
  return {
    id,
    provider: "openai",
    upstream: id,
    routes: ["chat", "responses"],
    pricing: PRICE,
    maxOutputTokens: 4_096,
    ...extra,
  };
}

const NOW = Date.UTC(2026, 5, 1);

const catalog = catalogOf([
  entry("gpt-a", { alternates: ["gpt-b", "gone", "claude-only"] }),
  entry("gpt-b"),
  entry("gone", {
    lifecycle: { retires: "2026-01-01", successor: "gpt-b" },
  }),
  entry("rerouted", {
    lifecycle: { retires: "2026-01-01", successor: "gpt-b", reroute: true },
  }),
  entry("loop-1", {
    lifecycle: { retires: "2026-01-01", successor: "loop-2", reroute: true },
  }),
  entry("loop-2", {
    lifecycle: { retires: "2026-01-01", successor: "loop-1", reroute: true },
  }),
  entry("claude-only", { provider: "anthropic", routes: ["messages"] }),
]);

function requestOf(
  route: RouteName,
  body: unknown,
  extra: Partial<CallRequest> = {},
): CallRequest {
  return {
    route,
    caller: { id: "caller-1" } as CallRequest["caller"],
    headers: new Headers(),
    bodyText: typeof body === "string" ? body : JSON.stringify(body),
    query: {},
    signal: new AbortController().signal,
    requestId: "req-1",
    traceId: "trace-1",
    ...extra,
  };
}

/** The error `fn` throws, which must be a GatewayError. */
function thrownBy(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof GatewayError, String(error));
    return error;
  }
  assert.fail("expected a GatewayError");
}

Deno.test("jsonObject() takes one JSON object and refuses anything else with a 400", () => {
  assert.deepEqual(jsonObject('{"a":1}'), { a: 1 });
  assert.equal(
    thrownBy(() => jsonObject("{oops")).message,
    "Request body is not valid JSON",
  );
  for (const text of ["[1]", "null", "3", '"x"']) {
    const error = thrownBy(() => jsonObject(text));
    assert.equal(error.status, 400);
    assert.equal(error.message, "Request body must be a JSON object");
  }
});

Deno.test("parseCall() reads a chat body: its model, stream, the larger output limit, answers and predicted tokens", () => {
  const parsed = parseCall(requestOf("chat", {
    model: "gpt-a",
    messages: [{ role: "user", content: "hi" }],
    stream: true,
    max_tokens: 50,
    max_completion_tokens: 80,
    n: 3,
  }));
  assert.equal(parsed.model, "gpt-a");
  assert.equal(parsed.stream, true);
  assert.equal(parsed.maxOutputTokens, 80);
  assert.equal(parsed.choices, 3);
  assert.equal(parsed.predictedTokens, 0);
  const predicted = parseCall(requestOf("chat", {
    model: "gpt-a",
    messages: [{ role: "user", content: "hi" }],
    prediction: { type: "content", content: "x".repeat(300) },
  }));
  assert.equal(predicted.stream, false);
  assert.equal(predicted.maxOutputTokens, undefined);
  assert.equal(predicted.choices, 1);
  assert.ok(predicted.predictedTokens >= 100, `${predicted.predictedTokens}`);
});

Deno.test("parseCall() takes Gemini's model and stream from the path and its limit and candidates from generationConfig", () => {
  const parsed = parseCall(requestOf(
    "gemini",
    {
      contents: [{ parts: [{ text: "hi" }] }],
      generationConfig: { maxOutputTokens: 64, candidateCount: 2 },
    },
    { pathModel: "gemini-x", pathStream: true },
  ));
  assert.equal(parsed.model, "gemini-x");
  assert.equal(parsed.stream, true);
  assert.equal(parsed.maxOutputTokens, 64);
  assert.equal(parsed.choices, 2);
});

Deno.test("parseCall() refuses a body its route's schema refuses with a 400 naming the field", () => {
  const error = thrownBy(() =>
    parseCall(requestOf("messages", {
      model: "claude-only",
      messages: [{ role: "user", content: "hi" }],
    }))
  );
  assert.equal(error.status, 400);
  assert.equal(error.code, "invalid_request");
  assert.match(error.message, /^Invalid "max_tokens": /);
  const tooMany = thrownBy(() =>
    parseCall(requestOf("gemini", {
      contents: [{ parts: [] }],
      generationConfig: { candidateCount: 9 },
    }, { pathModel: "g" }))
  );
  assert.equal(tooMany.status, 400);
  assert.match(tooMany.message, /candidateCount/);
});

Deno.test("resolveModel() finds a model on its route, and refuses an unknown one (404) or one off the route (400)", () => {
  assert.equal(resolveModel(catalog, "chat", "gpt-a", NOW).id, "gpt-a");
  const unknown = thrownBy(() => resolveModel(catalog, "chat", "nope", NOW));
  assert.equal(unknown.status, 404);
  assert.equal(unknown.code, "model_not_found");
  const offRoute = thrownBy(() =>
    resolveModel(catalog, "messages", "gpt-a", NOW)
  );
  assert.equal(offRoute.status, 400);
  assert.equal(offRoute.code, "model_not_on_route");
  assert.match(offRoute.message, /The messages route serves claude-only/);
});

Deno.test("resolveModel() refuses a retired model with 410 naming its successor, or serves the successor when rerouted, and stops at a loop", () => {
  const retired = thrownBy(() => resolveModel(catalog, "chat", "gone", NOW));
  assert.equal(retired.status, 410);
  assert.equal(retired.code, "model_retired");
  assert.match(retired.message, /use its successor "gpt-b" instead/);
  assert.equal(resolveModel(catalog, "chat", "rerouted", NOW).id, "gpt-b");
  // Before its retirement date the model serves itself.
  assert.equal(
    resolveModel(catalog, "chat", "gone", Date.UTC(2025, 0, 1)).id,
    "gone",
  );
  assert.equal(
    thrownBy(() => resolveModel(catalog, "chat", "loop-1", NOW)).status,
    410,
  );
});

Deno.test("fallbackCandidates() lists the model, its live alternates on the route, then the caller's models, once each", () => {
  const parsed = parseCall(requestOf("chat", {
    model: "gpt-a",
    messages: [{ role: "user", content: "hi" }],
    models: ["gpt-b", "rerouted"],
  }));
  // "gone" is retired and "claude-only" off the route: skipped; the
  // caller's "rerouted" resolves to gpt-b, already listed.
  assert.deepEqual(
    fallbackCandidates(catalog, "chat", parsed, NOW).map((entry) => entry.id),
    ["gpt-a", "gpt-b"],
  );
});

Deno.test("fallbackCandidates() refuses a bad models list, and a caller's model that does not resolve", () => {
  const withModels = (models: unknown) =>
    parseCall(requestOf("chat", {
      model: "gpt-b",
      messages: [{ role: "user", content: "hi" }],
      models,
    }));
  const tooMany = thrownBy(() =>
    fallbackCandidates(catalog, "chat", withModels(Array(9).fill("gpt-a")), NOW)
  );
  assert.equal(tooMany.status, 400);
  assert.equal(tooMany.param, "models");
  assert.equal(
    thrownBy(() =>
      fallbackCandidates(catalog, "chat", withModels("gpt-a"), NOW)
    )
      .status,
    400,
  );
  assert.equal(
    thrownBy(() =>
      fallbackCandidates(catalog, "chat", withModels(["nope"]), NOW)
    ).status,
    404,
  );
});

Deno.test("outputLimit() caps the caller's limit at the model's", () => {
  const model = entry("m", { maxOutputTokens: 1_000 });
  assert.equal(outputLimit(model, undefined), 1_000);
  assert.equal(outputLimit(model, 200), 200);
  assert.equal(outputLimit(model, 5_000), 1_000);
});

Deno.test("buildExchange() builds the provider's upstream request, and a body its translation refuses is the caller's 400", () => {
  const call = {
    route: "chat" as const,
    entry: entry("gpt-a", { upstream: "gpt-4o-mini" }),
    body: { model: "gpt-a", messages: [{ role: "user", content: "hi" }] },
    stream: false,
    maxOutputTokens: 100,
    query: {},
    headers: new Headers(),
  };
  const exchange = buildExchange(openai, call);
  assert.equal(exchange.path, "/chat/completions");
  assert.equal((exchange.body as { model: string }).model, "gpt-4o-mini");
  // Anthropic takes no response_format json_object: the translator refuses it.
  const error = thrownBy(() =>
    buildExchange(anthropic, {
      ...call,
      entry: entry("claude-x", { provider: "anthropic", upstream: "claude-x" }),
      body: { ...call.body, response_format: { type: "json_object" } },
    })
  );
  assert.equal(error.status, 400);
  assert.equal(error.code, "invalid_request");
  assert.equal(error.param, "response_format.type");
  assert.match(
    error.message,
    /Anthropic only constrains output to a JSON schema/,
  );
});

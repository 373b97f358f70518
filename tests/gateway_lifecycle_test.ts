/**
 * Models age: a catalog entry's deprecation and retirement dates are shown
 * on `/models`, a call to a deprecated model carries `Deprecation`, `Sunset`
 * and a `Link` to the successor, a retired model's call gets 410 naming the
 * successor in the route's convention and is not charged, and where the
 * operator set `reroute` it is served by the successor at the successor's
 * price. Bad lifecycle input on `PUT /admin/models/{id}` is a 400 naming
 * the field. A gateway in front of the simulator (which answers any model
 * id); the official SDKs as clients where they expose headers.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { CATALOG_REFRESH_MS } from "../gateway/state/live_catalog.ts";
import { type Harness, startHarness } from "./_gateway_harness.ts";

const TOKEN = "lifecycle-admin-token-0123";

const DEPRECATED_AT = "2026-01-01";
const DEPRECATED_EPOCH_SECONDS = 1767225600;
const RETIRES_LATER = "2030-06-01";
const RETIRES_LATER_HTTP_DATE = "Sat, 01 Jun 2030 00:00:00 GMT";
const RETIRED_ON = "2020-01-01";

/** An Anthropic model entry the simulator serves under any id. */
function anthropicEntry(
  pricing: { input: number; output: number },
  lifecycle?: Record<string, unknown>,
): Record<string, unknown> {
  return {
    provider: "anthropic",
    upstream: "claude-haiku-4-5",
    routes: ["chat", "messages"],
    pricing,
    maxOutputTokens: 4096,
    ...(lifecycle && { lifecycle }),
  };
}

function admin(h: Harness, path: string, init: RequestInit = {}) {
  return fetch(h.url + path, {
    ...init,
    headers: {
      authorization: `Bearer ${TOKEN}`,
      "content-type": "application/json",
    },
  });
}

/** PUTs every entry, then waits until the gateway serves the last one as given. */
async function putModels(
  h: Harness,
  entries: Record<string, Record<string, unknown>>,
): Promise<void> {
  for (const [id, entry] of Object.entries(entries)) {
    const response = await admin(h, `/admin/models/${id}`, {
      method: "PUT",
      body: JSON.stringify(entry),
    });
    assert.equal(response.status, 200, await response.text());
  }
  const last = Object.keys(entries).at(-1)!;
  const deadline = Date.now() + CATALOG_REFRESH_MS * 3;
  for (;;) {
    const response = await fetch(`${h.url}/v1/models/${last}`);
    const body = await response.json();
    const wantsLifecycle = entries[last].lifecycle !== undefined;
    if (
      response.status === 200 &&
      (body.lifecycle !== undefined) === wantsLifecycle
    ) return;
    assert.ok(Date.now() < deadline, `"${last}" never reached the catalog`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function chat(h: Harness, model: string, stream = false): Promise<Response> {
  return h.post("/v1/chat/completions", {
    model,
    max_tokens: 16,
    stream,
    messages: [{ role: "user", content: "hello" }],
  });
}

async function balance(h: Harness): Promise<number> {
  const response = await fetch(`${h.url}/v1/credits`, { headers: h.auth() });
  return (await response.json()).balance;
}

Deno.test("the shipped catalog dates claude-sonnet-4-5's end and lists its successor, on /models and /models/{id}", async () => {
  await using h = await startHarness();
  const list = await (await fetch(`${h.url}/v1/models`)).json();
  const byId = new Map(
    (list.data as { id: string }[]).map((m) => [m.id, m]),
  );
  const sonnet = byId.get("claude-sonnet-4-5") as Record<string, unknown>;
  const expected = {
    status: Date.now() >= Date.UTC(2026, 10, 30) ? "retired" : "deprecated",
    deprecated: "2026-09-30",
    retires: "2026-11-30",
    successor: "claude-sonnet-5-5",
  };
  assert.deepEqual(sonnet.lifecycle, expected);
  const one = await (await fetch(`${h.url}/v1/models/claude-sonnet-4-5`))
    .json();
  assert.deepEqual(one.lifecycle, expected);
  // The successor is served, at its own prices, with no end in sight.
  const successor = byId.get("claude-sonnet-5-5") as Record<string, unknown>;
  assert.deepEqual(
    (successor.pricing as Record<string, number>).input,
    2,
  );
  assert.equal(successor.lifecycle, undefined);
  // A model without dates shows none.
  assert.equal(
    (byId.get("claude-haiku-4-5") as Record<string, unknown>).lifecycle,
    undefined,
  );
});

Deno.test("a deprecated model's calls carry Deprecation, Sunset and a Link to the successor, on every route and in streams", async () => {
  await using h = await startHarness({
    env: { GATEWAY_ADMIN_TOKEN: TOKEN },
  });
  await putModels(h, {
    "old-claude": anthropicEntry({ input: 1, output: 2 }, {
      deprecated: DEPRECATED_AT,
      retires: RETIRES_LATER,
      successor: "claude-sonnet-5-5",
    }),
  });
  const check = (headers: Headers, how: string) => {
    assert.equal(
      headers.get("deprecation"),
      `@${DEPRECATED_EPOCH_SECONDS}`,
      how,
    );
    assert.equal(headers.get("sunset"), RETIRES_LATER_HTTP_DATE, how);
    const link = headers.get("link") ?? "";
    assert.match(
      link,
      /<\/v1\/models\/claude-sonnet-5-5>; rel="successor-version"/,
      how,
    );
    assert.match(link, /<\/v1\/models\/old-claude>; rel="deprecation"/, how);
    assert.equal(headers.get("x-gateway-model"), "old-claude", how);
  };

  for (const stream of [false, true]) {
    const response = await chat(h, "old-claude", stream);
    assert.equal(response.status, 200);
    check(response.headers, `chat, stream ${stream}`);
    await response.body?.cancel();
  }
  const messages = await h.post("/v1/messages", {
    model: "old-claude",
    max_tokens: 16,
    messages: [{ role: "user", content: "hello" }],
  });
  assert.equal(messages.status, 200);
  check(messages.headers, "messages");
  await messages.body?.cancel();

  // The official SDKs hand the headers to their callers.
  const openai = new OpenAI({
    baseURL: `${h.url}/v1`,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
  const viaOpenAI = await openai.chat.completions.create({
    model: "old-claude",
    max_tokens: 16,
    messages: [{ role: "user", content: "hello" }],
  }).withResponse();
  check(viaOpenAI.response.headers, "OpenAI SDK");
  const anthropic = new Anthropic({
    baseURL: h.url,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
  const viaAnthropic = await anthropic.messages.create({
    model: "old-claude",
    max_tokens: 16,
    messages: [{ role: "user", content: "hello" }],
  }).withResponse();
  check(viaAnthropic.response.headers, "Anthropic SDK");

  // A model with no dates gets none of these headers.
  const plain = await chat(h, "claude-haiku-4-5");
  assert.equal(plain.status, 200);
  assert.equal(plain.headers.get("deprecation"), null);
  assert.equal(plain.headers.get("sunset"), null);
  await plain.body?.cancel();
});

Deno.test("a retired model's call gets 410 naming the successor in each route's convention, forwards nothing and charges nothing", async () => {
  await using h = await startHarness({
    env: { GATEWAY_ADMIN_TOKEN: TOKEN },
  });
  await putModels(h, {
    "gemini-gone": {
      provider: "gemini",
      upstream: "gemini-2.5-computer-use-preview-10-2025",
      routes: ["gemini"],
      pricing: { input: 1, output: 2 },
      maxOutputTokens: 4096,
      lifecycle: { retires: RETIRED_ON, successor: "gemini-3-pro-preview" },
    },
    "gone-claude": anthropicEntry({ input: 1, output: 2 }, {
      deprecated: "2019-06-01",
      retires: RETIRED_ON,
      successor: "claude-sonnet-5-5",
    }),
  });
  const before = await balance(h);
  const requestsBefore = h.sim.requests.length;

  const viaChat = await chat(h, "gone-claude");
  assert.equal(viaChat.status, 410);
  const chatError = (await viaChat.json()).error;
  assert.equal(chatError.code, "model_retired");
  assert.equal(chatError.param, "model");
  assert.match(chatError.message, /"gone-claude" was retired on 2020-01-01/);
  assert.match(chatError.message, /"claude-sonnet-5-5"/);
  // The refusal carries the same lifecycle headers an answered call does.
  assert.equal(
    viaChat.headers.get("sunset"),
    new Date(RETIRED_ON).toUTCString(),
  );
  assert.equal(
    viaChat.headers.get("deprecation"),
    `@${Date.parse("2019-06-01") / 1000}`,
  );
  assert.match(
    viaChat.headers.get("link") ?? "",
    /<\/v1\/models\/claude-sonnet-5-5>; rel="successor-version"/,
  );

  const viaMessages = await h.post("/v1/messages", {
    model: "gone-claude",
    max_tokens: 16,
    stream: true,
    messages: [{ role: "user", content: "hello" }],
  });
  assert.equal(viaMessages.status, 410);
  const messagesError = await viaMessages.json();
  assert.equal(messagesError.type, "error");
  assert.match(messagesError.error.message, /"claude-sonnet-5-5"/);

  const viaGemini = await h.post(
    "/v1beta/models/gemini-gone:generateContent",
    { contents: [{ role: "user", parts: [{ text: "hello" }] }] },
  );
  assert.equal(viaGemini.status, 410);
  const geminiError = (await viaGemini.json()).error;
  assert.equal(geminiError.code, 410);
  assert.match(geminiError.message, /"gemini-3-pro-preview"/);

  // The SDKs see the status and the message.
  const anthropic = new Anthropic({
    baseURL: h.url,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
  await assert.rejects(
    anthropic.messages.create({
      model: "gone-claude",
      max_tokens: 16,
      messages: [{ role: "user", content: "hello" }],
    }),
    (error: unknown) =>
      error instanceof Anthropic.APIError && error.status === 410 &&
      /claude-sonnet-5-5/.test(error.message),
  );
  const openai = new OpenAI({
    baseURL: `${h.url}/v1`,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
  await assert.rejects(
    openai.chat.completions.create({
      model: "gone-claude",
      messages: [{ role: "user", content: "hello" }],
    }),
    (error: unknown) =>
      error instanceof OpenAI.APIError && error.status === 410 &&
      error.code === "model_retired",
  );

  assert.equal(h.sim.requests.length, requestsBefore, "nothing forwarded");
  assert.equal(await balance(h), before, "nothing charged");
  // /models says so.
  const listed = await (await fetch(`${h.url}/v1/models/gone-claude`)).json();
  assert.equal(listed.lifecycle.status, "retired");
});

Deno.test("with reroute, a retired model's call is served by its successor, says so, and costs the successor's price, even for a key allowed only the retired model", async () => {
  await using h = await startHarness({
    env: { GATEWAY_ADMIN_TOKEN: TOKEN },
  });
  await putModels(h, {
    "cheap-successor": anthropicEntry({ input: 1, output: 2 }),
    "dear-retired": anthropicEntry({ input: 500, output: 1000 }, {
      retires: RETIRED_ON,
      successor: "cheap-successor",
      reroute: true,
    }),
  });
  const response = await chat(h, "dear-retired");
  assert.equal(response.status, 200, await response.clone().text());
  assert.equal(response.headers.get("x-gateway-model"), "cheap-successor");
  assert.equal(
    response.headers.get("sunset"),
    "Wed, 01 Jan 2020 00:00:00 GMT",
  );
  assert.match(
    response.headers.get("link") ?? "",
    /<\/v1\/models\/cheap-successor>; rel="successor-version"/,
  );
  const body = await response.json();
  const { prompt_tokens, completion_tokens } = body.usage;
  // 1 and 2 USD per million tokens are 1 and 2 micro-USD per token.
  const expectedMicros = prompt_tokens * 1 + completion_tokens * 2;
  assert.equal(
    response.headers.get("x-gateway-cost"),
    (expectedMicros / 1e6).toFixed(6),
  );

  // A key whose allowlist names only the retired model is still served.
  const patch = await admin(h, `/admin/keys/${h.caller.id}`, {
    method: "PATCH",
    body: JSON.stringify({ limits: { models: ["dear-retired"] } }),
  });
  assert.equal(patch.status, 200, await patch.text());
  const deadline = Date.now() + 5_000;
  for (;;) {
    const allowed = await chat(h, "dear-retired");
    const refused = await chat(h, "claude-haiku-4-5");
    await allowed.body?.cancel();
    await refused.body?.cancel();
    if (refused.status === 403) {
      assert.equal(allowed.status, 200);
      assert.equal(allowed.headers.get("x-gateway-model"), "cheap-successor");
      break;
    }
    assert.ok(Date.now() < deadline, "the allowlist never applied");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});

Deno.test("PUT /admin/models/{id} refuses bad lifecycle input with 400 naming the field", async () => {
  await using h = await startHarness({
    env: { GATEWAY_ADMIN_TOKEN: TOKEN },
  });
  const cases: [Record<string, unknown>, string][] = [
    [{ retires: "30/11/2026" }, "lifecycle.retires"],
    [{ deprecated: "2026-02-30" }, "lifecycle.deprecated"],
    [{ retires: "1066-10-14" }, "lifecycle.retires"],
    [{ retires: "2026-11-30T00:00:00" }, "lifecycle.retires"],
    [{ deprecated: "2026-12-01", retires: "2026-11-30" }, "lifecycle.retires"],
    [{ retires: "2026-11-30", reroute: true }, "lifecycle.reroute"],
    [{ successor: "x".repeat(300) }, "lifecycle.successor"],
    [{ successor: "self-model" }, "lifecycle.successor"],
    [{ sunset: "2026-11-30" }, "lifecycle"],
  ];
  for (const [lifecycle, field] of cases) {
    const response = await admin(h, "/admin/models/self-model", {
      method: "PUT",
      body: JSON.stringify(anthropicEntry({ input: 1, output: 2 }, lifecycle)),
    });
    const text = await response.text();
    assert.equal(response.status, 400, `${JSON.stringify(lifecycle)}: ${text}`);
    assert.equal(JSON.parse(text).error.param, field, text);
  }
  // A day or an instant with its offset are both taken.
  const good = await admin(h, "/admin/models/self-model", {
    method: "PUT",
    body: JSON.stringify(anthropicEntry({ input: 1, output: 2 }, {
      deprecated: "2026-09-30T17:00:00+02:00",
      retires: "2026-11-30",
      successor: "claude-sonnet-5-5",
      reroute: true,
    })),
  });
  assert.equal(good.status, 200, await good.text());
});

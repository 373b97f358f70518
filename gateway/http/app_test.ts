import assert from "node:assert/strict";
import { createGateway, type GatewayApp } from "./app.ts";
import { parseConfig } from "../config.ts";

async function withGateway(
  test: (app: GatewayApp) => Promise<void>,
): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  const app = createGateway({ config: parseConfig(), kv, log: () => {} });
  try {
    await test(app);
  } finally {
    await app.flush();
    kv.close();
  }
}

/** The convention an error body is written in. */
function conventionOf(body: Record<string, unknown>): string {
  const error = body.error as Record<string, unknown>;
  if (body.type === "error") return "anthropic";
  if (typeof error.status === "string") return "google";
  assert.equal(typeof error.type, "string");
  return "openai";
}

Deno.test("createGateway() answers each route's errors in its convention, count_tokens and unknown subpaths included", async () => {
  await withGateway(async (app) => {
    const cases: [string, number, string][] = [
      ["/v1/messages", 401, "anthropic"],
      ["/v1/messages/count_tokens", 401, "anthropic"],
      ["/messages/batches", 404, "anthropic"],
      ["/v1beta/models/gemini-2.5-pro:generateContent", 401, "google"],
      ["/models/x:countTokens", 401, "google"],
      ["/v1/models/x:embedContent", 401, "google"],
      ["/v1/responses", 401, "openai"],
      ["/v1/chat/completions", 401, "openai"],
    ];
    for (const [path, status, convention] of cases) {
      const response = await app.request(path, { method: "POST", body: "{}" });
      assert.equal(response.status, status, path);
      assert.equal(conventionOf(await response.json()), convention, path);
    }
  });
});

Deno.test("createGateway() answers a path no route matched in the OpenAI convention", async () => {
  await withGateway(async (app) => {
    const response = await app.request("/v1/completions", { method: "POST" });
    assert.equal(response.status, 404);
    const body = await response.json();
    assert.equal(conventionOf(body), "openai");
    assert.equal(body.error.message, 'No route "POST /v1/completions"');
    assert.ok(response.headers.get("x-request-id")?.startsWith("req_"));
  });
});

Deno.test("createGateway() answers a doubled prefix with a 404 that says so, in the convention of the route meant", async () => {
  await withGateway(async (app) => {
    const messages = await app.request("/v1/v1/messages", { method: "POST" });
    assert.equal(messages.status, 404);
    const body = await messages.json();
    assert.equal(conventionOf(body), "anthropic");
    assert.match(body.error.message, /the path repeats "\/v1"/);
    const gemini = await app.request(
      "/v1beta/v1beta/models/gemini-2.5-pro:generateContent",
      { method: "POST" },
    );
    assert.equal(gemini.status, 404);
    assert.equal(conventionOf(await gemini.json()), "google");
    const chat = await app.request("/v1/v1/chat/completions", {
      method: "POST",
    });
    assert.equal(conventionOf(await chat.json()), "openai");
  });
});

Deno.test("createGateway() answers the models listing's errors in the OpenAI convention", async () => {
  await withGateway(async (app) => {
    const response = await app.request("/v1/models/no-such-model");
    assert.equal(response.status, 404);
    const body = await response.json();
    assert.equal(conventionOf(body), "openai");
    assert.equal(body.error.code, "model_not_found");
  });
});

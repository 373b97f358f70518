/**
 * What a first-time user ran into: models of providers without keys, a base
 * URL that doubles `/v1`, the Gemini route's model rule, admin dates, and the
 * address the gateway says it listens on.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { createGateway } from "../gateway/http/app.ts";
import { createCaller } from "../gateway/state/callers.ts";
import { parseConfig } from "../gateway/config.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { startHarness } from "./_gateway_harness.ts";
import { freePort } from "./_ports.ts";

const ROOT = new URL("../", import.meta.url).pathname;

Deno.test("GET /models marks models whose provider has no key as unavailable and says how to enable them", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const app = createGateway({
      config: parseConfig({ env: { OPENAI_API_KEYS: "sk-only-openai" } }),
      kv,
    });
    const { data } = await (await app.request("/v1/models")).json();
    const gpt = data.find((m: { id: string }) => m.id === "gpt-4o-mini");
    const claude = data.find((m: { id: string }) =>
      m.id === "claude-haiku-4-5"
    );
    assert.equal(gpt.available, true);
    assert.equal(gpt.unavailable_reason, undefined);
    assert.equal(claude.available, false);
    assert.match(claude.unavailable_reason, /ANTHROPIC_API_KEYS/);
  } finally {
    kv.close();
  }
});

Deno.test("the Anthropic SDK with a base URL ending in /v1 gets a 404 in Anthropic's convention that says to drop it", async () => {
  await using h = await startHarness();
  const client = new Anthropic({
    baseURL: `${h.url}/v1`,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
  await assert.rejects(
    client.messages.create({
      model: "claude-haiku-4-5",
      max_tokens: 16,
      messages: [{ role: "user", content: "hi" }],
    }),
    (error: unknown) => {
      assert.ok(error instanceof Anthropic.NotFoundError);
      assert.match(String(error.message), /the path repeats .+\/v1/);
      assert.match(String(error.message), /http:\/\/localhost:8080/);
      return true;
    },
  );
  // The root works.
  const right = new Anthropic({ baseURL: h.url, apiKey: h.caller.key });
  const message = await right.messages.create({
    model: "claude-haiku-4-5",
    max_tokens: 16,
    messages: [{ role: "user", content: "hi" }],
  });
  assert.equal(message.type, "message");
});

Deno.test("a chat model on the Gemini route gets a 400 naming the route's models and the chat route", async () => {
  await using h = await startHarness();
  const response = await h.post(
    "/v1beta/models/gemini-2.5-pro:generateContent",
    { contents: [{ parts: [{ text: "hi" }] }] },
  );
  assert.equal(response.status, 400);
  const { error } = await response.json();
  assert.equal(error.status, "INVALID_ARGUMENT");
  assert.match(error.message, /serves gemini-2.5-computer-use-preview/);
  assert.match(error.message, /POST \/v1\/chat\/completions/);
});

Deno.test("admin dates are ISO 8601, as the CLI prints them", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const token = "admin-token-0123456789";
    const app = createGateway({
      config: parseConfig({ env: { GATEWAY_ADMIN_TOKEN: token } }),
      kv,
    });
    const caller = await createCaller(kv, {
      name: "dated",
      creditsMicros: usdToMicros(1),
    });
    const response = await app.request(`/admin/keys/${caller.id}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const body = await response.json();
    assert.match(body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  } finally {
    kv.close();
  }
});

Deno.test("deno task start on every interface says so, and how to reach it locally", async () => {
  const port = freePort();
  const process = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "gateway/main.ts"],
    cwd: ROOT,
    env: { PORT: String(port), GATEWAY_KV_PATH: ":memory:", NO_COLOR: "1" },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const reader = process.stderr.pipeThrough(new TextDecoderStream())
    .getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  process.kill("SIGTERM");
  await reader.cancel();
  await process.status;
  assert.match(text, new RegExp(`every interface, port ${port}`));
  assert.match(text, new RegExp(`http://localhost:${port}`));
  assert.match(text, /HOST=127\.0\.0\.1/);
});

/**
 * `GET /metrics`: the Prometheus text format behind the admin token, with
 * the calls, tokens, cost, latency, key pool and KV commits the gateway saw.
 */
import assert from "node:assert/strict";
import { startHarness } from "./_gateway_harness.ts";
import { callBody, readSse } from "./_gateway_routes.ts";

const TOKEN = "metrics-admin-token-0123";

Deno.test("GET /metrics answers the admin token with Prometheus text of the calls it served, and nobody else", async () => {
  await using h = await startHarness({
    env: { GATEWAY_ADMIN_TOKEN: TOKEN },
    sim: { behaviour: { usage: { inputTokens: 100, outputTokens: 20 } } },
  });
  for (let i = 0; i < 3; i++) {
    const response = await h.post(
      "/v1/chat/completions",
      callBody("chat", "gpt-4o-mini", false),
    );
    await response.body?.cancel();
  }
  const streamed = await h.post(
    "/v1/chat/completions",
    callBody("chat", "claude-haiku-4-5", true),
  );
  await readSse(streamed);
  const missing = await h.post("/v1/chat/completions", {
    model: "no-such-model",
    messages: [{ role: "user", content: "hi" }],
  });
  await missing.body?.cancel();
  await new Promise((resolve) => setTimeout(resolve, 200)); // the stream's settle

  const refused = await fetch(`${h.url}/metrics`, {
    headers: { authorization: `Bearer ${h.caller.key}` },
  });
  assert.equal(refused.status, 401);
  await refused.body?.cancel();

  const response = await fetch(`${h.url}/metrics`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /text\/plain/);
  const text = await response.text();
  assert.match(
    text,
    /mcpkit_gateway_requests_total\{route="chat",model="gpt-4o-mini",provider="openai",status="200"\} 3/,
  );
  assert.match(text, /status="404"\} 1/);
  assert.match(
    text,
    /mcpkit_gateway_tokens_total\{model="gpt-4o-mini",provider="openai",kind="input"\} 300/,
  );
  assert.match(text, /mcpkit_gateway_cost_usd_total\{model="gpt-4o-mini"/);
  assert.match(
    text,
    /mcpkit_gateway_request_duration_seconds_count\{route="chat",provider="openai"\} 3/,
  );
  assert.match(
    text,
    /mcpkit_gateway_time_to_first_token_seconds_count\{route="chat",provider="anthropic"\} 1/,
  );
  assert.match(
    text,
    /mcpkit_gateway_provider_keys\{provider="openai",state="healthy"\} 2/,
  );
  assert.match(text, /mcpkit_gateway_kv_commit_seconds_count [1-9]/);
});

Deno.test("with GATEWAY_METRICS_ADDR, /metrics is also served there without a token, and nothing else is", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  await using h = await startHarness({
    env: {
      GATEWAY_ADMIN_TOKEN: TOKEN,
      GATEWAY_METRICS_ADDR: `127.0.0.1:${port}`,
    },
  });
  const call = await h.post(
    "/v1/chat/completions",
    callBody("chat", "gpt-4o-mini", false),
  );
  await call.body?.cancel();
  const scraped = await fetch(`http://127.0.0.1:${port}/metrics`);
  assert.equal(scraped.status, 200);
  assert.match(
    await scraped.text(),
    /mcpkit_gateway_requests_total\{route="chat"/,
  );
  const other = await fetch(`http://127.0.0.1:${port}/admin/keys`);
  assert.equal(other.status, 404);
  await other.body?.cancel();
  const main = await fetch(`${h.url}/metrics`);
  assert.equal(main.status, 401, "the main address still wants the token");
  await main.body?.cancel();
});

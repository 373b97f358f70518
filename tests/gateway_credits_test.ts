/**
 * Credits end to end: every route's charge is the simulator's usage × the
 * model's price, the balance headers and `GET /credits` agree with the
 * ledger, a caller who cannot cover the reservation is refused before
 * anything is forwarded, and concurrency never spends past the balance.
 */
import assert from "node:assert/strict";
import { listLedger } from "../gateway/state/credits/ledger.ts";
import { maxCostMicros } from "../gateway/state/credits/money.ts";
import type { RouteName } from "../gateway/conventions.ts";
import { startHarness } from "./_gateway_harness.ts";
import {
  assertRouteError,
  callBody,
  callPath,
  readSse,
} from "./_gateway_routes.ts";
import {
  expectedCost,
  ledgerEntryOf,
  ledgerSum,
  model,
  type SimUsage,
} from "./_gateway_e2e.ts";

/** One model on each provider for chat, and the one native model of each other route. */
const CASES: readonly { route: RouteName; model: string }[] = [
  { route: "chat", model: "gpt-4o" },
  { route: "chat", model: "claude-haiku-4-5" },
  { route: "chat", model: "gemini-2.5-pro" },
  { route: "chat", model: "grok-4-1-fast" },
  { route: "chat", model: "z-ai/glm-4.5v" },
  { route: "messages", model: "claude-sonnet-5-5" },
  { route: "responses", model: "gpt-5.1" },
  { route: "gemini", model: "gemini-2.5-computer-use-preview" },
];

function usd(micros: number): string {
  return (micros / 1_000_000).toFixed(6);
}

async function creditsMicros(
  url: string,
  headers: Record<string, string>,
): Promise<number> {
  const response = await fetch(`${url}/credits`, { headers });
  assert.equal(response.status, 200);
  const body = await response.json();
  assert.equal(body.currency, "USD");
  return Math.round(body.balance * 1_000_000);
}

Deno.test("each call on every route, streamed and not, is charged its usage × the model's price, cached input at the cached price", async () => {
  await using h = await startHarness({ credits: 50 });
  const opening = await creditsMicros(h.url, h.auth());
  assert.equal(opening, 50_000_000);
  let call = 0;
  for (const { route, model: modelId } of CASES) {
    for (const stream of [false, true]) {
      const label = `${modelId} on ${route} stream=${stream}`;
      // Different numbers on every call, so a charge cannot match by chance.
      const usage: SimUsage = {
        inputTokens: 1_200 + 37 * call,
        cachedTokens: 400 + 11 * call,
        outputTokens: 90 + 5 * call,
      };
      call++;
      h.sim.enqueue({ behaviour: { usage } });
      const before = await creditsMicros(h.url, h.auth());
      const response = await h.post(
        callPath(route, modelId, stream),
        callBody(route, modelId, stream),
      );
      assert.equal(response.status, 200, `${label}: ${response.status}`);
      const requestId = response.headers.get("x-request-id");
      assert.ok(requestId, label);
      const cost = expectedCost(usage, modelId);
      assert.ok(cost > 0, label);
      if (stream) {
        await readSse(response);
      } else {
        await response.json();
        assert.equal(response.headers.get("x-gateway-cost"), usd(cost), label);
        assert.equal(
          response.headers.get("x-gateway-credits-remaining"),
          usd(before - cost),
          label,
        );
      }
      const entry = await ledgerEntryOf(h.kv, h.caller.id, requestId);
      assert.equal(entry.kind, "charge", label);
      assert.equal(entry.amountMicros, -cost, label);
      assert.equal(entry.model, modelId, label);
      assert.equal(entry.route, route, label);
      assert.equal(entry.provider, model(modelId).provider, label);
      assert.deepEqual(
        [entry.inputTokens, entry.cachedTokens, entry.outputTokens],
        [usage.inputTokens, usage.cachedTokens, usage.outputTokens],
        label,
      );
      assert.equal(await creditsMicros(h.url, h.auth()), before - cost, label);
    }
  }
  assert.equal(h.sim.requests.length, CASES.length * 2);
  const ledger = await listLedger(h.kv, h.caller.id);
  const charges = ledger.filter((entry) => entry.kind === "charge");
  assert.equal(charges.length, CASES.length * 2);
  const balance = await creditsMicros(h.url, h.auth());
  assert.equal(ledgerSum(ledger), balance);
  assert.equal(opening - balance, -ledgerSum(charges));
});

Deno.test("an Anthropic cache write is charged at the cache-write price on /messages and translated chat, streamed and not", async () => {
  await using h = await startHarness();
  const usage = { inputTokens: 1_000, cachedTokens: 200, outputTokens: 50 };
  for (const route of ["messages", "chat"] as const) {
    for (const stream of [false, true]) {
      h.sim.enqueue({
        behaviour: { usage: { ...usage, cacheCreationTokens: 300 } },
      });
      const response = await h.post(
        callPath(route, "claude-haiku-4-5", stream),
        callBody(route, "claude-haiku-4-5", stream),
      );
      assert.equal(response.status, 200);
      await response.body?.cancel();
      const entry = await ledgerEntryOf(
        h.kv,
        h.caller.id,
        response.headers.get("x-request-id")!,
      );
      const label = `${route} stream=${stream}`;
      assert.equal(entry.inputTokens, 1_000, label);
      // 500 uncached at $1/M, 200 cache reads at $0.10/M, 300 cache writes
      // at $1.25/M, 50 output at $5/M: 500 + 20 + 375 + 250 micro-USD.
      assert.equal(-entry.amountMicros, 1_145, label);
      assert.equal(
        -entry.amountMicros,
        expectedCost({ ...usage, cacheWriteTokens: 300 }, "claude-haiku-4-5"),
        label,
      );
    }
  }
});

/** A body on `route` whose reservation is far above $0.001. */
function expensiveBody(
  route: RouteName,
  modelId: string,
  stream: boolean,
): Record<string, unknown> {
  const body = callBody(route, modelId, stream);
  switch (route) {
    case "chat":
      return { ...body, max_tokens: 10_000 };
    case "messages":
      return { ...body, max_tokens: 10_000 };
    case "responses":
      return { ...body, max_output_tokens: 10_000 };
    case "gemini":
      return { ...body, generationConfig: { maxOutputTokens: 10_000 } };
  }
}

Deno.test("a caller who cannot cover the reservation gets 402 in each route's convention and nothing is forwarded", async () => {
  await using h = await startHarness({ credits: 0.001 });
  for (const { route, model: modelId } of CASES) {
    for (const stream of [false, true]) {
      const label = `${modelId} on ${route} stream=${stream}`;
      const response = await h.post(
        callPath(route, modelId, stream),
        expensiveBody(route, modelId, stream),
      );
      const message = await assertRouteError(route, response, 402);
      assert.match(message, /credits/i, label);
    }
  }
  assert.equal(h.sim.requests.length, 0, "a refused call reached a provider");
  assert.equal(await creditsMicros(h.url, h.auth()), 1_000);
  const ledger = await listLedger(h.kv, h.caller.id);
  assert.deepEqual(ledger.map((entry) => entry.kind), ["topup"]);
});

Deno.test("100 concurrent calls from a key that covers about 10 never spend past the balance and the ledger stays exact", async () => {
  const opening = 100_000; // $0.10
  const usage: SimUsage = {
    inputTokens: 50,
    cachedTokens: 0,
    outputTokens: 200,
  };
  // The upstream answers slowly, so every reservation is taken before the
  // first one settles and returns its unused part.
  await using h = await startHarness({
    credits: opening / 1_000_000,
    sim: { behaviour: { latencyMs: 1_000, usage } },
  });
  const body = {
    model: "gpt-4o",
    max_tokens: 1_000,
    messages: [{ role: "user", content: "count to three" }],
  };
  // The reservation: input estimated at a token per 3 body bytes
  // (docs/decisions.md), none cached, plus max_tokens of output.
  const reservation = maxCostMicros(
    model("gpt-4o").pricing,
    Math.ceil(JSON.stringify(body).length / 3),
    1_000,
  );
  const covered = Math.floor(opening / reservation);
  assert.ok(covered >= 9 && covered <= 10, `reservation ${reservation}`);

  const responses = await Promise.all(
    Array.from({ length: 100 }, () => h.post("/chat/completions", body)),
  );
  const statuses = await Promise.all(responses.map(async (response) => {
    if (response.status === 200) {
      await response.body?.cancel();
    } else {
      await assertRouteError("chat", response, 402);
    }
    return response.status;
  }));
  const succeeded = statuses.filter((status) => status === 200).length;
  assert.equal(succeeded + statuses.filter((s) => s === 402).length, 100);
  assert.equal(succeeded, covered);
  assert.equal(h.sim.requests.length, succeeded);

  // A non-streamed call is answered before its charge commits (write-behind,
  // docs/decisions.md); GET /credits waits for the caller's queued charges,
  // so it comes before reading the ledger straight from KV.
  const balance = await creditsMicros(h.url, h.auth());
  const ledger = await listLedger(h.kv, h.caller.id);
  const charges = ledger.filter((entry) => entry.kind === "charge");
  assert.equal(charges.length, succeeded);
  const spent = -ledgerSum(charges);
  assert.equal(spent, succeeded * expectedCost(usage, "gpt-4o"));
  assert.ok(spent <= opening);
  assert.equal(opening - balance, spent);
  assert.equal(ledgerSum(ledger), balance);
});

/**
 * The debt bound of issue 22 across processes: a caller with a small balance
 * runs a dozen document calls at once against three gateway processes
 * (`gateway/main.ts`) on one KV file, and ends at most one call's cost in
 * debt (a hold that covers a document's text leaves it in none).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createCaller } from "../gateway/state/callers.ts";
import { listLedger, readBalance } from "../gateway/state/credits/ledger.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import {
  expectedCost,
  type GatewayProcess,
  ledgerSum,
  postJson,
  spawnGateway,
} from "./_gateway_e2e.ts";

const PROCESSES = 3;
const CALLS = 12;
/** About 15 000 tokens of text: $0.015 of input on claude-haiku-4-5. */
const DOCUMENT = "Quarterly figures, region by region, in words. ".repeat(
  1_300,
);

/** The three ways a document carries the same text, one per call in turn. */
function documentPart(call: number): unknown {
  switch (call % 3) {
    case 0:
      return {
        type: "document",
        source: { type: "text", media_type: "text/plain", data: DOCUMENT },
      };
    case 1:
      return {
        type: "document",
        source: {
          type: "base64",
          media_type: "text/plain",
          data: btoa(DOCUMENT),
        },
      };
    default:
      return {
        type: "document",
        source: {
          type: "content",
          content: [{ type: "text", text: DOCUMENT }],
        },
      };
  }
}

Deno.test("a caller with $0.05 running a dozen document calls at once across three gateway processes ends at most one call's cost in debt", async () => {
  const dir = await Deno.makeTempDir();
  // A slow upstream keeps every hold open while the other calls arrive.
  const sim = await startSimulator({ behaviour: { latencyMs: 600 } });
  const gateways: GatewayProcess[] = [];
  try {
    const kvPath = join(dir, "gateway.kv");
    const opening = usdToMicros(0.05);
    const setup = await Deno.openKv(kvPath);
    const caller = await createCaller(setup, {
      name: "documents",
      creditsMicros: opening,
    });
    setup.close();
    const env = {
      ...sim.env(),
      GATEWAY_KV_PATH: kvPath,
      ANTHROPIC_API_KEYS: "sk-holds-mp-1,sk-holds-mp-2",
    };
    gateways.push(
      ...await Promise.all(
        Array.from({ length: PROCESSES }, () => spawnGateway(env)),
      ),
    );
    const results = await Promise.all(
      Array.from({ length: CALLS }, async (_, call) => {
        const gateway = gateways[call % PROCESSES];
        const response = await postJson(
          `${gateway.url}/messages`,
          caller.key,
          {
            model: "claude-haiku-4-5",
            max_tokens: 64,
            messages: [{
              role: "user",
              content: [documentPart(call), {
                type: "text",
                text: "Summarise this.",
              }],
            }],
          },
        );
        const text = await response.text();
        if (response.status !== 200) {
          assert.equal(response.status, 402, text);
          return undefined;
        }
        const usage = JSON.parse(text).usage;
        return expectedCost({
          inputTokens: usage.input_tokens + usage.cache_read_input_tokens,
          cachedTokens: usage.cache_read_input_tokens,
          outputTokens: usage.output_tokens,
        }, "claude-haiku-4-5");
      }),
    );
    const exits = await Promise.all(gateways.map((gateway) => gateway.stop()));
    for (const { code, stderr } of exits) assert.equal(code, 0, stderr);

    const costs = results.filter((cost) => cost !== undefined);
    assert.ok(costs.length > 0, "no call was served");
    assert.ok(costs.length < CALLS, "every call was served: no contention");
    assert.equal(sim.requests.length, costs.length);
    const kv = await Deno.openKv(kvPath);
    try {
      const balance = await readBalance(kv, caller.id);
      const ledger = await listLedger(kv, caller.id);
      assert.equal(ledgerSum(ledger), balance);
      const charged = -ledgerSum(ledger.filter((e) => e.kind === "charge"));
      assert.equal(charged, costs.reduce((sum, cost) => sum + cost, 0));
      const oneCall = Math.max(...costs);
      assert.ok(
        balance >= -oneCall,
        `debt ${-balance} µUSD is more than one call's cost ${oneCall} µUSD (${costs.length} served)`,
      );
    } finally {
      kv.close();
    }
  } finally {
    await Promise.all(gateways.map((gateway) => gateway.stop()));
    await sim.close();
    await Deno.remove(dir, { recursive: true });
  }
});

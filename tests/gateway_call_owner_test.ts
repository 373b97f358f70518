/**
 * One owner per call (issue 22, part 5): every path a call can take gives
 * back what it took, once. A gateway in front of the simulator (and, for an
 * answer in a shape no provider sends, a loopback server of our own) is
 * driven down each failure path; afterwards every provider key's in-flight
 * count is 0 and none is stuck probing, the caller's available credit is
 * its balance (no hold left behind) and its balance the opening credits less
 * the charges traced, and its counted tokens per minute are what the calls
 * used (every limit ticket settled).
 */
import assert from "node:assert/strict";
import { limitMinuteKey } from "../gateway/state/kv_keys.ts";
import { formatUsd } from "../gateway/state/credits/money.ts";
import { startHarness } from "./_gateway_harness.ts";

const ADMIN = "admin-token-for-owner-test";
const CREDITS = 50;

/** A loopback "provider" that answers every request with 200 and a JSON body in no provider's shape. */
function startOddUpstream(): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => Response.json({ id: "msg_1", type: "message", note: "no content" }),
  );
}

interface KeyRow {
  keyId: string;
  state: string;
  inFlight: number;
}

Deno.test("every path of a call gives back its provider key, its credit hold and its limit ticket, once", async () => {
  const odd = startOddUpstream();
  await using h = await startHarness({
    credits: CREDITS,
    env: {
      GATEWAY_ADMIN_TOKEN: ADMIN,
      GATEWAY_UPSTREAM_TIMEOUT_MS: "400",
      GATEWAY_CALLER_CACHE_MS: "0",
      // Anthropic answers from the odd upstream: 200, JSON, wrong shape.
      ANTHROPIC_BASE_URL: `http://127.0.0.1:${odd.addr.port}`,
    },
  });
  try {
    const admin = { authorization: `Bearer ${ADMIN}` };
    const patched = await fetch(`${h.url}/admin/keys/${h.caller.id}`, {
      method: "PATCH",
      headers: { ...admin, "content-type": "application/json" },
      body: JSON.stringify({ limits: { rpm: 10_000, tpm: 100_000_000 } }),
    });
    assert.equal(patched.status, 200, await patched.text());

    const chat = (extra: Record<string, unknown> = {}) =>
      h.post("/v1/chat/completions", {
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "Hello there" }],
        max_tokens: 50,
        ...extra,
      });
    const drain = async (response: Response) => {
      await response.text();
      return response.status;
    };

    // Each failure path, with the status it ends in.
    h.sim.enqueue({ behaviour: { status: 500 }, times: 2 });
    assert.equal(await drain(await chat()), 502, "upstream 5xx on both keys");
    h.sim.enqueue({ behaviour: { status: 400, message: "bad" } });
    assert.equal(await drain(await chat()), 400, "upstream 4xx");
    h.sim.enqueue({ behaviour: { status: 403, message: "flagged" } });
    assert.equal(await drain(await chat()), 403, "a refusal about the request");
    h.sim.enqueue({ behaviour: { status: 429, retryAfter: 1 } });
    assert.equal(await drain(await chat()), 200, "a 429, then another key");
    h.sim.enqueue({ behaviour: { garbage: true } });
    assert.equal(await drain(await chat()), 502, "garbage");
    h.sim.enqueue({ behaviour: { garbage: true } });
    const garbageStream = await chat({ stream: true });
    assert.equal(garbageStream.status, 200);
    assert.match(await garbageStream.text(), /not JSON/, "garbage in a stream");
    h.sim.enqueue({ behaviour: { hang: true } });
    assert.equal(await drain(await chat()), 504, "a hang, timed out");
    h.sim.enqueue({ behaviour: { hang: true } });
    assert.equal(await drain(await chat({ stream: true })), 504, "a hang");
    h.sim.enqueue({ behaviour: { cutStreamAfter: 2 } });
    const cut = await chat({ stream: true });
    assert.match(await cut.text(), /broke off/, "a stream cut short");
    // An answer in an unexpected JSON shape.
    const oddAnswer = await h.post("/v1/chat/completions", {
      model: "claude-haiku-4-5",
      messages: [{ role: "user", content: "Hello there" }],
      max_tokens: 50,
    });
    assert.equal(oddAnswer.status, 502);
    assert.match(await oddAnswer.text(), /unexpected shape/);
    // A throw after the hold: the translation refuses a field.
    const refused = await h.post("/v1/chat/completions", {
      model: "claude-haiku-4-5",
      messages: [{ role: "user", content: "Hello there" }],
      max_tokens: 50,
      n: 2,
    });
    assert.equal(refused.status, 400, "a translation refusal after the hold");
    await refused.text();
    // The caller goes away mid-stream.
    h.sim.enqueue({
      behaviour: { chunkDelayMs: 100, reply: "word ".repeat(40) },
    });
    const leaving = new AbortController();
    const abandoned = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { ...h.auth(), "content-type": "application/json" },
      body: JSON.stringify({
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "Hello there" }],
        max_tokens: 50,
        stream: true,
      }),
      signal: leaving.signal,
    });
    const reader = abandoned.body!.getReader();
    await reader.read();
    leaving.abort();
    await reader.cancel().catch(() => {});
    // The caller goes away before the answer.
    h.sim.enqueue({ behaviour: { latencyMs: 2_000 } });
    const early = new AbortController();
    const pending = fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { ...h.auth(), "content-type": "application/json" },
      body: JSON.stringify({
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "Hello there" }],
        max_tokens: 50,
      }),
      signal: early.signal,
    }).catch((error) => error);
    await new Promise((resolve) => setTimeout(resolve, 100));
    early.abort();
    await pending;
    // A stream that ends well.
    assert.equal(await drain(await chat({ stream: true })), 200);

    // Let the aborted calls end on the gateway's side.
    const deadline = Date.now() + 5_000;
    let keys: KeyRow[] = [];
    while (Date.now() < deadline) {
      const listed = await fetch(`${h.url}/admin/provider-keys`, {
        headers: admin,
      });
      keys = (await listed.json()).data;
      if (keys.every((k) => k.inFlight === 0)) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    for (const key of keys) {
      assert.equal(key.inFlight, 0, `key ${key.keyId} still counted in flight`);
      assert.notEqual(key.state, "probing", `key ${key.keyId} left probing`);
    }

    // No hold left: a call's remaining credit is the balance after it.
    const last = await chat();
    assert.equal(last.status, 200);
    await last.text();
    const remaining = last.headers.get("x-gateway-credits-remaining");
    const credits = await (await fetch(`${h.url}/v1/credits`, {
      headers: h.auth(),
    })).json();
    assert.equal(remaining, credits.balance.toFixed(6));
    const traces = (await (await fetch(`${h.url}/v1/traces?limit=1000`, {
      headers: h.auth(),
    })).json()).data as {
      costMicros: number;
      inputTokens: number;
      outputTokens: number;
    }[];
    const charged = traces.reduce((sum, t) => sum + t.costMicros, 0);
    assert.equal(
      formatUsd(CREDITS * 1e6 - charged),
      credits.balance.toFixed(6),
      "balance = opening credits less the charges",
    );

    // Every limit ticket settled: the minutes count what the calls used.
    const used = traces.reduce(
      (sum, t) => sum + t.inputTokens + t.outputTokens,
      0,
    );
    let counted = -1;
    const settledBy = Date.now() + 3_000;
    while (Date.now() < settledBy) {
      counted = 0;
      for await (
        const entry of h.kv.list<{ tokens: number }>({
          prefix: limitMinuteKey(h.caller.id, 0).slice(0, 2),
        })
      ) counted += entry.value.tokens;
      if (counted === used) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(counted, used, "counted tokens = tokens used");
  } finally {
    await odd.shutdown();
  }
});

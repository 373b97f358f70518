/**
 * The gateway's state, end to end through its HTTP API, on both stores: the
 * same scenarios run on a gateway over Deno KV and over a real PostgreSQL
 * (`GATEWAY_STORE`), with the harness parameterised by store. Callers and
 * keys (create, authenticate, revoke), balances and the ledger (charges,
 * top-ups, `GET /credits`), caller limits (rpm, model allowlist, spend),
 * traces (by trace id), usage sums, the live catalog, and provider key
 * health after a refused key.
 */
import assert from "node:assert/strict";
import { listLedger, readBalance } from "../gateway/state/credits/ledger.ts";
import { startHarness } from "./_gateway_harness.ts";
import { ledgerSum, model } from "./_gateway_e2e.ts";
import { POSTGRES_MISSING, reportSkip, startPostgres } from "./_postgres.ts";

reportSkip();
const ADMIN = "store-state-admin-token-0123456789";
const HELLO = [{ role: "user", content: "hello" }];

type Store = "KV" | "PostgreSQL";

/** Runs `scenario` on a gateway over each store. */
function onBothStores(
  name: string,
  scenario: (h: Awaited<ReturnType<typeof startHarness>>) => Promise<void>,
): void {
  for (const store of ["KV", "PostgreSQL"] as Store[]) {
    Deno.test({
      name: `${name} (${store})`,
      ignore: store === "PostgreSQL" && POSTGRES_MISSING !== undefined,
      async fn() {
        await using pg = store === "PostgreSQL"
          ? await startPostgres()
          : undefined;
        const env: Record<string, string> = { GATEWAY_ADMIN_TOKEN: ADMIN };
        if (pg) env.GATEWAY_STORE = await pg.createDatabase("state");
        await using h = await startHarness({ env });
        await scenario(h);
      },
    });
  }
}

function admin(
  h: { url: string },
  method: string,
  path: string,
  body?: unknown,
): Promise<Response> {
  return fetch(`${h.url}/admin${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN}`,
      "content-type": "application/json",
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function chat(
  h: { url: string },
  key: string,
  modelId = "gpt-4o-mini",
  headers: Record<string, string> = {},
): Promise<Response> {
  return await fetch(`${h.url}/v1/chat/completions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      ...headers,
    },
    body: JSON.stringify({
      model: modelId,
      messages: HELLO,
      max_tokens: 16,
    }),
  });
}

onBothStores(
  "callers, balances and the ledger stay exact through calls, top-ups and a revoke",
  async (h) => {
    const created = await admin(h, "POST", "/keys", {
      name: "alice",
      credits: 1,
    });
    assert.equal(created.status, 201);
    const alice = await created.json();
    for (let i = 0; i < 5; i++) {
      const response = await chat(h, alice.key);
      assert.equal(response.status, 200);
      assert.ok(Number(response.headers.get("x-gateway-cost")) > 0);
      await response.body?.cancel();
    }
    const topped = await admin(h, "POST", `/keys/${alice.id}/credits`, {
      amount: 2,
    });
    assert.equal(topped.status, 200);
    const credits = await fetch(`${h.url}/v1/credits`, {
      headers: { authorization: `Bearer ${alice.key}` },
    });
    const { balance } = await credits.json();
    const micros = await readBalance(h.kv, alice.id);
    assert.equal(Math.round(balance * 1e6), micros);
    const ledger = await listLedger(h.kv, alice.id);
    assert.equal(ledger.filter((e) => e.kind === "charge").length, 5);
    assert.equal(ledgerSum(ledger), micros);
    assert.ok(micros < 3_000_000 && micros > 2_900_000);

    assert.equal((await admin(h, "DELETE", `/keys/${alice.id}`)).status, 200);
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // the key cache
    const revoked = await chat(h, alice.key);
    assert.equal(revoked.status, 401);
    await revoked.body?.cancel();
  },
);

onBothStores(
  "caller limits refuse past rpm, outside the allowlist and past the spend cap",
  async (h) => {
    const created = await admin(h, "POST", "/keys", {
      name: "limited",
      credits: 5,
      limits: { rpm: 2, models: ["gpt-4o-mini"] },
    });
    const caller = await created.json();
    for (const expected of [200, 200, 429]) {
      const response = await chat(h, caller.key);
      assert.equal(response.status, expected);
      await response.body?.cancel();
    }
    const outside = await chat(h, caller.key, "gpt-4o");
    assert.equal(outside.status, 403);
    await outside.body?.cancel();
    const patched = await admin(h, "PATCH", `/keys/${caller.id}`, {
      limits: { spend: { amount: 0.000001, period: "day" } },
    });
    assert.equal(patched.status, 200);
    await patched.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const spent = await chat(h, caller.key);
    assert.equal(spent.status, 402);
    await spent.body?.cancel();
    const shown = await (await admin(h, "GET", `/keys/${caller.id}`)).json();
    assert.deepEqual(shown.limits, {
      spend: { amount: 0.000001, period: "day" },
    });
  },
);

onBothStores(
  "traces are listed by trace id and usage sums count every call",
  async (h) => {
    for (let i = 0; i < 3; i++) {
      const response = await chat(h, h.caller.key, "gpt-4o-mini", {
        "trace-id": "trace-store-1",
      });
      assert.equal(response.status, 200);
      await response.body?.cancel();
    }
    await new Promise((resolve) => setTimeout(resolve, 200)); // write-behind
    const traces = await fetch(`${h.url}/v1/traces?trace_id=trace-store-1`, {
      headers: h.auth(),
    });
    assert.equal(traces.status, 200);
    const listed = await traces.json();
    assert.equal(listed.data.length, 3);
    for (const trace of listed.data) {
      assert.equal(
        trace.traceId,
        "trace-store-1",
      );
    }
    const usage = await admin(h, "GET", "/usage?range=24h");
    assert.equal(usage.status, 200);
    const report = JSON.stringify(await usage.json());
    assert.match(report, /gpt-4o-mini/);
  },
);

onBothStores(
  "the live catalog adds and removes a model in the store",
  async (h) => {
    const { id: _, ...entry } = model("gpt-4o-mini");
    const put = await admin(h, "PUT", "/models/store-model", entry);
    assert.equal(put.status, 200, await put.clone().text());
    await put.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 2_100)); // the reload
    const listed = await (await fetch(`${h.url}/v1/models`)).json();
    assert.ok(listed.data.some((m: { id: string }) => m.id === "store-model"));
    const served = await chat(h, h.caller.key, "store-model");
    assert.equal(served.status, 200);
    await served.body?.cancel();
    assert.equal(
      (await admin(h, "DELETE", "/models/store-model")).status,
      200,
    );
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    const gone = await chat(h, h.caller.key, "store-model");
    assert.equal(gone.status, 404);
    await gone.body?.cancel();
  },
);

import assert from "node:assert/strict";
import { Hono } from "hono";
import { createAdminRoutes } from "./admin.ts";
import { createCaller, createCallerAuthenticator } from "../state/callers.ts";
import { listLedger } from "../state/credits/ledger.ts";

const TOKEN = "admin-token-for-tests";

async function withAdmin(
  fn: (
    request: (path: string, init?: RequestInit) => Promise<Response>,
    kv: Deno.Kv,
  ) => Promise<void>,
  adminToken: string = TOKEN,
): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  const app = new Hono().route("/admin", createAdminRoutes({ kv, adminToken }));
  const request = (path: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    if (!headers.has("authorization")) {
      headers.set("authorization", `Bearer ${TOKEN}`);
    }
    return Promise.resolve(app.request(`/admin${path}`, { ...init, headers }));
  };
  try {
    await fn(request, kv);
  } finally {
    kv.close();
  }
}

function post(body: unknown): RequestInit {
  return {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "content-type": "application/json" },
  };
}

Deno.test("POST /admin/keys creates a caller whose key works and whose credits are in USD", async () => {
  await withAdmin(async (request, kv) => {
    const response = await request(
      "/keys",
      post({ name: "alice", credits: 10 }),
    );
    assert.equal(response.status, 201);
    const created = await response.json();
    assert.deepEqual(Object.keys(created).sort(), [
      "balance",
      "id",
      "key",
      "limits",
      "name",
    ]);
    assert.equal(created.name, "alice");
    assert.equal(created.balance, 10);
    assert.deepEqual(
      await createCallerAuthenticator(kv).authenticate(created.key),
      { id: created.id, name: "alice" },
    );
  });
});

Deno.test("GET /admin/keys lists callers without keys or hashes, and GET /admin/keys/{id} shows one", async () => {
  await withAdmin(async (request) => {
    const created =
      await (await request("/keys", post({ name: "bob", credits: 2.5 })))
        .json();
    const listed = await (await request("/keys")).json();
    assert.equal(listed.object, "list");
    assert.equal(listed.data.length, 1);
    assert.deepEqual(Object.keys(listed.data[0]).sort(), [
      "balance",
      "created_at",
      "id",
      "limits",
      "name",
    ]);
    assert.equal(JSON.stringify(listed).includes(created.key.slice(3)), false);
    const shown = await request(`/keys/${created.id}`);
    assert.equal(shown.status, 200);
    assert.deepEqual(await shown.json(), listed.data[0]);
    const missing = await request("/keys/ck_missing");
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).error.type, "not_found_error");
  });
});

Deno.test("POST /admin/keys/{id}/credits adds and removes credits as ledger entries", async () => {
  await withAdmin(async (request, kv) => {
    const created =
      await (await request("/keys", post({ name: "carol", credits: 1 })))
        .json();
    const added = await request(
      `/keys/${created.id}/credits`,
      post({ amount: 4.5 }),
    );
    assert.equal(added.status, 200);
    assert.deepEqual(await added.json(), { balance: 5.5 });
    assert.deepEqual(
      await (await request(
        `/keys/${created.id}/credits`,
        post({ amount: -0.5 }),
      )).json(),
      {
        balance: 5,
      },
    );
    const tooMuch = await request(
      `/keys/${created.id}/credits`,
      post({ amount: -6 }),
    );
    assert.equal(tooMuch.status, 400);
    assert.equal((await tooMuch.json()).error.param, "amount");
    assert.equal(
      (await request("/keys/ck_missing/credits", post({ amount: 1 }))).status,
      404,
    );
    const entries = await listLedger(kv, created.id);
    assert.deepEqual(entries.map((entry) => entry.amountMicros), [
      -500_000,
      4_500_000,
      1_000_000,
    ]);
  });
});

Deno.test("DELETE /admin/keys/{id} revokes the key", async () => {
  await withAdmin(async (request, kv) => {
    const created =
      await (await request("/keys", post({ name: "dave", credits: 0 }))).json();
    const deleted = await request(`/keys/${created.id}`, { method: "DELETE" });
    assert.deepEqual(await deleted.json(), { id: created.id, deleted: true });
    assert.equal(
      await createCallerAuthenticator(kv).authenticate(created.key),
      null,
    );
    assert.equal(
      (await request(`/keys/${created.id}`, { method: "DELETE" })).status,
      404,
    );
  });
});

Deno.test("admin routes reject malformed and invalid bodies with 400 naming the field", async () => {
  await withAdmin(async (request) => {
    const malformed = await request("/keys", { method: "POST", body: "{nope" });
    assert.equal(malformed.status, 400);
    assert.equal((await malformed.json()).error.code, "invalid_json");
    const noName = await request("/keys", post({ credits: 1 }));
    assert.equal(noName.status, 400);
    const body = await noName.json();
    assert.equal(body.error.param, "name");
    assert.equal(body.error.type, "invalid_request_error");
    assert.equal(
      (await request("/keys", post({ name: "x", credits: -1 }))).status,
      400,
    );
    assert.equal(
      (await request("/keys", post({ name: "x", credits: "10" }))).status,
      400,
    );
  });
});

Deno.test("admin routes refuse a missing token, a wrong token and a caller key", async () => {
  await withAdmin(async (request, kv) => {
    const caller = await createCaller(kv, { name: "eve", creditsMicros: 1 });
    for (
      const authorization of [
        "",
        "Bearer wrong",
        `Bearer ${caller.key}`,
        `Basic ${TOKEN}`,
      ]
    ) {
      const response = await request("/keys", { headers: { authorization } });
      assert.equal(response.status, 401, authorization);
      assert.equal((await response.json()).error.type, "authentication_error");
    }
  });
});

Deno.test("admin routes answer 403 on every route when no admin token is configured", async () => {
  await withAdmin(async (request) => {
    for (
      const [path, init] of [["/keys", {}], ["/keys", post({ name: "x" })], [
        "/keys/ck_1",
        { method: "DELETE" },
      ]] as const
    ) {
      const response = await request(path, init);
      assert.equal(response.status, 403);
      assert.equal((await response.json()).error.code, "admin_disabled");
    }
  }, "");
});

Deno.test("POST /admin/keys takes limits, PATCH /admin/keys/{id} changes and removes them, and bad limits are a 400 naming the field", async () => {
  await withAdmin(async (request) => {
    const created = await (await request(
      "/keys",
      post({ name: "capped", credits: 1, limits: { rpm: 10 } }),
    )).json();
    assert.deepEqual(created.limits, { rpm: 10 });
    const patch = (limits: unknown) =>
      request(`/keys/${created.id}`, {
        method: "PATCH",
        body: JSON.stringify({ limits }),
        headers: { "content-type": "application/json" },
      });
    const changed = await patch({
      spend: { amount: 5, period: "week" },
      expiresAt: "2026-12-31T00:00:00Z",
    });
    assert.equal(changed.status, 200);
    assert.deepEqual((await changed.json()).limits, {
      spend: { amount: 5, period: "week" },
      expiresAt: "2026-12-31T00:00:00Z",
    });
    const shown = await (await request(`/keys/${created.id}`)).json();
    assert.equal(shown.limits.spend.period, "week");
    const bad = await patch({ spend: { amount: -1, period: "week" } });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error.param, "limits.spend.amount");
    const removed = await patch(null);
    assert.equal((await removed.json()).limits, null);
    const missing = await request("/keys/ck_nope", {
      method: "PATCH",
      body: JSON.stringify({ limits: null }),
      headers: { "content-type": "application/json" },
    });
    assert.equal(missing.status, 404);
  });
});

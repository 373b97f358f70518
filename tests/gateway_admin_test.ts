/**
 * The admin API and the keys CLI end to end, over HTTP on a running gateway:
 * the key life cycle, admin routes closed to caller keys, revocation within a
 * second, keys stored only as hashes, and a CLI-made key that works.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { hashCallerKey } from "../gateway/state/callers.ts";
import { listLedger } from "../gateway/state/credits/ledger.ts";
import { startHarness } from "./_gateway_harness.ts";
import { callBody } from "./_gateway_routes.ts";
import { delay, ledgerSum, postJson } from "./_gateway_e2e.ts";

/** KV holds sums (`Deno.KvU64`, a bigint inside): written as text in a dump. */
function bigints(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}

const ADMIN_TOKEN = "admin-token-for-e2e-tests-0123456789";

function admin(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  token = ADMIN_TOKEN,
): Promise<Response> {
  return fetch(url + path, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function balanceOf(url: string, key: string): Promise<number> {
  const response = await fetch(`${url}/credits`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(response.status, 200);
  return (await response.json()).balance;
}

Deno.test("the admin API creates, lists, shows, tops up and revokes caller keys over HTTP", async () => {
  await using h = await startHarness({
    env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
  });
  const created = await admin(h.url, "POST", "/admin/keys", {
    name: "alice",
    credits: 2.5,
  });
  assert.equal(created.status, 201);
  const alice = await created.json();
  assert.deepEqual(Object.keys(alice).sort(), [
    "balance",
    "id",
    "key",
    "limits",
    "name",
  ]);
  assert.equal(alice.name, "alice");
  assert.equal(alice.balance, 2.5);
  assert.match(alice.key, /^mk-/);

  const listed = await admin(h.url, "GET", "/v1/admin/keys");
  assert.equal(listed.status, 200);
  const listText = await listed.text();
  assert.ok(!listText.includes(alice.key), "the list shows a secret");
  const list = JSON.parse(listText);
  assert.deepEqual(
    list.data.map((caller: { id: string }) => caller.id).sort(),
    [alice.id, h.caller.id].sort(),
  );

  const call = await postJson(
    `${h.url}/chat/completions`,
    alice.key,
    callBody("chat", "gpt-4o", false),
  );
  assert.equal(call.status, 200);
  const cost = Number(call.headers.get("x-gateway-cost"));
  await call.body?.cancel();
  assert.ok(cost > 0);

  // GET /credits waits for the caller's write-behind charge (docs/decisions.md);
  // the admin view reads the stored balance.
  const afterCall = Math.round((2.5 - cost) * 1e6) / 1e6;
  assert.equal(await balanceOf(h.url, alice.key), afterCall);
  const shown = await admin(h.url, "GET", `/admin/keys/${alice.id}`);
  assert.equal(shown.status, 200);
  const shownBody = await shown.json();
  assert.equal(shownBody.id, alice.id);
  assert.equal(shownBody.name, "alice");
  assert.equal(shownBody.key, undefined);
  assert.equal(shownBody.balance, afterCall);

  const topped = await admin(h.url, "POST", `/admin/keys/${alice.id}/credits`, {
    amount: 1,
  });
  assert.equal(topped.status, 200);
  assert.deepEqual(await topped.json(), { balance: afterCall + 1 });
  assert.equal(await balanceOf(h.url, alice.key), afterCall + 1);
  const ledger = await listLedger(h.kv, alice.id);
  assert.deepEqual(ledger.map((entry) => entry.kind), [
    "topup",
    "charge",
    "topup",
  ]);
  assert.equal(ledgerSum(ledger), Math.round((afterCall + 1) * 1e6));

  const overdraw = await admin(
    h.url,
    "POST",
    `/admin/keys/${alice.id}/credits`,
    { amount: -100 },
  );
  assert.equal(overdraw.status, 400);
  await overdraw.body?.cancel();

  const revoked = await admin(h.url, "DELETE", `/admin/keys/${alice.id}`);
  assert.equal(revoked.status, 200);
  assert.deepEqual(await revoked.json(), { id: alice.id, deleted: true });
  for (
    const [method, path] of [
      ["GET", `/admin/keys/${alice.id}`],
      ["DELETE", `/admin/keys/${alice.id}`],
    ]
  ) {
    const gone = await admin(h.url, method, path);
    assert.equal(gone.status, 404);
    await gone.body?.cancel();
  }
});

Deno.test("admin routes refuse caller keys, wrong tokens and missing tokens, and answer 403 without an admin token configured", async () => {
  await using h = await startHarness({
    env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
  });
  const attempts: [string, Record<string, string>][] = [
    ["caller key as bearer", { authorization: `Bearer ${h.caller.key}` }],
    ["caller key as x-api-key", { "x-api-key": h.caller.key }],
    ["admin token as x-api-key", { "x-api-key": ADMIN_TOKEN }],
    ["wrong token", { authorization: `Bearer ${ADMIN_TOKEN}x` }],
    ["nothing", {}],
  ];
  for (const [label, headers] of attempts) {
    for (const path of ["/admin/keys", "/v1/admin/keys"]) {
      const response = await fetch(h.url + path, { headers });
      assert.equal(response.status, 401, `${label} on ${path}`);
      const body = await response.json();
      assert.equal(typeof body.error.message, "string");
    }
    const create = await fetch(`${h.url}/admin/keys`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ name: "mallory", credits: 1000 }),
    });
    assert.equal(create.status, 401, label);
    await create.body?.cancel();
  }
  const callers = await (await admin(h.url, "GET", "/admin/keys")).json();
  assert.equal(callers.data.length, 1, "a refused create created a key");

  await using closed = await startHarness();
  const disabled = await admin(closed.url, "GET", "/admin/keys");
  assert.equal(disabled.status, 403);
  await disabled.body?.cancel();
});

Deno.test("a revoked key stops working within one second", async () => {
  await using h = await startHarness({
    env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
  });
  const created = await admin(h.url, "POST", "/admin/keys", {
    name: "bob",
    credits: 1,
  });
  const bob = await created.json();
  const call = () =>
    postJson(
      `${h.url}/chat/completions`,
      bob.key,
      callBody("chat", "gpt-4o", false),
    );
  const warm = await call(); // the key is now in the authenticator's cache
  assert.equal(warm.status, 200);
  await warm.body?.cancel();
  const revoked = await admin(h.url, "DELETE", `/admin/keys/${bob.id}`);
  assert.equal(revoked.status, 200);
  await revoked.body?.cancel();
  const revokedAt = Date.now();
  let refusedAfter = -1;
  while (Date.now() - revokedAt < 2_000) {
    const response = await call();
    await response.body?.cancel();
    if (response.status === 401) {
      refusedAfter = Date.now() - revokedAt;
      break;
    }
    assert.equal(response.status, 200);
    await delay(25);
  }
  assert.ok(
    refusedAfter >= 0 && refusedAfter <= 1_050,
    `refused after ${refusedAfter} ms`,
  );
  const credits = await fetch(`${h.url}/credits`, {
    headers: { authorization: `Bearer ${bob.key}` },
  });
  assert.equal(credits.status, 401);
  await credits.body?.cancel();
});

Deno.test("caller keys are stored only as hashes: neither a KV scan nor the raw KV file holds the key", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const kvPath = join(dir, "gateway.kv");
    let key: string;
    {
      await using h = await startHarness({
        kvPath,
        env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
      });
      const created = await admin(h.url, "POST", "/admin/keys", {
        name: "carol",
        credits: 1,
      });
      key = (await created.json()).key;
      const call = await postJson(
        `${h.url}/chat/completions`,
        key,
        callBody("chat", "gpt-4o", false),
      );
      assert.equal(call.status, 200);
      await call.body?.cancel();
      const hash = await hashCallerKey(key);
      let scanned = "";
      for await (const entry of h.kv.list({ prefix: [] })) {
        scanned += JSON.stringify([entry.key, entry.value], bigints) + "\n";
      }
      assert.ok(scanned.includes(hash), "the scan does not see the hash");
      for (const secret of [key, h.caller.key]) {
        assert.ok(!scanned.includes(secret), "a caller key is stored");
      }
    }
    // The gateway is closed: its file (and any journal) is complete on disk.
    const hash = new TextEncoder().encode(await hashCallerKey(key));
    const secret = new TextEncoder().encode(key);
    let sawHash = false;
    // Every file the gateway left: the KV file and its charge journal's.
    const files = async function* (at: string): AsyncGenerator<string> {
      for await (const entry of Deno.readDir(at)) {
        const path = join(at, entry.name);
        if (entry.isDirectory) yield* files(path);
        else yield path;
      }
    };
    for await (const path of files(dir)) {
      const bytes = await Deno.readFile(path);
      sawHash ||= contains(bytes, hash);
      assert.ok(!contains(bytes, secret), `the key is in "${path}"`);
    }
    assert.ok(sawHash, "the raw file does not hold the hash either");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i <= haystack.length - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) {
      if (haystack[i + j] !== needle[j]) continue outer;
    }
    return true;
  }
  return false;
}

Deno.test("a key made by `deno task keys create` works on a gateway started on that KV file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const kvPath = join(dir, "gateway.kv");
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["task", "keys", "create", "--name", "x", "--credits", "10"],
      cwd: new URL("..", import.meta.url).pathname,
      env: { GATEWAY_KV_PATH: kvPath, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(30_000),
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    const created = JSON.parse(new TextDecoder().decode(output.stdout));
    assert.equal(created.name, "x");
    assert.equal(created.balance, 10);
    assert.match(created.key, /^mk-/);

    await using h = await startHarness({ kvPath });
    assert.equal(await balanceOf(h.url, created.key), 10);
    const call = await postJson(
      `${h.url}/chat/completions`,
      created.key,
      callBody("chat", "gpt-4o", false),
    );
    assert.equal(call.status, 200);
    const remaining = Number(call.headers.get("x-gateway-credits-remaining"));
    await call.body?.cancel();
    assert.ok(remaining < 10);
    assert.equal(await balanceOf(h.url, created.key), remaining);
    const ledger = await listLedger(h.kv, created.id);
    assert.deepEqual(ledger.map((entry) => entry.kind), ["charge", "topup"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

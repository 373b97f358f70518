/**
 * Security: caller keys hashed at rest, admin routes closed to caller keys,
 * callers isolated from each other, provider keys kept out of everything a
 * caller, a log or KV can see (and out of upstream URLs), and no model id or
 * path can point the gateway at a host other than the configured provider.
 */
import assert from "node:assert/strict";
import { createCaller } from "../gateway/state/callers.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { type Harness, startHarness } from "./_gateway_harness.ts";

/** KV holds sums (`Deno.KvU64`, a bigint inside): written as text in a dump. */
function bigints(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}

const ADMIN_TOKEN = "admin-token-security-suite-0123456789";

async function dumpKv(kv: Deno.Kv): Promise<string> {
  const parts: string[] = [];
  for await (const entry of kv.list({ prefix: [] })) {
    parts.push(
      JSON.stringify(entry.key, bigints),
      JSON.stringify(entry.value, bigints),
    );
  }
  return parts.join("\n");
}

async function get(h: Harness, path: string, headers: Record<string, string>) {
  const response = await fetch(h.url + path, { headers });
  return { status: response.status, body: await response.json() };
}

Deno.test("caller keys are stored only as hashes and admin routes refuse them", async () => {
  await using h = await startHarness({
    env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
  });
  const other = await createCaller(h.kv, {
    name: "other",
    creditsMicros: 1_000_000,
  });
  const created = await fetch(`${h.url}/admin/keys`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({ name: "via-admin", credits: 1 }),
  });
  assert.equal(created.status, 201);
  const viaAdmin = (await created.json()).key as string;
  const answer = await h.post("/v1/chat/completions", {
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "hi" }],
  });
  assert.equal(answer.status, 200);
  await answer.body?.cancel();

  const dump = await dumpKv(h.kv);
  for (const key of [h.caller.key, other.key, viaAdmin]) {
    assert.ok(!dump.includes(key), "no caller key is stored in clear");
    assert.ok(!dump.includes(key.slice(3, 20)), "nor any part of it");
  }
  assert.equal(
    (dump.match(/"caller_by_hash","[0-9a-f]{64}"/g) ?? []).length,
    3,
    "each caller is found by the SHA-256 of its key",
  );

  const attempts: Record<string, string>[] = [
    { authorization: `Bearer ${h.caller.key}` },
    { "x-api-key": h.caller.key },
    { "x-goog-api-key": h.caller.key },
    { authorization: `Bearer ${ADMIN_TOKEN}x` },
    { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` },
    {},
  ];
  for (const headers of attempts) {
    for (const path of ["/admin/keys", `/admin/keys/${h.caller.id}`]) {
      const refused = await get(h, path, headers);
      assert.equal(refused.status, 401, `${path} ${JSON.stringify(headers)}`);
    }
    const topUp = await fetch(`${h.url}/admin/keys/${h.caller.id}/credits`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ amount: 1000 }),
    });
    assert.equal(topUp.status, 401);
    await topUp.body?.cancel();
  }
  const listed = await get(h, "/admin/keys", {
    authorization: `Bearer ${ADMIN_TOKEN}`,
  });
  assert.equal(listed.status, 200);
  assert.ok(!JSON.stringify(listed.body).includes(h.caller.key));
});

Deno.test("admin routes answer 403 when no admin token is configured, whatever key is sent", async () => {
  await using h = await startHarness();
  const attempts: Record<string, string>[] = [
    { authorization: `Bearer ${h.caller.key}` },
    {},
    { authorization: "Bearer anything-at-all-0123456789" },
  ];
  for (const headers of attempts) {
    const refused = await get(h, "/admin/keys", headers);
    assert.equal(refused.status, 403);
  }
});

Deno.test("a caller sees only its own balance and traces", async () => {
  await using h = await startHarness();
  const other = await createCaller(h.kv, {
    name: "other",
    creditsMicros: usdToMicros(3),
  });
  const traceId = "shared-trace-id-for-isolation";
  const answer = await h.post("/v1/chat/completions", {
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "mine" }],
  }, h.auth({ "trace-id": traceId }));
  assert.equal(answer.status, 200);
  await answer.body?.cancel();

  const otherAuth = { authorization: `Bearer ${other.key}` };
  const credits = await get(h, "/credits", otherAuth);
  assert.deepEqual(credits.body, { balance: 3, currency: "USD" });
  const byTrace = await get(h, `/traces?trace_id=${traceId}`, otherAuth);
  assert.equal(byTrace.status, 200);
  assert.deepEqual(
    byTrace.body.data,
    [],
    "another caller's trace id finds nothing",
  );
  const all = await get(h, "/traces?limit=100", otherAuth);
  assert.deepEqual(all.body.data, []);

  const own = await get(h, `/traces?trace_id=${traceId}`, h.auth());
  assert.equal(own.body.data.length, 1);
  assert.equal(own.body.data[0].callerId, h.caller.id);
  // There is no way to name another caller: no caller id parameter is read.
  const sneaky = await get(
    h,
    `/traces?caller_id=${h.caller.id}&callerId=${h.caller.id}`,
    otherAuth,
  );
  assert.ok(sneaky.status === 400 || sneaky.body.data.length === 0);
  const sneakyCredits = await get(
    h,
    `/credits?caller=${h.caller.id}`,
    otherAuth,
  );
  assert.equal(sneakyCredits.body.balance, 3);
});

Deno.test("provider keys never appear in responses, logs, traces, KV or upstream URLs, even when a provider quotes them", async () => {
  await using h = await startHarness();
  const secrets = Object.values(h.providerKeys).flat();
  // Providers that quote the key they were sent, on every route.
  for (const [provider, keys] of Object.entries(h.providerKeys)) {
    for (const key of keys) {
      h.sim.enqueue({
        match: { key },
        behaviour: {
          status: 400,
          message: `Incorrect API key provided: ${key}`,
        },
      });
    }
    h.sim.setKeyBehaviour(keys[1], {
      status: 401,
      message: `Invalid key ${keys[1]} for ${provider}`,
    });
  }
  const calls: [string, unknown][] = [
    ["/v1/chat/completions", {
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "hi" }],
    }],
    ["/v1/chat/completions", {
      model: "grok-4-1-fast",
      messages: [{ role: "user", content: "hi" }],
    }],
    ["/v1/chat/completions", {
      model: "z-ai/glm-4.5v",
      messages: [{ role: "user", content: "hi" }],
    }],
    ["/v1/chat/completions", {
      model: "gemini-2.5-pro",
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    }],
    ["/v1/messages", {
      model: "claude-haiku-4-5",
      max_tokens: 16,
      messages: [{ role: "user", content: "hi" }],
    }],
    ["/v1/responses", { model: "gpt-5-mini", input: "hi" }],
    ["/v1beta/models/gemini-2.5-computer-use-preview:generateContent", {
      contents: [{ role: "user", parts: [{ text: "hi" }] }],
    }],
    [
      "/v1beta/models/gemini-2.5-computer-use-preview:streamGenerateContent?alt=sse",
      { contents: [{ role: "user", parts: [{ text: "hi" }] }] },
    ],
  ];
  const seen: string[] = [];
  // Three rounds: quoted 4xx, then 401s that take keys out, then plain answers.
  for (let round = 0; round < 3; round++) {
    for (const [path, body] of calls) {
      const response = await h.post(path, body);
      seen.push(
        String(response.status),
        JSON.stringify([...response.headers]),
        await response.text(),
      );
    }
  }
  const traces = await get(h, "/traces?limit=100", h.auth());
  seen.push(JSON.stringify(traces.body));
  seen.push(JSON.stringify(h.logs));
  seen.push(await dumpKv(h.kv));
  const everything = seen.join("\n");
  for (const secret of secrets) {
    assert.ok(!everything.includes(secret), "a provider key leaked");
  }
  assert.match(everything, /Incorrect API key provided: \[key /);
  assert.ok(
    h.logs.some((log) =>
      String(log.message).startsWith("Provider refused a key")
    ),
  );

  const gemini = h.sim.requests.filter((r) => r.provider === "gemini");
  assert.ok(gemini.length >= 4);
  for (const request of gemini) {
    assert.ok(secrets.includes(request.headers["x-goog-api-key"]));
    assert.equal(request.query.key, undefined, "no key in the query");
    for (const secret of secrets) {
      assert.ok(!request.path.includes(secret));
      assert.ok(!JSON.stringify(request.query).includes(secret));
    }
  }
});

Deno.test("no model id or path can make the gateway call a host other than the configured provider", async () => {
  let attacked = 0;
  await using attacker = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    () => {
      attacked++;
      return new Response("{}");
    },
  );
  const evil = `127.0.0.1:${attacker.addr.port}`;
  await using h = await startHarness();
  const models = [
    "../../evil",
    "../../../x",
    `http://${evil}/x`,
    "http://127.0.0.2:1/x",
    `//${evil}/x`,
    "gemini-2.5-computer-use-preview/../../x",
    "gpt-4o/../../../evil",
    "gpt-4o%2F..%2F..%2Fevil",
    `gpt-4o@${evil}`,
    `@${evil}`,
    `gpt-4o#@${evil}`,
    `gpt-4o?x=@${evil}`,
    "gpt-4o\r\nHost: evil",
    `gpt-4o/chat/completions?redirect=http://${evil}`,
    "\\\\evil\\share",
  ];
  const body = (route: string, model: string) =>
    route === "/v1/messages"
      ? { model, max_tokens: 16, messages: [{ role: "user", content: "x" }] }
      : route === "/v1/responses"
      ? { model, input: "x" }
      : { model, messages: [{ role: "user", content: "x" }] };
  let refused = 0;
  for (const model of models) {
    for (
      const route of ["/v1/chat/completions", "/v1/messages", "/v1/responses"]
    ) {
      const response = await h.post(route, body(route, model));
      assert.ok(
        response.status === 404 || response.status === 400,
        `${route} "${model}": ${response.status}`,
      );
      await response.body?.cancel();
      refused++;
    }
    for (const method of ["generateContent", "streamGenerateContent"]) {
      for (const encoded of [encodeURIComponent(model), encodeURI(model)]) {
        const response = await h.post(
          `/v1beta/models/${encoded}:${method}`,
          { contents: [{ role: "user", parts: [{ text: "x" }] }] },
        );
        assert.ok(
          response.status === 404 || response.status === 400,
          `gemini "${encoded}": ${response.status}`,
        );
        await response.body?.cancel();
        refused++;
      }
    }
  }
  assert.equal(refused, models.length * 7);
  assert.deepEqual(
    h.sim.requests.map((r) => r.path),
    [],
    "nothing went upstream",
  );
  assert.equal(attacked, 0, "the attacker's listener got nothing");

  // A valid model still goes only to its provider's own path.
  const answer = await h.post(
    "/v1beta/models/gemini-2.5-computer-use-preview:generateContent",
    {
      contents: [{ role: "user", parts: [{ text: "x" }] }],
    },
  );
  assert.equal(answer.status, 200);
  await answer.body?.cancel();
  assert.deepEqual(h.sim.requests.map((r) => r.path), [
    "/gemini/v1beta/models/gemini-2.5-computer-use-preview-10-2025:generateContent",
  ]);
  assert.equal(attacked, 0);
});

Deno.test("a provider key quoted in an upstream in-stream error event is named by its id, never relayed", async () => {
  // A stand-in Anthropic upstream: the stream starts, then fails with an
  // error event that quotes the key it was sent (the simulator never does).
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      const key = request.headers.get("x-api-key") ?? "";
      const events = [
        `event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-haiku-4-5","usage":{"input_tokens":5,"output_tokens":1}}}\n\n`,
        `event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Key ${key} is overloaded"}}\n\n`,
      ];
      return new Response(events.join(""), {
        headers: { "content-type": "text/event-stream" },
      });
    },
  );
  await using h = await startHarness({
    env: { ANTHROPIC_BASE_URL: `http://127.0.0.1:${upstream.addr.port}` },
  });
  try {
    for (
      const [path, body] of [
        ["/v1/messages", {
          model: "claude-haiku-4-5",
          max_tokens: 50,
          stream: true,
        }],
        ["/v1/chat/completions", { model: "claude-haiku-4-5", stream: true }],
      ] as const
    ) {
      const response = await h.post(path, {
        ...body,
        messages: [{ role: "user", content: "hi" }],
      });
      const text = await response.text();
      assert.match(text, /error/);
      for (const key of h.providerKeys.anthropic) {
        assert.ok(!text.includes(key), `${path} relayed a provider key`);
      }
      assert.match(text, /\[key anthropic:[0-9a-f]{8}\]|overloaded|failed/);
    }
    const traces = await (await fetch(`${h.url}/traces`, { headers: h.auth() }))
      .text();
    assert.match(traces, /"status":502/);
    for (const key of h.providerKeys.anthropic) {
      assert.ok(!traces.includes(key), "a trace holds a provider key");
    }
  } finally {
    await upstream.shutdown();
  }
});

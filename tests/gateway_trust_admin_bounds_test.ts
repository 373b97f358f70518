/**
 * Admin input bounded (issue 22, part 4): prices, credits, limits and
 * catalog entries the money maths cannot hold are refused with a 400 naming
 * the field, on the admin API, the live catalog and the CLI; a price that
 * got into the store before the bounds is ignored with a log line that says
 * why, never a silent 500.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DEFAULT_CATALOG } from "../gateway/state/catalog.ts";
import {
  catalogChangeKey,
  catalogVersionKey,
} from "../gateway/state/kv_keys.ts";
import { CATALOG_REFRESH_MS } from "../gateway/state/live_catalog.ts";
import { startHarness } from "./_gateway_harness.ts";

const ADMIN = "admin-token-for-bounds";
const CLI = new URL("../gateway/cli/keys.ts", import.meta.url).pathname;

const MODEL = {
  provider: "openai",
  upstream: "gpt-4o-mini",
  routes: ["chat"],
  pricing: { input: 1, output: 2 },
  maxOutputTokens: 4096,
};

/** Sends raw JSON text (so `1e400`, which parses as Infinity, reaches the server as written). */
function send(
  url: string,
  method: string,
  path: string,
  json: string,
): Promise<Response> {
  return fetch(url + path, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN}`,
      "content-type": "application/json",
    },
    body: json,
  });
}

async function assertRefused(
  response: Promise<Response>,
  field: string,
  label: string,
): Promise<void> {
  const answer = await response;
  const body = await answer.json();
  assert.equal(answer.status, 400, `${label}: ${JSON.stringify(body)}`);
  assert.ok(
    body.error.message.includes(`"${field}"`),
    `${label}: the message names "${field}": ${body.error.message}`,
  );
  assert.equal(body.error.param, field, label);
}

Deno.test("the live catalog refuses prices and limits the money maths cannot hold, with a 400 naming the field", async () => {
  await using h = await startHarness({ env: { GATEWAY_ADMIN_TOKEN: ADMIN } });
  const put = (entry: unknown) =>
    send(h.url, "PUT", "/admin/models/m-bad", JSON.stringify(entry));
  const priced = (pricing: Record<string, number>) => ({
    ...MODEL,
    pricing: { ...MODEL.pricing, ...pricing },
  });
  await assertRefused(put(priced({ input: 1e20 })), "pricing.input", "1e20");
  await assertRefused(put(priced({ output: -1 })), "pricing.output", "< 0");
  await assertRefused(
    put(priced({ cachedInput: 1e9 })),
    "pricing.cachedInput",
    "1e9 cached",
  );
  await assertRefused(
    send(
      h.url,
      "PUT",
      "/admin/models/m-bad",
      JSON.stringify(MODEL).replace('"input":1', '"input":1e400'),
    ),
    "pricing.input",
    "Infinity",
  );
  await assertRefused(
    put({ ...MODEL, maxOutputTokens: 1e12 }),
    "maxOutputTokens",
    "1e12 output tokens",
  );
  // Nothing refused was stored, and a sound entry still is.
  const fine = await put(priced({ input: 0.15, output: 0.6 }));
  assert.equal(fine.status, 200, await fine.clone().text());
  await fine.body?.cancel();
  const stored = await h.kv.get<{ entry: { pricing: { input: number } } }>(
    catalogChangeKey("m-bad"),
  );
  assert.equal(stored.value?.entry.pricing.input, 0.15);
});

Deno.test("the admin API refuses credits and limits out of range with a 400 naming the field", async () => {
  await using h = await startHarness({ env: { GATEWAY_ADMIN_TOKEN: ADMIN } });
  const create = (json: string) => send(h.url, "POST", "/admin/keys", json);
  await assertRefused(
    create('{"name":"a","credits":1e20}'),
    "credits",
    "credits 1e20",
  );
  await assertRefused(
    create('{"name":"a","credits":1e400}'),
    "credits",
    "credits Infinity",
  );
  await assertRefused(
    create('{"name":"a","credits":-1}'),
    "credits",
    "negative credits",
  );
  for (
    const [limits, field] of [
      ['{"rpm":1e12}', "limits.rpm"],
      ['{"rpm":1.5}', "limits.rpm"],
      ['{"tpm":-3}', "limits.tpm"],
      ['{"spend":{"amount":1e20,"period":"day"}}', "limits.spend.amount"],
    ]
  ) {
    await assertRefused(
      create(`{"name":"a","credits":1,"limits":${limits}}`),
      field,
      limits,
    );
  }
  await assertRefused(
    send(
      h.url,
      "POST",
      `/admin/keys/${h.caller.id}/credits`,
      '{"amount":1e20}',
    ),
    "amount",
    "top-up 1e20",
  );
});

async function cli(kvPath: string, ...args: string[]) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, ...args],
    env: { GATEWAY_KV_PATH: kvPath },
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(20_000),
  }).output();
  return { code: output.code, stderr: new TextDecoder().decode(output.stderr) };
}

Deno.test("the keys CLI refuses credits and catalog entries out of range in one line naming the field", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = join(dir, "gateway.kv");
  try {
    const cases: [string[], RegExp][] = [
      [["create", "--name", "x", "--credits", "1e20"], /--credits "1e20"/],
      [["create", "--name", "x", "--credits", "5e9"], /--credits "5e9"/],
      [["create", "--name", "x", "--credits", "NaN"], /--credits "NaN"/],
      [["topup", "ck_x", "--amount=-1e20"], /--amount "-1e20"/],
      [
        [
          "model-set",
          JSON.stringify({
            ...MODEL,
            id: "m",
            pricing: { input: 1e20, output: 1 },
          }),
        ],
        /"pricing\.input"/,
      ],
    ];
    for (const [args, expected] of cases) {
      const result = await cli(kvPath, ...args);
      assert.equal(result.code, 1, args.join(" "));
      // The store line the CLI always prints first, then one line naming the field.
      const [store, ...rest] = result.stderr.trim().split("\n");
      assert.match(store, /^Store: KV /);
      assert.equal(rest.length, 1, result.stderr);
      assert.match(rest[0], expected);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a stored price the money maths cannot hold is ignored with a log line saying why, and calls are not a silent 500", async () => {
  await using h = await startHarness();
  const seed = DEFAULT_CATALOG.find((m) => m.id === "gpt-4o-mini")!;
  // As a store written before the bounds would hold it.
  await h.kv.atomic()
    .set(catalogChangeKey("gpt-4o-mini"), {
      entry: { ...seed, pricing: { input: 1e20, output: 1e20 } },
    })
    .sum(catalogVersionKey(), 1n)
    .commit();
  await new Promise((resolve) => setTimeout(resolve, CATALOG_REFRESH_MS + 200));
  for (let i = 0; i < 2; i++) {
    const response = await h.post("/v1/chat/completions", {
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "Hello" }],
      max_tokens: 10,
    });
    assert.equal(response.status, 200, await response.clone().text());
    await response.text();
  }
  const line = h.logs.find((record) =>
    String(record.message).includes('"gpt-4o-mini" is ignored')
  );
  assert.ok(line, JSON.stringify(h.logs));
  assert.match(String(line.message), /"pricing\.input"/);
});

/**
 * A caller's exposure in flight (issue 35): 500 concurrent Responses calls
 * naming a conversation, alternating between two gateway processes on one
 * store, against a loopback provider that bills each the stored context a
 * real one would (the model's whole context window, less the output). A $1
 * key ends at most one call's cost in debt, and a $100 key with a $1/day
 * spend cap spends at most the cap and one call's cost: on a KV file and on
 * PostgreSQL.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createCaller } from "../gateway/state/callers.ts";
import { listLedger, readBalance } from "../gateway/state/credits/ledger.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import {
  openPostgresStore,
  type PostgresKv,
} from "../gateway/state/store/postgres.ts";
import {
  delay,
  type GatewayProcess,
  ledgerSum,
  postJson,
  spawnGateway,
} from "./_gateway_e2e.ts";
import { POSTGRES_MISSING, reportSkip, startPostgres } from "./_postgres.ts";

reportSkip();

const MODEL = "gpt-4o-mini";
/** gpt-4o-mini's context window (platform.openai.com/docs/models/gpt-4o-mini): the most context a call can be billed. */
const WINDOW = 128_000;
const CALLS = 500;
const OUTPUT = 16;

/**
 * A Responses provider that answers after `latencyMs` and bills each call
 * the model's whole context window: the stored conversation, as the real
 * API bills it, and the output asked for.
 */
function startContextBillingUpstream(
  window: number,
  latencyMs: number,
): { base: string; served(): number } & AsyncDisposable {
  let served = 0;
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    async (request) => {
      const body = await request.json() as { max_output_tokens?: number };
      await delay(latencyMs);
      served++;
      const output = body.max_output_tokens ?? OUTPUT;
      return Response.json({
        id: `resp_${served}`,
        object: "response",
        created_at: 1,
        status: "completed",
        model: MODEL,
        output: [{
          type: "message",
          id: `msg_${served}`,
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: "ok", annotations: [] }],
        }],
        usage: {
          input_tokens: window - output,
          output_tokens: output,
          total_tokens: window,
        },
      });
    },
  );
  return {
    base: `http://127.0.0.1:${server.addr.port}`,
    served: () => served,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** Sends `CALLS` calls at once for each key, alternating gateways; returns the statuses. */
async function flood(
  gateways: GatewayProcess[],
  keys: string[],
): Promise<number[]> {
  return await Promise.all(
    keys.flatMap((key, caller) =>
      Array.from({ length: CALLS }, async (_, i) => {
        const response = await postJson(
          `${gateways[i % gateways.length].url}/v1/responses`,
          key,
          {
            model: MODEL,
            input: "Go on.",
            // Each caller its own: another caller's is refused as not found.
            conversation: `conv_long_${caller}`,
            max_output_tokens: OUTPUT,
          },
        );
        await response.body?.cancel();
        return response.status;
      })
    ),
  );
}

/**
 * Runs the flood against two gateways on `store` and checks both callers'
 * money: the ledger adds up to each balance, the $1 key's debt and the
 * capped key's overspend are at most one call's charge.
 */
async function assertExposureBounded(
  store: { open(): Promise<Deno.Kv>; close(kv: Deno.Kv): Promise<void> },
  env: Record<string, string>,
) {
  await using upstream = startContextBillingUpstream(WINDOW, 300);
  let kv = await store.open();
  const poor = await createCaller(kv, {
    name: "one dollar",
    creditsMicros: usdToMicros(1),
  });
  const capped = await createCaller(kv, {
    name: "capped",
    creditsMicros: usdToMicros(100),
    limits: { spend: { amount: 1, period: "day" } },
  });
  const gatewayEnv = {
    ...env,
    OPENAI_BASE_URL: upstream.base,
    OPENAI_API_KEYS: "sk-exposure-0123456789abcdefghij",
  };
  await store.close(kv);
  const gateways = [
    await spawnGateway(gatewayEnv),
    await spawnGateway(gatewayEnv),
  ];
  let statuses: number[];
  try {
    statuses = await flood(gateways, [poor.key, capped.key]);
  } finally {
    for (const gateway of gateways) {
      const { code, stderr } = await gateway.stop();
      assert.equal(code, 0, stderr);
    }
  }
  const refused = statuses.filter((status) => status === 402 || status === 429);
  const served = statuses.filter((status) => status === 200);
  assert.equal(
    refused.length + served.length,
    statuses.length,
    `statuses other than 200, 402 and 429: ${
      statuses.filter((s) => s !== 200 && s !== 402 && s !== 429)
    }`,
  );
  assert.ok(served.length > 0, "no call was served");
  assert.equal(upstream.served(), served.length);
  kv = await store.open();
  try {
    for (const [caller, opening] of [[poor, 1], [capped, 100]] as const) {
      await assertSpentAtMostOneCallOver(kv, caller.id, opening);
    }
  } finally {
    await store.close(kv);
  }
}

/** Asserts a caller's ledger adds up and it spent at most $1 and one call's charge. */
async function assertSpentAtMostOneCallOver(
  store: Deno.Kv,
  callerId: string,
  opening: number,
) {
  const balance = await readBalance(store, callerId);
  const ledger = await listLedger(store, callerId, { limit: 10_000 });
  assert.equal(ledgerSum(ledger), balance, `${callerId}: ledger ≠ balance`);
  const charges = ledger.filter((entry) => entry.kind === "charge")
    .map((entry) => -entry.amountMicros);
  assert.ok(charges.length > 0, `${callerId}: no call charged`);
  const oneCall = Math.max(...charges);
  const spent = usdToMicros(opening) - balance;
  assert.ok(
    spent <= usdToMicros(1) + oneCall,
    `${callerId} (opening $${opening}) spent ${spent} µUSD over ${charges.length} calls: more than $1 and one call's ${oneCall} µUSD`,
  );
}

Deno.test("500 concurrent calls naming a conversation across two gateways on a KV file leave a $1 key at most one call in debt and a $1/day cap at most one call over", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const kvPath = join(dir, "gateway.kv");
    await assertExposureBounded({
      open: () => Deno.openKv(kvPath),
      close: (kv) => Promise.resolve(kv.close()),
    }, { GATEWAY_KV_PATH: kvPath });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "500 concurrent calls naming a conversation across two gateways on one PostgreSQL leave a $1 key at most one call in debt and a $1/day cap at most one call over",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    await using pg = await startPostgres();
    const url = await pg.createDatabase("exposure");
    await assertExposureBounded({
      open: () => openPostgresStore(url),
      close: (kv) => (kv as PostgresKv).end(),
    }, {
      GATEWAY_STORE: url,
      GATEWAY_JOURNAL_DIR: "off",
    });
  },
});

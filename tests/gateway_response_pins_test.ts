/**
 * Responses state across a pool of keys from several organizations: two
 * gateway processes (`gateway/main.ts`) on one store, three OpenAI keys the
 * simulator treats as three organizations (each keeps only the responses
 * its own key created), and a chain of Responses calls, streamed and not,
 * each continuing the last with `previous_response_id` and sent to the
 * other process. Every call reaches the key that created its predecessor;
 * another caller cannot continue the chain. Run on a KV file and on a real
 * PostgreSQL.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createCaller } from "../gateway/state/callers.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { openPostgresStore } from "../gateway/state/store/postgres.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import { type GatewayProcess, postJson, spawnGateway } from "./_gateway_e2e.ts";
import { POSTGRES_MISSING, reportSkip, startPostgres } from "./_postgres.ts";
import { readSse } from "./_gateway_routes.ts";

reportSkip();

const CHAIN = 6;
const KEYS = ["sk-org-a-0001", "sk-org-b-0002", "sk-org-c-0003"];

/** One Responses call; its id, read from the JSON answer or the stream's first event. */
async function respond(
  gateway: GatewayProcess,
  key: string,
  body: Record<string, unknown>,
): Promise<{ status: number; id?: string; text: string }> {
  const response = await postJson(`${gateway.url}/v1/responses`, key, body);
  if (response.status !== 200 || !body.stream) {
    const text = await response.text();
    return {
      status: response.status,
      text,
      ...(response.status === 200 && { id: JSON.parse(text).id }),
    };
  }
  const events = await readSse(response);
  const completed = events.find((event) =>
    event.event === "response.completed"
  );
  assert.ok(completed, JSON.stringify(events.map((event) => event.event)));
  return { status: 200, id: JSON.parse(completed.data).response.id, text: "" };
}

/** Runs the chain through two gateway processes whose store `storeEnv` names. */
async function chainAcrossProcesses(
  storeEnv: Record<string, string>,
  callers: { key: string }[],
): Promise<void> {
  await using sim = await startSimulator();
  const env = { ...sim.env(), ...storeEnv, OPENAI_API_KEYS: KEYS.join(",") };
  const gateways = await Promise.all([spawnGateway(env), spawnGateway(env)]);
  try {
    const [caller, stranger] = callers;
    let previous: string | undefined;
    const served: string[] = [];
    for (let turn = 0; turn < CHAIN; turn++) {
      const answer = await respond(gateways[turn % 2], caller.key, {
        model: "gpt-5.1",
        input: `turn ${turn}`,
        stream: turn % 3 === 2,
        ...(previous && { previous_response_id: previous }),
      });
      assert.equal(answer.status, 200, `turn ${turn}: ${answer.text}`);
      previous = answer.id;
      served.push(sim.requests.at(-1)!.key!);
    }
    // Every turn after the first went to the key that holds the chain.
    assert.deepEqual(new Set(served).size, 1, served.join(", "));
    // Another caller of the gateway cannot continue (or read) the chain,
    // though its call would reach the same keys.
    const refused = await respond(gateways[0], stranger.key, {
      model: "gpt-5.1",
      input: "what did they say?",
      previous_response_id: previous,
    });
    assert.equal(refused.status, 400, refused.text);
    const { error } = JSON.parse(refused.text);
    assert.equal(error.code, "previous_response_not_found");
    assert.equal(error.param, "previous_response_id");
    assert.equal(
      error.message,
      `Previous response with id '${previous}' not found.`,
    );
  } finally {
    await Promise.all(gateways.map((gateway) => gateway.stop()));
  }
}

Deno.test("a chain of Responses calls alternating between two gateway processes on one KV file reaches the key of each predecessor, across three organizations", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = join(dir, "gateway.kv");
  const kv = await Deno.openKv(kvPath);
  const callers = [
    await createCaller(kv, { name: "chain", creditsMicros: usdToMicros(5) }),
    await createCaller(kv, { name: "stranger", creditsMicros: usdToMicros(5) }),
  ];
  kv.close();
  try {
    await chainAcrossProcesses({ GATEWAY_KV_PATH: kvPath }, callers);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "a chain of Responses calls alternating between two gateway processes on one PostgreSQL reaches the key of each predecessor, across three organizations",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    await using postgres = await startPostgres();
    const url = await postgres.createDatabase("pins");
    const store = await openPostgresStore(url);
    const callers = [
      await createCaller(store, {
        name: "chain",
        creditsMicros: usdToMicros(5),
      }),
      await createCaller(store, {
        name: "stranger",
        creditsMicros: usdToMicros(5),
      }),
    ];
    await store.end();
    await chainAcrossProcesses({ GATEWAY_STORE: url }, callers);
  },
});

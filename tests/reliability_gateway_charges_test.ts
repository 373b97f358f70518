/**
 * No charge lost: a fault run under 100 concurrent callers (ten caller keys,
 * ten calls in flight each), against `gateway/main.ts` subprocesses in
 * front of the simulator. Every answered call's `x-gateway-cost` is
 * recorded; after the fault the ledger must hold exactly those charges, the
 * balances must equal the ledger, and no lease may be left out.
 *
 * - a gateway killed with SIGKILL under load, on a KV file and on
 *   PostgreSQL: a new gateway replays the dead one's settlement journal;
 * - PostgreSQL stopped for 30 s under load and started again, then killed
 *   with SIGKILL and started again, with the load shared by two gateways
 *   whose clocks are 20 minutes apart: each answers from its leases
 *   meanwhile, makes the calls its leases cannot cover wait for the
 *   database (no 5xx), and commits every charge once it is back.
 */
import assert from "node:assert/strict";
import { createCaller, type NewCaller } from "../gateway/state/callers.ts";
import {
  type LedgerEntry,
  listLeases,
  listLedger,
  readBalance,
} from "../gateway/state/credits/ledger.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import { openPostgresStore } from "../gateway/state/store/postgres.ts";
import { delay, type GatewayProcess, spawnGateway } from "./_gateway_e2e.ts";
import {
  POSTGRES_BIN,
  POSTGRES_MISSING,
  reportSkip,
  startPostgres,
} from "./_postgres.ts";

reportSkip();

const CALLERS = 10;
const IN_FLIGHT_EACH = 10;
const OPENING_USD = 5;
/** A call answered later than this waited for the database. */
const WAITED_MS = 1_000;
const SKEW_MS = 20 * 60_000;
const ADMIN_TOKEN = "fault-admin-token-0123456789";

/** What the callers saw. */
interface Seen {
  /** Micro-USD of every answered call, by caller id. */
  charged: Map<string, number>;
  /** The cost of each answered call, by its `x-request-id`. */
  costs: Map<string, number>;
  answered: number;
  /** Statuses of 5xx answers (the process being killed is no answer: fetch throws). */
  fiveHundreds: number[];
  /** Answered calls that took longer than {@linkcode WAITED_MS}. */
  waited: number;
  /** The longest an answered call took, ms. */
  maxMs: number;
}

/**
 * Runs ten calls in flight for each caller until `stop` resolves, against
 * whichever gateway `target()` names at each call.
 */
async function load(
  callers: readonly NewCaller[],
  target: () => string,
  stop: Promise<void>,
): Promise<Seen> {
  const seen: Seen = {
    charged: new Map(),
    costs: new Map(),
    answered: 0,
    fiveHundreds: [],
    waited: 0,
    maxMs: 0,
  };
  let stopped = false;
  stop.then(() => stopped = true);
  const worker = async (caller: NewCaller) => {
    while (!stopped) {
      let response: Response;
      const started = performance.now();
      try {
        response = await fetch(`${target()}/v1/chat/completions`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${caller.key}`,
          },
          body: JSON.stringify({
            model: "gpt-4o-mini",
            messages: [{ role: "user", content: "hello" }],
            max_tokens: 16,
          }),
        });
      } catch {
        // The gateway is gone (killed): no answer, nothing to charge.
        await delay(20);
        continue;
      }
      await response.text().catch(() => "");
      const ms = performance.now() - started;
      if (response.status === 200) {
        if (ms > WAITED_MS) seen.waited++;
        seen.maxMs = Math.max(seen.maxMs, ms);
        const cost = Math.round(
          Number(response.headers.get("x-gateway-cost")) * 1_000_000,
        );
        seen.answered++;
        seen.charged.set(caller.id, (seen.charged.get(caller.id) ?? 0) + cost);
        seen.costs.set(response.headers.get("x-request-id") ?? "", cost);
      } else if (response.status >= 500) {
        seen.fiveHundreds.push(response.status);
        await delay(20);
      }
    }
  };
  await Promise.all(
    callers.flatMap((caller) =>
      Array.from({ length: IN_FLIGHT_EACH }, () => worker(caller))
    ),
  );
  return seen;
}

/**
 * Asserts ledger = the answered charges = the balances, and no lease left
 * out. Every answer a caller received is charged once, at its cost; a
 * charge no caller saw can only be a call the killed gateway answered
 * while it died (its answer cut off on the way), at most one per call in
 * flight.
 */
async function assertExact(
  kv: Deno.Kv,
  callers: readonly NewCaller[],
  seen: Seen,
): Promise<void> {
  let unseen = 0;
  for (const caller of callers) {
    const entries: LedgerEntry[] = await listLedger(kv, caller.id);
    const charges = entries.filter((entry) => entry.kind === "charge");
    const ledger = entries.reduce((sum, entry) => sum + entry.amountMicros, 0);
    const byRequest = new Map(
      charges.map((entry) => [entry.requestId ?? "", -entry.amountMicros]),
    );
    const answeredHere = [...byRequest.keys()].filter((id) =>
      seen.costs.has(id)
    );
    const seenSum = answeredHere.reduce(
      (sum, id) => sum + (seen.costs.get(id) ?? 0),
      0,
    );
    assert.equal(
      answeredHere.reduce((sum, id) => sum + byRequest.get(id)!, 0),
      seenSum,
      `caller ${caller.id}: each answered call is charged its x-gateway-cost`,
    );
    assert.equal(
      seenSum,
      seen.charged.get(caller.id) ?? 0,
      `caller ${caller.id}: every answered call is in the ledger`,
    );
    unseen += charges.length - answeredHere.length;
    assert.equal(
      new Set(charges.map((entry) => entry.requestId)).size,
      charges.length,
      "no call charged twice",
    );
    assert.equal(await readBalance(kv, caller.id), ledger, "balance = ledger");
    assert.deepEqual(await listLeases(kv, caller.id), [], "no lease left out");
  }
  assert.ok(
    unseen <= CALLERS * IN_FLIGHT_EACH,
    `${unseen} charges of answers no caller received`,
  );
}

/** What `/health` and an admin error answer hold. */
interface StatusBody {
  ok?: boolean;
  store?: { reachable?: boolean };
  error?: { code?: string };
}

/** GETs a URL (with the admin token, if given) and times the answer. */
async function timedGet(
  url: string,
  token?: string,
): Promise<{ status: number; body: StatusBody; ms: number }> {
  const started = performance.now();
  const response = await fetch(url, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  const body = await response.json();
  return { status: response.status, body, ms: performance.now() - started };
}

async function makeCallers(kv: Deno.Kv): Promise<NewCaller[]> {
  return await Promise.all(
    Array.from({ length: CALLERS }, (_, i) =>
      createCaller(kv, {
        name: `fault-${i}`,
        creditsMicros: usdToMicros(OPENING_USD),
      })),
  );
}

/**
 * Kills a gateway with SIGKILL after `afterMs` of load, starts another on
 * the same store and journal, runs the load against it a little, stops it
 * cleanly and returns what the callers saw.
 */
async function killUnderLoad(
  env: Record<string, string>,
  callers: readonly NewCaller[],
): Promise<Seen> {
  let gateway: GatewayProcess = await spawnGateway(env);
  let url = gateway.url;
  const { promise: stop, resolve: stopLoad } = Promise.withResolvers<void>();
  const running = load(callers, () => url, stop);
  await delay(2_000);
  gateway.child.kill("SIGKILL");
  await gateway.child.status;
  gateway = await spawnGateway(env);
  url = gateway.url;
  await delay(1_000);
  stopLoad();
  const seen = await running;
  const { code } = await gateway.stop();
  assert.equal(code, 0);
  return seen;
}

Deno.test("a gateway killed with SIGKILL under 100 concurrent callers loses no charge: the next one replays its journal (KV file)", async () => {
  const dir = await Deno.makeTempDir();
  await using sim = await startSimulator({ behaviour: { latencyMs: 30 } });
  try {
    const kvPath = `${dir}/gateway.kv`;
    let callers: NewCaller[];
    {
      using kv = await Deno.openKv(kvPath);
      callers = await makeCallers(kv);
    }
    const seen = await killUnderLoad({
      ...sim.env(),
      GATEWAY_KV_PATH: kvPath,
      OPENAI_API_KEYS: "sk-fault-openai-0123456789abcdef",
    }, callers);
    console.log(
      `SIGKILL of a gateway on a KV file: ${seen.answered} answered, ${seen.fiveHundreds.length} 5xx`,
    );
    assert.ok(seen.answered > 50, `${seen.answered} answered`);
    assert.deepEqual(seen.fiveHundreds, []);
    using kv = await Deno.openKv(kvPath);
    await assertExact(kv, callers, seen);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "on PostgreSQL, a gateway killed with SIGKILL, a 30 s database stop and a database SIGKILL under 100 concurrent callers lose no charge",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    const dir = await Deno.makeTempDir();
    await using pg = await startPostgres();
    await using sim = await startSimulator({ behaviour: { latencyMs: 30 } });
    try {
      const url = await pg.createDatabase("charges");
      // The test server runs with synchronous_commit off (speed): a commit
      // it acknowledged can then die with it on SIGKILL. A gateway's charges
      // are as durable as the database makes its commits, so this database
      // makes them durable, as a production one does.
      const psql = await new Deno.Command(
        `${POSTGRES_BIN}/psql`,
        {
          args: [
            "-h",
            "127.0.0.1",
            "-p",
            String(pg.port),
            "-U",
            "postgres",
            "-d",
            "charges",
            "-c",
            "ALTER DATABASE charges SET synchronous_commit = on",
          ],
          stdout: "null",
          stderr: "piped",
        },
      ).output();
      assert.ok(psql.success, new TextDecoder().decode(psql.stderr));
      const store = await openPostgresStore(url);
      const callers = await makeCallers(store);
      await store.end();
      const env = {
        ...sim.env(),
        GATEWAY_STORE: url,
        GATEWAY_JOURNAL_DIR: `${dir}/journal`,
        GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
        OPENAI_API_KEYS: "sk-fault-openai-0123456789abcdef",
      };
      const killed = await killUnderLoad(env, callers);
      assert.ok(killed.answered > 50, `${killed.answered} answered`);
      assert.deepEqual(killed.fiveHundreds, []);

      // The database stops for 30 s while calls are answered by two
      // gateways, the second's clock 20 minutes ahead of the first's.
      const gateway = await spawnGateway(env);
      const skewed = await spawnGateway({
        ...env,
        GATEWAY_CLOCK_OFFSET_MS: String(SKEW_MS),
      });
      let turn = 0;
      const { promise: stop, resolve: stopLoad } = Promise.withResolvers<
        void
      >();
      const running = load(
        callers,
        () => (turn++ % 2 === 0 ? gateway : skewed).url,
        stop,
      );
      await delay(1_000);
      await pg.down();
      await delay(5_000);
      // Meanwhile /health and the admin API answer at once, saying why.
      const health = await timedGet(`${gateway.url}/health`);
      assert.equal(health.status, 200);
      assert.deepEqual(
        [health.body.ok, health.body.store?.reachable],
        [true, false],
      );
      const admin = await timedGet(`${skewed.url}/admin/keys`, ADMIN_TOKEN);
      assert.equal(admin.status, 503);
      assert.equal(admin.body.error?.code, "store_unavailable");
      assert.ok(
        health.ms < 1_000 && admin.ms < 1_000,
        `/health ${health.ms} ms, admin ${admin.ms} ms`,
      );
      await delay(25_000);
      await pg.up();
      await delay(3_000);
      // Then killed outright (SIGKILL: crash recovery) and started again.
      await pg.crash();
      await delay(1_000);
      await pg.up();
      await delay(3_000);
      stopLoad();
      const outage = await running;
      const stopped = await Promise.all([gateway.stop(), skewed.stop()]);
      assert.deepEqual(stopped.map(({ code }) => code), [0, 0]);
      const bugs = stopped.flatMap(({ stderr }) =>
        stderr.split("\n").filter((line) => line.includes('"level":"error"'))
      );
      const charged = [...outage.charged.values()].reduce((a, b) => a + b, 0);
      console.log(
        `30 s stop and SIGKILL, two gateways 20 min apart: ${outage.answered} answered, ${outage.waited} waited over ${WAITED_MS} ms for the database, the longest ${
          Math.round(outage.maxMs)
        } ms, $${
          charged / 1_000_000
        } charged, ${outage.fiveHundreds.length} 5xx`,
      );
      // Calls the leases could not cover while the database was away
      // waited for it: no 5xx at all.
      assert.deepEqual(outage.fiveHundreds, [], bugs.slice(0, 3).join("\n"));
      assert.ok(outage.waited > 0, "some calls waited for the database");
      const seen: Seen = {
        answered: killed.answered + outage.answered,
        fiveHundreds: [],
        waited: killed.waited + outage.waited,
        maxMs: Math.max(killed.maxMs, outage.maxMs),
        costs: new Map([...killed.costs, ...outage.costs]),
        charged: new Map(
          callers.map((caller) => [
            caller.id,
            (killed.charged.get(caller.id) ?? 0) +
            (outage.charged.get(caller.id) ?? 0),
          ]),
        ),
      };
      const check = await openPostgresStore(url);
      try {
        await assertExact(check, callers, seen);
      } finally {
        await check.end();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

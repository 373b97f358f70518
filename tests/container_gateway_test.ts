/**
 * `deploy/Dockerfile` built and run against a real Docker daemon: two
 * gateway containers (`--network host`, each its own PORT) on one real
 * PostgreSQL (`GATEWAY_STORE`), in front of one simulator on loopback.
 * 200 streamed calls of one caller are spread over both; mid-stream one
 * container gets `docker stop`: the streams it is serving finish and are
 * charged, it exits 0, the calls that find it gone go to the other, which
 * keeps serving. The ledger then has one charge per call served and sums to
 * the balance both gateways report. Also: the image's command is
 * `deno task start`'s, and the KV store lives in the `/data` volume.
 */
import assert from "node:assert/strict";
import { createCaller } from "../gateway/state/callers.ts";
import { listLedger, readBalance } from "../gateway/state/credits/ledger.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import { openPostgresStore } from "../gateway/state/store/postgres.ts";
import { ledgerSum, postJson } from "./_gateway_e2e.ts";
import {
  buildImage,
  DOCKER_MISSING,
  dockerOk,
  reportSkip,
  ROOT,
  TEST_LABEL,
} from "./_docker.ts";
import { freePort } from "./_ports.ts";
import { POSTGRES_MISSING, startPostgres } from "./_postgres.ts";

reportSkip();
if (!DOCKER_MISSING && POSTGRES_MISSING) console.log(POSTGRES_MISSING);
const IMAGE = "mcpkit-test/gateway";
const CALLS = 200;

/** Starts a gateway container on the host's loopback and waits for `/health`. */
async function startGateway(
  env: Record<string, string>,
  extra: string[] = [],
): Promise<{ id: string; url: string }> {
  const port = freePort();
  const id = await dockerOk([
    "run",
    "-d",
    "--network",
    "host",
    "--label",
    TEST_LABEL,
    ...Object.entries({ ...env, PORT: String(port), HOST: "127.0.0.1" })
      .flatMap(([name, value]) => ["-e", `${name}=${value}`]),
    ...extra,
    IMAGE,
  ]);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const response = await fetch(`${url}/health`);
      await response.body?.cancel();
      if (response.ok) return { id, url };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      const logs = await new Deno.Command("docker", {
        args: ["logs", id],
        stderr: "piped",
        stdout: "piped",
      }).output();
      throw new Error(
        `The gateway container did not answer: ${
          new TextDecoder().decode(logs.stderr)
        }`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function logsOf(id: string): Promise<string> {
  const out = await new Deno.Command("docker", {
    args: ["logs", id],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return new TextDecoder().decode(out.stderr);
}

Deno.test({
  name:
    "the gateway image runs deno task start's command, with its KV file in the /data volume",
  ignore: DOCKER_MISSING !== undefined,
  sanitizeResources: false,
  async fn() {
    const tasks = JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`))
      .tasks as Record<string, string>;
    const dockerfile = await Deno.readTextFile(`${ROOT}/deploy/Dockerfile`);
    const entry = JSON.parse(
      /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)?.[1] ?? "[]",
    ) as string[];
    // `deno run -A <v8 flags> gateway/main.ts`, with --cached-only added
    // (the image fetched its dependencies when it was built).
    assert.deepEqual(
      entry.slice(entry.indexOf("deno")).filter((arg) =>
        arg !== "--cached-only"
      ),
      tasks.start.split(" "),
    );

    await buildImage(IMAGE, "deploy/Dockerfile");
    const volume = `mcpkit-test-gateway-${crypto.randomUUID().slice(0, 8)}`;
    const gateway = await startGateway({}, ["-v", `${volume}:/data`]);
    try {
      assert.match(await logsOf(gateway.id), /store: KV \/data\/gateway\.kv/);
      const files = await dockerOk(["exec", gateway.id, "ls", "/data"]);
      assert.match(files, /gateway\.kv/);
      await dockerOk(["stop", "-t", "20", gateway.id]);
      assert.equal(
        await dockerOk([
          "inspect",
          "--format",
          "{{.State.ExitCode}}",
          gateway.id,
        ]),
        "0",
      );
    } finally {
      await dockerOk(["rm", "-f", gateway.id]).catch(() => {});
      await dockerOk(["volume", "rm", "-f", volume]).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "two gateway containers on one PostgreSQL share one balance over 200 streamed calls; docker stop of one mid-stream drains and charges its streams while the other keeps serving",
  ignore: DOCKER_MISSING !== undefined || POSTGRES_MISSING !== undefined,
  sanitizeResources: false,
  async fn() {
    await buildImage(IMAGE, "deploy/Dockerfile");
    await using pg = await startPostgres();
    const url = await pg.createDatabase("containers");
    // Streams of a few hundred ms, so some are always in flight.
    await using sim = await startSimulator({
      behaviour: { latencyMs: 20, chunkDelayMs: 40 },
    });
    const store = await openPostgresStore(url);
    const opening = usdToMicros(50);
    const caller = await createCaller(store, {
      name: "shared",
      creditsMicros: opening,
    });
    const env = {
      ...sim.env(),
      GATEWAY_STORE: url,
      OPENAI_API_KEYS: "sk-ctr-1,sk-ctr-2",
      GATEWAY_DRAIN_TIMEOUT_MS: "15000",
    };
    const gateways = await Promise.all([
      startGateway(env),
      startGateway(env),
    ]);
    try {
      const [stopped, serving] = gateways;
      let stopping = false;
      const servedBy = { stopped: 0, serving: 0, retried: 0, drained: 0 };
      const call = async (i: number): Promise<{
        status: number;
        requestId: string | null;
      }> => {
        // Spread over both, as a load balancer would; one that finds its
        // gateway gone (refused, 503) goes to the other.
        const first = i % 2 === 0 ? stopped : serving;
        for (const target of [first, first === stopped ? serving : stopped]) {
          const startedBeforeStop = !stopping;
          try {
            const response = await postJson(
              `${target.url}/v1/chat/completions`,
              caller.key,
              {
                model: "gpt-4o-mini",
                stream: true,
                messages: [{ role: "user", content: `call ${i}` }],
              },
            );
            const text = await response.text();
            if (response.status === 503 && target === stopped) {
              servedBy.retried++;
              continue;
            }
            if (response.status === 200) {
              assert.match(text, /data: \[DONE\]/, `call ${i} streamed whole`);
              servedBy[target === stopped ? "stopped" : "serving"]++;
              // In flight on the stopped gateway when the stop came.
              if (target === stopped && startedBeforeStop && stopping) {
                servedBy.drained++;
              }
            }
            return {
              status: response.status,
              requestId: response.headers.get("x-request-id"),
            };
          } catch (error) {
            // A refused connection: the stopped gateway is gone.
            if (target === stopped && stopping) {
              servedBy.retried++;
              continue;
            }
            throw error;
          }
        }
        return { status: 0, requestId: null };
      };
      // 200 calls, at most 40 at a time.
      const results: { status: number; requestId: string | null }[] = [];
      let next = 0;
      const lane = async () => {
        while (next < CALLS) {
          const i = next++;
          results.push(await call(i));
          if (i === 60 && !stopping) {
            stopping = true;
            // Mid-stream: calls are in flight on it right now.
            stopPromise = dockerOk(["stop", "-t", "30", stopped.id]);
          }
        }
      };
      let stopPromise: Promise<string> | undefined;
      await Promise.all(Array.from({ length: 40 }, lane));
      await stopPromise;

      assert.deepEqual(
        results.filter((r) => r.status !== 200).map((r) => r.status),
        [],
        "every call was served by one of the two",
      );
      assert.ok(servedBy.stopped > 0 && servedBy.serving > 0, "both served");
      assert.ok(servedBy.drained > 0, "streams were in flight at the stop");
      assert.equal(
        await dockerOk([
          "inspect",
          "--format",
          "{{.State.ExitCode}}",
          stopped.id,
        ]),
        "0",
        await logsOf(stopped.id),
      );

      // The surviving gateway's lease returns once its caller is idle.
      const deadline = Date.now() + 10_000;
      let ledger = await listLedger(store, caller.id);
      while (
        ledger.filter((e) => e.kind === "charge").length < CALLS &&
        Date.now() < deadline
      ) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        ledger = await listLedger(store, caller.id);
      }
      const charges = ledger.filter((e) => e.kind === "charge");
      const charged = new Set(charges.map((e) => e.requestId));
      assert.equal(charges.length, CALLS, "one charge per call served");
      for (const result of results) {
        assert.ok(charged.has(result.requestId!), `${result.requestId}`);
      }
      const balance = await readBalance(store, caller.id);
      assert.equal(
        ledgerSum(ledger),
        balance,
        "the ledger sums to the balance",
      );
      assert.ok(balance < opening);
      const credits = await (await fetch(`${serving.url}/credits`, {
        headers: { authorization: `Bearer ${caller.key}` },
      })).json();
      assert.equal(credits.balance, balance / 1_000_000);
      console.log(
        `served by the stopped gateway ${servedBy.stopped} (${servedBy.drained} in flight at its stop, drained), by the other ${servedBy.serving}; ${servedBy.retried} sent on after the stop`,
      );
    } finally {
      for (const gateway of gateways) {
        await dockerOk(["rm", "-f", gateway.id]).catch(() => {});
      }
      await store.end();
    }
  },
});

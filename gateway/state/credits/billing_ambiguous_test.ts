import assert from "node:assert/strict";
import { createCaller } from "../callers.ts";
import { createBilling } from "./billing.ts";
import { usdToMicros } from "./money.ts";

/**
 * A store whose next commit fails with `code` after (`applied`) or before it
 * writes: what a PostgreSQL connection dropping while a commit runs, or
 * refused before it is sent, looks like to the gateway.
 */
function flakyStore(kv: Deno.Kv) {
  const failNext: { code?: string; applied?: boolean; times?: number } = {};
  const failure = () => {
    const error = new Error(`write ${failNext.code}`) as Error & {
      code?: string;
    };
    error.code = failNext.code;
    failNext.times = (failNext.times ?? 1) - 1;
    if (failNext.times <= 0) failNext.code = undefined;
    return error;
  };
  const store = new Proxy(kv, {
    get(target, property) {
      if (property === "atomic") {
        return () => {
          const op = target.atomic();
          const commit = op.commit.bind(op);
          op.commit = async () => {
            if (failNext.code && !failNext.applied) throw failure();
            const result = await commit();
            if (failNext.code && result.ok) throw failure();
            return result;
          };
          return op;
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { store, failNext };
}

async function settleOnce(
  failure: { code: string; applied: boolean; times?: number },
): Promise<{ charges: number; balance: number; logs: string[] }> {
  using kv = await Deno.openKv(":memory:");
  const caller = await createCaller(kv, {
    name: "a",
    creditsMicros: usdToMicros(1),
  });
  const { store, failNext } = flakyStore(kv);
  const logs: string[] = [];
  const billing = createBilling(store, {
    log: (record) => logs.push(String(record.message)),
  });
  const held = await billing.reserve(caller.id, 5_000);
  assert.ok(held.ok);
  await billing.flush();
  Object.assign(failNext, failure);
  billing.settleSoon({
    reservation: held.reservation,
    costMicros: 100_000,
    usage: { inputTokens: 1, outputTokens: 1, cachedInputTokens: 0 },
    trace: {
      requestId: "req_1",
      traceId: "t1",
      callerId: caller.id,
      route: "chat",
      status: 200,
      stream: false,
      inputTokens: 1,
      outputTokens: 1,
      cachedTokens: 0,
      costMicros: 100_000,
      latencyMs: 1,
      time: Date.now(),
    },
  });
  // A store down for long: the settle goes on behind, until it commits
  // (flush() would stop its retries after a few seconds, as at shutdown).
  const charged = async () =>
    (await Array.fromAsync(kv.list({ prefix: ["ledger", caller.id] })))
      .length > 1;
  for (let waited = 0; !(await charged()) && waited < 30_000;) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    waited += 100;
  }
  await billing.flush();
  const entries = await Array.fromAsync(
    kv.list<{ kind: string }>({ prefix: ["ledger", caller.id] }),
  );
  return {
    charges: entries.filter((entry) => entry.value.kind === "charge").length,
    balance: await billing.balance(caller.id),
    logs,
  };
}

Deno.test("a settle whose commit was applied but whose answer was lost is found in the ledger, so the call is charged once", async () => {
  const { charges, balance } = await settleOnce({
    code: "CONNECTION_CLOSED",
    applied: true,
  });
  assert.equal(charges, 1);
  assert.equal(balance, usdToMicros(1) - 100_000);
});

Deno.test("a settle is never abandoned: 8 failed rounds in a row (the store down), then it commits, charged once", async () => {
  const { charges, balance, logs } = await settleOnce({
    code: "ECONNREFUSED",
    applied: false,
    times: 8,
  });
  assert.equal(charges, 1, logs.join("\n"));
  assert.equal(balance, usdToMicros(1) - 100_000);
  assert.ok(logs.some((message) => /it is tried again/.test(message)));
});

Deno.test("a settle whose commit never reached the store is retried and charged once", async () => {
  const { charges, balance } = await settleOnce({
    code: "ECONNREFUSED",
    applied: false,
  });
  assert.equal(charges, 1);
  assert.equal(balance, usdToMicros(1) - 100_000);
});

import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import type { Caller } from "../callers.ts";
import { LimitCounters, type LimitTicket } from "./counters.ts";
import type { CallerLimits } from "./limits.ts";

const NOON = Date.parse("2026-11-25T12:00:10Z");

function callerWith(limits: CallerLimits | undefined, id = "ck_a"): Caller {
  return { id, name: "test", limits };
}

async function withKv(fn: (kv: Deno.Kv) => Promise<void>): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  try {
    await fn(kv);
  } finally {
    kv.close();
  }
}

/** `kv`, counting the commits that lost a `check()` to another writer. */
function countingLostCommits(kv: Deno.Kv): Deno.Kv & { lostCommits: number } {
  const counts = { lostCommits: 0 };
  const atomic = () => {
    const op = kv.atomic();
    const commit = op.commit.bind(op);
    op.commit = async () => {
      const result = await commit();
      if (!result.ok) counts.lostCommits++;
      return result;
    };
    return op;
  };
  return new Proxy(kv, {
    get(target, property) {
      if (property === "atomic") return atomic;
      if (property === "lostCommits") return counts.lostCommits;
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as Deno.Kv & { lostCommits: number };
}

/** The GatewayError a refused reserve rejects with. */
async function refusal(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof GatewayError, `not a GatewayError: ${error}`);
    return error;
  }
  assert.fail("the reserve was not refused");
}

Deno.test("LimitCounters.reserve() passes a caller without counted limits without touching the store", async () => {
  await withKv(async (kv) => {
    const counters = new LimitCounters(kv, () => NOON);
    assert.equal(
      await counters.reserve(callerWith(undefined), { tokens: 10, micros: 1 }),
      undefined,
    );
    assert.equal(
      await counters.reserve(callerWith({ models: ["gpt-4o"] }), {
        tokens: 10,
        micros: 1,
      }),
      undefined,
    );
    const entries = await Array.fromAsync(kv.list({ prefix: [] }));
    assert.equal(entries.length, 0);
  });
});

Deno.test("LimitCounters.reserve() grants rpm calls in a minute, refuses the next with 429 and retry-after, and frees up the next minute", async () => {
  await withKv(async (kv) => {
    let now = NOON;
    const counters = new LimitCounters(kv, () => now);
    const caller = callerWith({ rpm: 2 });
    const demand = { tokens: 5, micros: 0 };
    const first = await counters.reserve(caller, demand);
    const second = await counters.reserve(caller, demand);
    assert.equal(first?.minute, Date.parse("2026-11-25T12:00:00Z"));
    assert.equal(second?.tokens, 5);
    const refused = await refusal(counters.reserve(caller, demand));
    assert.equal(refused.status, 429);
    assert.equal(refused.code, "key_rpm_limit");
    // 50 s are left of the minute at 12:00:10.
    assert.equal(refused.retryAfterSeconds, 50);
    // Another caller's minute is its own.
    assert.ok(await counters.reserve(callerWith({ rpm: 2 }, "ck_b"), demand));
    now = Date.parse("2026-11-25T12:01:00Z");
    const next = await counters.reserve(caller, demand);
    assert.equal(next?.minute, now);
  });
});

Deno.test("LimitCounters.settle() replaces the estimated tokens by the real ones, so the tpm frees up", async () => {
  await withKv(async (kv) => {
    const counters = new LimitCounters(kv, () => NOON);
    const caller = callerWith({ tpm: 100 });
    const ticket = await counters.reserve(caller, { tokens: 60, micros: 0 });
    assert.ok(ticket);
    const refused = await refusal(
      counters.reserve(caller, { tokens: 50, micros: 0 }),
    );
    assert.equal(refused.status, 429);
    assert.equal(refused.code, "key_tpm_limit");
    assert.match(refused.message, /this call may use 50, 60 are counted/);
    counters.settle(ticket, { tokens: 10, micros: 0 });
    await counters.flush();
    // 10 + 90 is exactly the limit: granted; one more token is not.
    assert.ok(await counters.reserve(caller, { tokens: 90, micros: 0 }));
    await refusal(counters.reserve(caller, { tokens: 1, micros: 0 }));
  });
});

Deno.test("LimitCounters counts spend against the cap of its period and gives back what a call did not cost", async () => {
  await withKv(async (kv) => {
    const counters = new LimitCounters(kv, () => NOON);
    const caller = callerWith({ spend: { amount: 1, period: "day" } });
    const ticket = await counters.reserve(caller, {
      tokens: 1,
      micros: 600_000,
    });
    assert.ok(ticket);
    assert.equal(ticket.micros, 600_000);
    assert.equal(ticket.period, Date.parse("2026-11-25T00:00:00Z"));
    assert.equal(ticket.periodEnd, Date.parse("2026-11-26T00:00:00Z"));
    const refused = await refusal(
      counters.reserve(caller, { tokens: 1, micros: 600_000 }),
    );
    assert.equal(refused.status, 402);
    assert.equal(refused.code, "key_spend_limit");
    assert.match(refused.message, /resets at 2026-11-26T00:00:00.000Z/);
    counters.settle(ticket, { tokens: 1, micros: 100_000 });
    await counters.flush();
    // 100 000 spent + 900 000 held is exactly the $1 cap.
    assert.ok(await counters.reserve(caller, { tokens: 1, micros: 900_000 }));
    await refusal(counters.reserve(caller, { tokens: 1, micros: 1 }));
  });
});

Deno.test("LimitCounters.refusalBeforeBody() refuses from the counters as they stand, counting nothing", async () => {
  await withKv(async (kv) => {
    const counters = new LimitCounters(kv, () => NOON);
    assert.equal(
      await counters.refusalBeforeBody(callerWith(undefined), 1),
      undefined,
    );
    const limited = callerWith({
      rpm: 2,
      tpm: 100,
      spend: { amount: 1, period: "day" },
    });
    // Peeking counts nothing: both calls are still granted after it.
    assert.equal(await counters.refusalBeforeBody(limited, 1), undefined);
    await counters.reserve(limited, { tokens: 10, micros: 400_000 });
    await counters.reserve(limited, { tokens: 10, micros: 400_000 });
    const rpm = await counters.refusalBeforeBody(limited, 1);
    assert.equal(rpm?.status, 429);
    assert.equal(rpm?.code, "key_rpm_limit");
    assert.equal(rpm?.retryAfterSeconds, 50);

    const tokens = callerWith({ tpm: 100 }, "ck_tpm");
    await counters.reserve(tokens, { tokens: 99, micros: 0 });
    assert.equal(await counters.refusalBeforeBody(tokens, 1), undefined);
    await counters.reserve(tokens, { tokens: 1, micros: 0 });
    const tpm = await counters.refusalBeforeBody(tokens, 1);
    assert.equal(tpm?.code, "key_tpm_limit");
    assert.match(tpm?.message ?? "", /may use at least 1, 100 are counted/);

    const spender = callerWith({ spend: { amount: 1, period: "day" } }, "ck_s");
    await counters.reserve(spender, { tokens: 1, micros: 999_990 });
    // The least a call is held at decides: 10 micro-USD fit, 11 do not.
    assert.equal(await counters.refusalBeforeBody(spender, 10), undefined);
    const spend = await counters.refusalBeforeBody(spender, 11);
    assert.equal(spend?.status, 402);
    assert.equal(spend?.code, "key_spend_limit");
    assert.match(spend?.message ?? "", /may cost at least \$0\.000011/);
  });
});

Deno.test("LimitCounters of two processes on one KV grant exactly rpm calls between them (conflicting commits are retried)", async () => {
  await withKv(async (store) => {
    const kv = countingLostCommits(store);
    const processes = [
      new LimitCounters(kv, () => NOON),
      new LimitCounters(kv, () => NOON),
    ];
    const caller = callerWith({ rpm: 25 });
    const results = await Promise.allSettled(
      Array.from(
        { length: 40 },
        (_, i) => processes[i % 2].reserve(caller, { tokens: 1, micros: 0 }),
      ),
    );
    const granted = results.filter((result) =>
      result.status === "fulfilled"
    ) as PromiseFulfilledResult<LimitTicket>[];
    const refused = results.filter((result) => result.status === "rejected");
    assert.equal(granted.length, 25);
    assert.equal(refused.length, 15);
    for (const result of refused) {
      const error = (result as PromiseRejectedResult).reason;
      assert.ok(error instanceof GatewayError && error.status === 429);
    }
    // The two processes' batches read the same minute: some commits lost
    // to the other process's and were tried again.
    assert.ok(kv.lostCommits > 0, "no commit conflicted");
  });
});

Deno.test("reserve() commits again after a commit whose answer a dropped connection lost, counting towards the limit, never past it", async () => {
  await withKv(async (kv) => {
    let drops = 1;
    const atomic = () => {
      const op = kv.atomic();
      const commit = op.commit.bind(op);
      op.commit = async () => {
        const result = await commit();
        // Applied, and its answer lost on the way back.
        if (drops-- > 0) {
          throw Object.assign(new Error("read ECONNRESET"), {
            code: "ECONNRESET",
          });
        }
        return result;
      };
      return op;
    };
    const flaky = new Proxy(kv, {
      get(target, property) {
        if (property === "atomic") return atomic;
        const value = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const counters = new LimitCounters(flaky, () => NOON);
    const caller = callerWith({ rpm: 3 });
    const ticket = await counters.reserve(caller, { tokens: 10, micros: 0 });
    assert.ok(ticket);
    // The lost commit counted too: one call took two of the three.
    await counters.reserve(caller, { tokens: 10, micros: 0 });
    await assert.rejects(
      () => counters.reserve(caller, { tokens: 10, micros: 0 }),
      GatewayError,
    );
  });
});

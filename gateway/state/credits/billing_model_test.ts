/**
 * Model-based test of the money path: random interleavings of reserve,
 * settle, top-up, flush, crash and sweep over two billing instances on one
 * KV, checked after every step against a model that applies one operation
 * at a time to one balance.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { createCaller } from "../callers.ts";
import type { Billing } from "./billing.ts";
import type { Reservation } from "./reservation.ts";
import { createBilling } from "./billing.ts";
import { listLeases, listLedger, readBalance, topUp } from "./ledger.ts";
import { sweepExpiredLeases } from "./sweep.ts";

type Step =
  | { kind: "reserve"; instance: number; amount: number }
  | {
    kind: "settle";
    instance: number;
    pick: number;
    share: number;
    soon: boolean;
  }
  | { kind: "topup"; amount: number }
  | { kind: "flush"; instance: number }
  | { kind: "crash"; instance: number }
  | { kind: "sweep" };

const instance = fc.integer({ min: 0, max: 1 });
const steps = fc.array(
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant("reserve" as const),
        instance,
        amount: fc.integer({ min: 1, max: 4_000 }),
      }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant("settle" as const),
        instance,
        pick: fc.nat(),
        // The share of its hold the call really cost, in percent; above
        // 100 the hold underestimated it.
        share: fc.integer({ min: 0, max: 130 }),
        soon: fc.boolean(),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant("topup" as const),
        amount: fc.integer({ min: 1, max: 5_000 }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant("flush" as const), instance }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant("crash" as const), instance }),
    },
    { weight: 1, arbitrary: fc.constant({ kind: "sweep" as const }) },
  ),
  { minLength: 5, maxLength: 40 },
) as fc.Arbitrary<Step[]>;

function trace(callerId: string, requestId: string) {
  return {
    requestId,
    traceId: requestId,
    callerId,
    route: "chat" as const,
    status: 200,
    stream: false,
    inputTokens: 1,
    outputTokens: 1,
    cachedTokens: 0,
    costMicros: 0,
    latencyMs: 1,
    time: 0,
  };
}

Deno.test("two billing instances on one KV keep the ledger exact and never overspend, under any interleaving", async () => {
  await fc.assert(
    fc.asyncProperty(steps, async (plan) => {
      const kv = await Deno.openKv(":memory:");
      let now = 1_000_000;
      const TTL = 60_000;
      const make = () =>
        createBilling(kv, {
          leaseTtlMs: TTL,
          leaseIdleMs: 3_600_000,
          leaseAheadCalls: 3,
          now: () => now,
          log: () => {},
        });
      try {
        const caller = await createCaller(kv, {
          name: "model",
          creditsMicros: 10_000,
        });
        const instances: Billing[] = [make(), make()];
        const open: Reservation[][] = [[], []];
        // The model: one balance, moved one operation at a time.
        let balance = 10_000;
        let underestimated = 0;
        let request = 0;
        for (const step of plan) {
          switch (step.kind) {
            case "reserve": {
              const result = await instances[step.instance].reserve(
                caller.id,
                step.amount,
              );
              if (result.ok) {
                open[step.instance].push(result.reservation);
                const held = open.flat().reduce(
                  (sum, r) => sum + r.amountMicros,
                  0,
                );
                assert.ok(
                  held <= balance,
                  "a grant never holds past the balance",
                );
              }
              break;
            }
            case "settle": {
              const mine = open[step.instance];
              if (mine.length === 0) break;
              const [reservation] = mine.splice(step.pick % mine.length, 1);
              const cost = Math.floor(
                reservation.amountMicros * step.share / 100,
              );
              underestimated += Math.max(0, cost - reservation.amountMicros);
              const settlement = {
                reservation,
                costMicros: cost,
                usage: {
                  inputTokens: 1,
                  outputTokens: 1,
                  cachedInputTokens: 0,
                },
                trace: trace(caller.id, `req_${request++}`),
              };
              if (step.soon) instances[step.instance].settleSoon(settlement);
              else await instances[step.instance].settle(settlement);
              balance -= cost;
              break;
            }
            case "topup":
              await topUp(kv, caller.id, step.amount);
              balance += step.amount;
              break;
            case "flush":
              await instances[step.instance].flush();
              break;
            case "crash":
              // The process dies: its open reservations with it, its lease
              // stays in KV until the sweep returns it. (Every charge it
              // queued has committed: each step waits for them below.)
              open[step.instance] = [];
              instances[step.instance] = make();
              now += TTL + 1;
              break;
            case "sweep":
              await sweepExpiredLeases(kv, now);
              break;
          }
          // Every charge queued so far is committed before checking.
          await Promise.all(
            instances.map((billing) => billing.balance(caller.id)),
          );
          const ledger = await listLedger(kv, caller.id);
          const ledgerSum = ledger.reduce(
            (sum, entry) => sum + entry.amountMicros,
            0,
          );
          const stored = await readBalance(kv, caller.id);
          assert.equal(ledgerSum, stored, "the ledger adds up to the balance");
          assert.equal(stored, balance, "the balance is the model's");
          // No overspend: what is held for open calls never exceeds the
          // balance, and the balance goes below zero only by what holds
          // underestimated.
          const held = open.flat().reduce((sum, r) => sum + r.amountMicros, 0);
          assert.ok(
            held <= Math.max(0, balance) + underestimated,
            "holds fit the balance",
          );
          assert.ok(
            balance >= -underestimated,
            "no debt beyond underestimates",
          );
        }
        for (const billing of instances) await billing.flush();
        now += TTL + 1;
        await sweepExpiredLeases(kv, now);
        assert.deepEqual(
          await listLeases(kv, caller.id),
          [],
          "every lease went back",
        );
        assert.equal(await readBalance(kv, caller.id), balance);
      } finally {
        kv.close();
      }
    }),
    { seed: 42, numRuns: 60 },
  );
});

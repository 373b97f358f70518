/**
 * Money-path throughput: reserve+settle pairs per second against ONE caller
 * on a KV file, with `concurrency` pairs in flight, and the latency of each
 * reserve under that load. Not a test: run it by hand and compare.
 *
 * Usage: `deno run -A bench/billing.ts [seconds=5] [concurrency=64] [mode=settle|soon] [rate]`
 * (`soon` settles write-behind with `settleSoon`; both modes flush at the end,
 * which waits for queued settles and returns the caller's lease).
 * With `rate` (requests/s), calls arrive open-loop at that rate instead of
 * `concurrency` loops, and `addedMs` is what the money path adds to each call
 * (reserve, plus settle or settleSoon).
 *
 * @module
 */

import { join } from "node:path";
import { createCaller } from "../gateway/state/callers.ts";
import { createBilling } from "../gateway/state/credits/billing.ts";
import { listLedger, readBalance } from "../gateway/state/credits/ledger.ts";
import type { Billing } from "../gateway/state/credits/billing.ts";
import type { Settlement } from "../gateway/state/credits/reservation.ts";

const seconds = Number(Deno.args[0] ?? 5);
const concurrency = Number(Deno.args[1] ?? 64);
const mode = Deno.args[2] ?? "settle";
const rate = Deno.args[3] === undefined ? undefined : Number(Deno.args[3]);

const dir = await Deno.makeTempDir();
const kv = await Deno.openKv(join(dir, "bench.kv"));
const opening = 1_000_000_000_000;
const caller = await createCaller(kv, {
  name: "bench",
  creditsMicros: opening,
});
const billing: Billing = createBilling(kv);

function settlementFor(
  reservation: Settlement["reservation"],
  requestId: string,
): Settlement {
  return {
    reservation,
    costMicros: 700,
    usage: { inputTokens: 100, outputTokens: 50, cachedInputTokens: 0 },
    trace: {
      requestId,
      traceId: requestId,
      callerId: caller.id,
      model: "gpt-4o-mini",
      route: "chat",
      provider: "openai",
      providerKeyId: "openai:0123abcd",
      status: 200,
      stream: false,
      inputTokens: 100,
      outputTokens: 50,
      cachedTokens: 0,
      costMicros: 700,
      latencyMs: 3,
      time: Date.now(),
    },
  };
}

const reserveLatencies: number[] = [];
const addedLatencies: number[] = [];
let pairs = 0;
let counter = 0;
const deadline = performance.now() + seconds * 1000;
type WriteBehind = Billing & {
  settleSoon(s: Settlement): unknown;
  flush(): Promise<void>;
};

async function pair(): Promise<void> {
  const started = performance.now();
  const held = await billing.reserve(caller.id, 5_000);
  reserveLatencies.push(performance.now() - started);
  if (!held.ok) throw new Error("Bench caller ran out of credits");
  const settlement = settlementFor(held.reservation, `req_${counter++}`);
  // The upstream call would be here; only the gateway's own work is timed.
  if (mode === "soon") {
    // Added in the write-behind change; absent on the baseline.
    (billing as WriteBehind).settleSoon(settlement);
  } else {
    await billing.settle(settlement);
  }
  addedLatencies.push(performance.now() - started);
  pairs++;
}

async function loop(): Promise<void> {
  while (performance.now() < deadline) await pair();
}

async function openLoop(perSecond: number): Promise<void> {
  const running: Promise<void>[] = [];
  const began = performance.now();
  let sent = 0;
  while (performance.now() < deadline) {
    const due = Math.floor((performance.now() - began) * perSecond / 1000);
    for (; sent < due; sent++) running.push(pair());
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await Promise.all(running);
}

const began = performance.now();
if (rate === undefined) {
  await Promise.all(Array.from({ length: concurrency }, loop));
} else {
  await openLoop(rate);
}
const elapsed = (performance.now() - began) / 1000;
// Also returns the lease, so the KV balance is the whole balance.
await (billing as WriteBehind).flush();
const flushed = (performance.now() - began) / 1000;

function quantiles(samples: number[]): Record<string, number> {
  samples.sort((a, b) => a - b);
  const at = (q: number) =>
    Number(
      samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]
        .toFixed(2),
    );
  return { p50: at(0.5), p99: at(0.99), max: at(1) };
}
const ledger = await listLedger(kv, caller.id);
const sum = ledger.reduce((total, entry) => total + entry.amountMicros, 0);
const final = await readBalance(kv, caller.id);
console.log(JSON.stringify({
  mode,
  ...(rate === undefined ? { concurrency } : { rate }),
  seconds: Number(elapsed.toFixed(2)),
  pairsPerSecond: Math.round(pairs / elapsed),
  pairsPerSecondFlushed: Math.round(pairs / flushed),
  reserveMs: quantiles(reserveLatencies),
  addedMs: quantiles(addedLatencies),
  ledgerExact: sum === final && final === opening - pairs * 700,
}));
kv.close();
await Deno.remove(dir, { recursive: true });

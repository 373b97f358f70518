import assert from "node:assert/strict";
import { join } from "node:path";
import { createCaller } from "../gateway/state/callers.ts";
import {
  listLeases,
  listLedger,
  readBalance,
  topUp,
} from "../gateway/state/credits/ledger.ts";
import { listTraces } from "../gateway/state/traces.ts";

const WORKER =
  new URL("./fixtures/billing_worker.ts", import.meta.url).pathname;

interface WorkerSummary {
  reserved: number;
  refused: number;
  chargedMicros: number;
  lowestBalanceMicros: number;
}

Deno.test(
  "three gateway processes on one KV file keep one exact ledger and never overspend",
  () => threeProcesses([]),
);

Deno.test(
  "three gateway processes on one KV file settling write-behind keep one exact ledger and never overspend",
  () => threeProcesses(["soon"]),
);

/** Runs three billing workers against one caller on a fresh KV file and checks the ledger. */
async function threeProcesses(workerArgs: string[]): Promise<void> {
  const dir = await Deno.makeTempDir();
  const kvPath = join(dir, "gateway.kv");
  const kv = await Deno.openKv(kvPath);
  try {
    const opening = 15_000;
    const caller = await createCaller(kv, {
      name: "shared",
      creditsMicros: opening,
    });
    const rounds = 40;
    const workers = Array.from(
      { length: 3 },
      () =>
        new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "-A",
            WORKER,
            kvPath,
            caller.id,
            String(rounds),
            ...workerArgs,
          ],
          stdout: "piped",
          stderr: "piped",
          signal: AbortSignal.timeout(60_000),
        }).output(),
    );
    // Top-ups from a fourth writer while the workers spend.
    let toppedUp = 0;
    for (let i = 0; i < 5; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      await topUp(kv, caller.id, 1_000);
      toppedUp += 1_000;
    }

    const summaries: WorkerSummary[] = [];
    for (const output of await Promise.all(workers)) {
      assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
      summaries.push(JSON.parse(new TextDecoder().decode(output.stdout)));
    }

    const finalBalance = await readBalance(kv, caller.id);
    const ledger = await listLedger(kv, caller.id);
    const charges = ledger.filter((entry) => entry.kind === "charge");
    const charged = summaries.reduce(
      (sum, summary) => sum + summary.chargedMicros,
      0,
    );

    // Every worker returned its lease when it flushed.
    assert.deepEqual(await listLeases(kv, caller.id), []);
    assert.equal(
      ledger.reduce((sum, entry) => sum + entry.amountMicros, 0),
      finalBalance,
    );
    assert.equal(finalBalance, opening + toppedUp - charged);
    assert.equal(
      charges.length,
      summaries.reduce((sum, summary) => sum + summary.reserved, 0),
    );
    assert.equal(
      new Set(charges.map((entry) => entry.reservationId)).size,
      charges.length,
    );
    assert.ok(finalBalance >= 0);
    for (const summary of summaries) {
      assert.ok(summary.lowestBalanceMicros >= 0, JSON.stringify(summary));
    }
    // The balance ran out: some reservations were refused, so the limit was really contended.
    assert.ok(
      summaries.some((summary) => summary.refused > 0),
      JSON.stringify(summaries),
    );
    assert.equal(
      (await listTraces(kv, caller.id, { limit: 1000 })).length,
      charges.length,
    );
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
}

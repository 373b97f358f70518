/**
 * The sweep: returns the leases of gateway processes that died. A living
 * process renews its lease with every commit that changes it (and before
 * half its lifetime is over), so only a crashed or hung one lets it expire.
 *
 * @module
 */
import { commitWithRetry } from "../_kv_retry.ts";
import { leasesPrefix, unleasedKey } from "../kv_keys.ts";
import type { LeaseRecord } from "./ledger.ts";

/** What one sweep returned. */
export interface SweepResult {
  /** How many leases went back. */
  released: number;
  /** How much they held, micro-USD, now back in the unleased credits. */
  releasedMicros: number;
}

/**
 * Returns every lease that expired before `now` to its caller's unleased
 * credits. Each return checks the lease's versionstamp, so a settle
 * committing at the same moment wins and the money never goes back twice;
 * a settle of its process arriving afterwards charges the unleased credits.
 * Run it periodically in every gateway process; concurrent sweeps are safe.
 *
 * @example
 * ```ts
 * import { sweepExpiredLeases } from "./sweep.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const { released, releasedMicros } = await sweepExpiredLeases(kv, Date.now());
 * console.log(released, releasedMicros); // 0 0: no process died holding a lease
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @param now Epoch ms; leases that expired before it go back.
 * @returns What went back.
 */
export async function sweepExpiredLeases(
  kv: Deno.Kv,
  now: number,
): Promise<SweepResult> {
  const result: SweepResult = { released: 0, releasedMicros: 0 };
  for await (const entry of kv.list<LeaseRecord>({ prefix: leasesPrefix() })) {
    if (entry.value.expiresAt >= now) continue;
    const returned = await returnExpiredLease(kv, entry.key, now);
    if (returned !== false) {
      result.released++;
      result.releasedMicros += returned;
    }
  }
  return result;
}

function returnExpiredLease(
  kv: Deno.Kv,
  key: Deno.KvKey,
  now: number,
): Promise<number | false> {
  const callerId = key[1] as string;
  return commitWithRetry(`return of lease "${String(key[2])}"`, async () => {
    const [lease, unleased] = await kv.getMany<[LeaseRecord, number]>([
      key,
      unleasedKey(callerId),
    ]);
    // Returned, or renewed by its living process, meanwhile.
    if (lease.value === null || lease.value.expiresAt >= now) return false;
    const committed = await kv.atomic()
      .check(lease, unleased)
      .set(
        unleasedKey(callerId),
        (unleased.value ?? 0) + lease.value.amountMicros,
      )
      .delete(key)
      .commit();
    return committed.ok ? lease.value.amountMicros : null;
  });
}

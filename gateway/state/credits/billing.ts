/**
 * {@linkcode Billing} over Deno KV: the I/O shell around the credit lease of
 * `lease.ts`. It keeps one lane per caller in this process (the lease as last
 * committed, the reservations taken from it, a queue of operations), takes
 * reservations the lease covers in memory, and commits everything else in
 * batches: the operations of one caller that waited while a commit ran share
 * the next commit (group commit). Settling is one commit: the charge to the
 * lease and the unleased credits, its ledger entry and the call's trace (with
 * the token classes the charge priced), and its usage aggregates unless they
 * are turned off. This file is the contract, its options and the factory;
 * the shell is `_kv_billing.ts`, its lane `_lane.ts`, the open reservations
 * `_reservations.ts`, one batch's commit `_commit.ts`.
 *
 * On the request path there is at most one commit before forwarding (none
 * while the lease covers the call) and one after, which `settleSoon` takes
 * off the path (write-behind).
 *
 * @example Reserve, then settle
 * ```ts
 * import { createCaller } from "../callers.ts";
 * import { createBilling } from "./billing.ts";
 * import { usdToMicros } from "./money.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const caller = await createCaller(kv, { name: "demo", creditsMicros: usdToMicros(1) });
 * const billing = createBilling(kv);
 * const held = await billing.reserve(caller.id, 5_000);
 * if (held.ok) {
 *   const usage = { inputTokens: 10, outputTokens: 20, cachedInputTokens: 0 };
 *   await billing.settle({
 *     reservation: held.reservation, costMicros: 1_200, usage,
 *     trace: {
 *       requestId: "req_1", traceId: "t1", callerId: caller.id, route: "chat", status: 200,
 *       stream: false, inputTokens: 10, outputTokens: 20, cachedTokens: 0, costMicros: 1_200,
 *       latencyMs: 50, time: Date.now(),
 *     },
 *   });
 * }
 * await billing.flush();
 * kv.close();
 * ```
 *
 * @module
 */
import type { TraceRecord } from "../traces.ts";
import type { ReserveResult, Settlement } from "./reservation.ts";
import { KvBilling } from "./_kv_billing.ts";
import type { SettleJournal } from "./journal.ts";

/** Options of {@linkcode createBilling}. */
export interface BillingOptions {
  /** How long a lease no commit renewed lasts before the sweep may return it, ms. */
  leaseTtlMs?: number;
  /** How long a caller's lease waits after their last reserve or settle before its free part goes back, ms. */
  leaseIdleMs?: number;
  /** How many calls of the latest reservation's size a lease takes ahead of demand; 0 takes only what a reservation lacks. */
  leaseAheadCalls?: number;
  /** How long trace records are kept, ms. */
  traceRetentionMs?: number;
  /** Add per-minute/hour/day usage counters to each trace's commit (default true). */
  usageAggregates?: boolean;
  /** Clock, epoch ms; tests replace it. */
  now?: () => number;
  /** Where a write-behind settlement that finally failed is reported; defaults to a JSON line on stderr. */
  log?: (record: Record<string, unknown>) => void;
  /** Told how long each commit took, seconds (for metrics). */
  onCommit?: (seconds: number) => void;
  /** Where each charge is written down before it is queued (`journal.ts`): a charge the store never took is replayed from it. */
  journal?: SettleJournal;
}

/**
 * Default lifetime of a lease no commit renewed: 15 minutes.
 *
 * @example
 * ```ts
 * import { createBilling, DEFAULT_LEASE_TTL_MS } from "./billing.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * // Leases a crashed process held go back after half the default lifetime.
 * const billing = createBilling(kv, { leaseTtlMs: DEFAULT_LEASE_TTL_MS / 2 });
 * await billing.flush();
 * kv.close();
 * ```
 */
export const DEFAULT_LEASE_TTL_MS: number = 15 * 60 * 1000;

/**
 * Default time a caller's lease waits after their last reserve or settle before it is returned: 1 second.
 *
 * @example
 * ```ts
 * import { createBilling, DEFAULT_LEASE_IDLE_MS } from "./billing.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const billing = createBilling(kv, { leaseIdleMs: 5 * DEFAULT_LEASE_IDLE_MS });
 * await billing.flush();
 * kv.close();
 * ```
 */
export const DEFAULT_LEASE_IDLE_MS = 1_000;

/**
 * Default number of calls of the latest reservation's size a lease takes ahead of demand.
 *
 * @example
 * ```ts
 * import { createBilling, DEFAULT_LEASE_AHEAD_CALLS } from "./billing.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const billing = createBilling(kv, { leaseAheadCalls: DEFAULT_LEASE_AHEAD_CALLS * 2 });
 * await billing.flush();
 * kv.close();
 * ```
 */
export const DEFAULT_LEASE_AHEAD_CALLS = 32;

/**
 * Creates the KV-backed {@linkcode Billing} the gateway calls on every request.
 * Create one per process and share it. Call `flush()` before closing the KV,
 * so queued charges commit and unused leases go back.
 *
 * @example
 * ```ts
 * import { createCaller } from "../callers.ts";
 * import { createBilling } from "./billing.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const caller = await createCaller(kv, { name: "demo", creditsMicros: 10_000 });
 * const billing = createBilling(kv);
 * const held = await billing.reserve(caller.id, 4_000);
 * console.log(held.ok, held.availableMicros); // true 6_000
 * await billing.flush();
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @param options Lease lifetime, idle time and sizing, trace retention, clock, log sink.
 * @returns The billing store.
 */
export function createBilling(
  kv: Deno.Kv,
  options: BillingOptions = {},
): Billing {
  return new KvBilling(kv, {
    leaseTtlMs: options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
    leaseIdleMs: options.leaseIdleMs ?? DEFAULT_LEASE_IDLE_MS,
    leaseAheadCalls: options.leaseAheadCalls ?? DEFAULT_LEASE_AHEAD_CALLS,
    traceRetentionMs: options.traceRetentionMs,
    usageAggregates: options.usageAggregates,
    now: options.now ?? Date.now,
    log: options.log ?? ((record) => console.error(JSON.stringify(record))),
    onCommit: options.onCommit,
    journal: options.journal,
  });
}

/**
 * Credits on the request path: reservations, settlement, the ledger and
 * trace storage. A caller's balance is the sum of their ledger entries.
 */
export interface Billing {
  /** Holds `amountMicros` of the caller's balance for one call, or reports that it cannot (not enough, or a debt). */
  reserve(callerId: string, amountMicros: number): Promise<ReserveResult>;
  /** Closes a reservation: charges the full real cost, writes a ledger entry and the trace, in one commit. */
  settle(settlement: Settlement): Promise<{ availableMicros: number }>;
  /**
   * Queues the same commit as {@linkcode Billing.settle} without waiting for
   * it (write-behind), and returns what will be available once this
   * process's queued work for the caller has committed. {@linkcode Billing.balance}
   * waits for queued settlements of the caller; {@linkcode Billing.flush}
   * waits for all. A settlement that fails is tried again with back-off
   * until it commits; only a shutdown stops it, and then its charge stays in
   * the journal (`journal.ts`) for the next process to replay.
   */
  settleSoon(settlement: Settlement): { availableMicros: number };
  /** Resolves once every queued settlement has committed (or, a few seconds into a store outage, was left to the journal), and unused credit keys went back. */
  flush(): Promise<void>;
  /** Stores the trace (and its usage aggregates) of a call that never reserved (refused before forwarding), in its own commit. */
  storeUnreservedTrace(trace: TraceRecord): Promise<void>;
  /** The caller's balance, micro-USD, once this process's queued settlements for them have committed. */
  balance(callerId: string): Promise<number>;
}

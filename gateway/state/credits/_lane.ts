/**
 * What the KV shell keeps of one caller in one process (a lane): its lease as
 * last committed and the money reservations hold; and how a batch is cut
 * from a caller's queue of operations (the queue itself is the group-commit
 * engine's, `store/group_commit.ts`). Private to `credits/`.
 *
 * @module
 */
import type { ReserveResult, Settlement } from "./reservation.ts";
import type { TraceRecord } from "../traces.ts";
import type { TraceBodies } from "../traces.ts";
import type { LeaseRecord } from "./ledger.ts";

// Deno KV allows 100 checks, 1000 mutations and 819 200 bytes of mutations
// per atomic (Deno 2.9). A batch checks the unleased credits and the lease,
// writes at most four keys per settle (ledger entry, trace, trace index) and
// by a generous estimate of its bytes stays under 512 KiB; an atomic refused
// for its size anyway is split in halves.
export const MAX_BATCH_OPERATIONS = 96;
const MAX_BATCH_BYTES = 512 * 1024;
/** A generous estimate of a settle's writes beside its trace, bytes. */
const SETTLE_BYTES = 2_048;

/**
 * An upper bound of what a settle writes, bytes, without serialising its
 * trace: the fixed fields of the trace and the ledger entry fit in
 * {@linkcode SETTLE_BYTES} and 1 KiB; the text a caller or provider can
 * lengthen (the trace id, in both; the error; the attempts) counts 3 bytes a
 * character, UTF-8's most for a UTF-16 unit; the bodies a trace keeps, 2
 * bytes a character.
 *
 * @param trace The settle's trace.
 * @returns Bytes.
 */
export function settleBytes(trace: TraceRecord & TraceBodies): number {
  const text = 2 * trace.traceId.length + (trace.error?.length ?? 0) +
    (trace.attempts ? JSON.stringify(trace.attempts).length : 0);
  // Kept bodies are stored at most two bytes a character (UTF-16).
  const bodies = (trace.requestBody?.length ?? 0) +
    (trace.responseBody?.length ?? 0);
  return SETTLE_BYTES + 1_024 + 3 * text + 2 * bodies;
}

/** A job's result: a value, or an error; `final` errors are not worth retrying. */
export type Outcome<T> =
  | { ok: true; value: T }
  | { ok: false; error: unknown; final: boolean };

/** A reservation this process took from one of its leases, until its settle commits. */
export interface OpenReservation {
  id: string;
  callerId: string;
  leaseId: string;
  /** What it holds of the lease; once claimed by a settle, the part of the cost the hold pays. */
  amountMicros: number;
  settling: boolean;
}

/** A lease as this process last committed or read it. */
export interface HeldLease {
  record: LeaseRecord;
  versionstamp: string;
}

/** A reserve the lease could not cover in memory. */
export interface ReserveJob {
  kind: "reserve";
  amountMicros: number;
  done: (outcome: Outcome<ReserveResult>) => void;
}

/** A settle: its charge, ledger entry and trace. */
export interface SettleJob {
  kind: "settle";
  settlement: Settlement;
  open: OpenReservation;
  bytes: number;
  done: (outcome: Outcome<{ availableMicros: number }>) => void;
}

/** `grow` tops the lease up ahead of demand; `return` gives its free part back. */
export interface LeaseJob {
  kind: "grow" | "return";
  done: (outcome: Outcome<unknown>) => void;
}

/** One operation queued for a caller's next commit. */
export type Job = ReserveJob | SettleJob | LeaseJob;

/** One caller's money as this process sees it. */
export interface Lane {
  lease?: HeldLease;
  /** The part of the lease open reservations and queued settles hold. */
  heldMicros: number;
  /** The part of the lease's free money a running commit moves out. */
  blockedMicros: number;
  /** The unleased credits after this process's latest commit for the caller. */
  knownUnleasedMicros: number;
  /** What queued settles will charge beyond their holds. */
  pendingChargeMicros: number;
  /** The latest reservation's amount. */
  callMicros: number;
  growing: boolean;
  /** The id of the lease a commit is creating, kept while a commit whose answer was lost may have created it: a retry reads it before creating another. */
  creatingLeaseId?: string;
  lastActivity: number;
  idleTimer?: ReturnType<typeof setTimeout>;
}

/** Whether a job asks for money: reserves and growth go ahead of queued settles. */
export function isDemand(job: Job): boolean {
  return job.kind === "reserve" || job.kind === "grow";
}

/** Takes the longest prefix of `jobs` that fits one atomic (at least one job), of one kind of demand. */
export function takeBatch(jobs: Job[]): Job[] {
  const demand = isDemand(jobs[0]);
  let count = 0;
  let bytes = 0;
  while (count < jobs.length && count < MAX_BATCH_OPERATIONS) {
    const job = jobs[count];
    if (isDemand(job) !== demand) break;
    const next = job.kind === "settle" ? job.bytes : 0;
    if (count > 0 && bytes + next > MAX_BATCH_BYTES) break;
    bytes += next;
    count++;
  }
  return jobs.splice(0, count);
}

/** Whether KV refused an atomic for its size. */
export function isLimitError(error: unknown): boolean {
  return error instanceof TypeError && /too (many|large)/i.test(error.message);
}

/** The value of an outcome, or its error thrown. */
export function unwrap<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.value;
  throw outcome.error;
}

/** A new, empty lane. */
export function newLane(): Lane {
  return {
    heldMicros: 0,
    blockedMicros: 0,
    knownUnleasedMicros: 0,
    pendingChargeMicros: 0,
    callMicros: 0,
    growing: false,
    lastActivity: 0,
  };
}

/** The lease's money no reservation holds and no running commit moves. */
export function freeMicros(lane: Lane): number {
  if (!lane.lease) return 0;
  return lane.lease.record.amountMicros - lane.heldMicros - lane.blockedMicros;
}

/** What this process could still reserve for the caller once its queued settles commit. */
export function availableMicros(lane: Lane): number {
  const leased = lane.lease?.record.amountMicros ?? 0;
  return lane.knownUnleasedMicros + leased - lane.heldMicros -
    lane.pendingChargeMicros;
}

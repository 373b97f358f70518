/**
 * The counted caller limits, exact across gateway processes on one KV:
 * requests and tokens per calendar minute, and spend per calendar period.
 * A call takes its share before it is forwarded (one request, the most
 * tokens it may use, the most it may cost) in one commit checked against
 * the limits; afterwards its tokens and cost are replaced by what it really
 * used (write-behind). Each process commits one caller's waiting operations
 * together (group commit), so many concurrent calls cost few commits.
 * Callers without counted limits never reach this module.
 *
 * @module
 */
import { commitWithRetry } from "../_kv_retry.ts";
import { formatUsd, usdToMicros } from "../credits/money.ts";
import { GatewayError } from "../../errors.ts";
import { limitMinuteKey, limitSpendKey } from "../kv_keys.ts";
import { GroupCommit } from "../store/group_commit.ts";
import type { Caller } from "../callers.ts";
import { isStoreUnreachable, StoreUnavailableError } from "../store/outage.ts";
import { type CallerLimits, hasCountedLimits, windowOf } from "./limits.ts";

/** Attempts of a batch whose commits' answers a dropped connection kept losing. */
const LOST_COMMIT_ATTEMPTS = 5;

/** What one call took of its caller's counted limits. */
export interface LimitTicket {
  /** The caller. */
  callerId: string;
  /** Start of the minute it counted in, epoch ms. */
  minute: number;
  /** Start of the spend period it counted in, when the caller has a spend cap. */
  period?: number;
  /** The period's length, for the key's expiry. */
  periodEnd?: number;
  /** Tokens it counted. */
  tokens: number;
  /** Micro-USD it counted against the spend cap. */
  micros: number;
}

/** What a call asks of the limits: the most tokens it may use and the most it may cost. */
export interface LimitDemand {
  /** Tokens: the input estimate plus the output limit. */
  tokens: number;
  /** Micro-USD: the reservation's amount. */
  micros: number;
}

interface MinuteUsage {
  requests: number;
  tokens: number;
}

type LimitJob =
  | {
    kind: "reserve";
    limits: CallerLimits;
    demand: LimitDemand;
    done: (result: LimitTicket | GatewayError | Error) => void;
  }
  | {
    kind: "adjust";
    ticket: LimitTicket;
    tokens: number;
    micros: number;
    done: (result: undefined | Error) => void;
  };

/** The counted limits of every caller, for one gateway process. */
export class LimitCounters {
  readonly #kv: Deno.Kv;
  readonly #now: () => number;
  readonly #engine: GroupCommit<LimitJob> = new GroupCommit<LimitJob>({
    takeBatch: (jobs) => jobs.splice(0, 64),
    run: (callerId, batch) => this.#commit(callerId, batch),
  });

  /**
   * Counts over `kv`.
   *
   * @param kv The gateway's KV.
   * @param now The clock, epoch ms; tests replace it.
   */
  constructor(kv: Deno.Kv, now: () => number = Date.now) {
    this.#kv = kv;
    this.#now = now;
  }

  /**
   * Takes a call's share of the caller's counted limits, or refuses it.
   *
   * @param caller The authenticated caller.
   * @param demand The most tokens and micro-USD the call may use.
   * @returns The ticket to settle, or `undefined` for a caller without counted limits.
   * @throws {GatewayError} 429 with `retry-after` for a rate, 402 for a spent period.
   */
  async reserve(
    caller: Caller,
    demand: LimitDemand,
  ): Promise<LimitTicket | undefined> {
    if (!hasCountedLimits(caller.limits)) return undefined;
    const result = await new Promise<LimitTicket | Error>((done) =>
      this.#submit(caller.id, {
        kind: "reserve",
        limits: caller.limits!,
        demand,
        done,
      })
    );
    if (result instanceof Error) throw result;
    return result;
  }

  /**
   * Replaces a call's counted tokens and cost by what it used, without
   * waiting (a refused or failed call passes 0 and 0).
   *
   * @param ticket The call's ticket.
   * @param used The tokens and micro-USD it really used.
   */
  settle(ticket: LimitTicket, used: LimitDemand): void {
    const tokens = used.tokens - ticket.tokens;
    const micros = used.micros - ticket.micros;
    if (tokens === 0 && micros === 0) return;
    this.#submit(ticket.callerId, {
      kind: "adjust",
      ticket,
      tokens,
      micros,
      done: () => {},
    });
  }

  /** Resolves once every queued adjustment has committed. */
  flush(): Promise<void> {
    return this.#engine.idle();
  }

  /**
   * The refusal a call would get from the caller's counted limits as they
   * stand, whatever its body: this minute's requests at the rpm, its tokens
   * at the tpm, or the period's spend at the cap less `leastMicros`. Reads
   * the counters and counts nothing, so a body can be refused before it is
   * read; the call still takes its share in {@linkcode LimitCounters.reserve}.
   *
   * @param caller The authenticated caller.
   * @param leastMicros The least any call on the route is held at.
   * @returns The refusal, or `undefined` when the limits may let the call in.
   */
  async refusalBeforeBody(
    caller: Caller,
    leastMicros: number,
  ): Promise<GatewayError | undefined> {
    const limits = caller.limits;
    if (!limits || !hasCountedLimits(limits)) return undefined;
    const now = this.#now();
    const minute = windowOf("minute", now);
    const period = limits.spend
      ? windowOf(limits.spend.period, now)
      : undefined;
    const [usage, spent] = await this.#kv.getMany<[MinuteUsage, number]>([
      limitMinuteKey(caller.id, minute.start),
      limitSpendKey(caller.id, period?.start ?? 0),
    ]);
    return limitRefusal(
      limits,
      now,
      usage.value ?? { requests: 0, tokens: 0 },
      period ? spent.value ?? 0 : 0,
      { tokens: 1, micros: leastMicros },
      true,
    );
  }

  #submit(callerId: string, job: LimitJob): void {
    this.#engine.submit(callerId, job);
  }

  /**
   * Commits one batch of a caller's jobs (retrying conflicts) and answers
   * each. A commit whose answer a dropped connection lost is made again
   * once the store is back (the store waits for it): if the lost one was
   * applied, the batch's calls count twice in their minute and period, which
   * errs towards the limit, never past it, and no call gets a 5xx for it.
   */
  async #commit(callerId: string, batch: LimitJob[]): Promise<void> {
    for (let attempt = 1;; attempt++) {
      try {
        const results = await commitWithRetry(
          `limits of caller "${callerId}"`,
          () => this.#attempt(callerId, batch),
        );
        batch.forEach((job, i) =>
          (job.done as (result: unknown) => void)(results[i])
        );
        return;
      } catch (error) {
        if (
          attempt < LOST_COMMIT_ATTEMPTS && isStoreUnreachable(error) &&
          !(error instanceof StoreUnavailableError)
        ) continue;
        for (const job of batch) job.done(error as Error);
        return;
      }
    }
  }

  /** One read-check-commit round for a batch of one caller's jobs; `null` when the commit lost. */
  async #attempt(
    callerId: string,
    batch: readonly LimitJob[],
  ): Promise<(LimitTicket | GatewayError | undefined)[] | null> {
    const now = this.#now();
    const minute = windowOf("minute", now);
    // Every counter this batch touches: the current minute and period, and
    // those of the tickets being adjusted.
    const keys = new Map<string, { key: Deno.KvKey; expireAt: number }>();
    const minuteKeyOf = (start: number) => {
      const key = limitMinuteKey(callerId, start);
      keys.set(JSON.stringify(key), { key, expireAt: start + 120_000 });
      return key;
    };
    const spendKeyOf = (start: number, end: number) => {
      const key = limitSpendKey(callerId, start);
      keys.set(JSON.stringify(key), { key, expireAt: end + 86_400_000 });
      return key;
    };
    for (const job of batch) {
      if (job.kind === "reserve") {
        minuteKeyOf(minute.start);
        if (job.limits.spend) {
          const period = windowOf(job.limits.spend.period, now);
          spendKeyOf(period.start, period.end);
        }
      } else {
        minuteKeyOf(job.ticket.minute);
        if (job.ticket.period !== undefined) {
          spendKeyOf(job.ticket.period, job.ticket.periodEnd!);
        }
      }
    }
    const list = [...keys.values()];
    const entries = await this.#kv.getMany<unknown[]>(list.map((k) => k.key));
    const values = new Map<string, unknown>();
    entries.forEach((entry, i) =>
      values.set(JSON.stringify(list[i].key), entry.value)
    );
    const changed = new Set<string>();
    const minuteOf = (key: Deno.KvKey): MinuteUsage =>
      (values.get(JSON.stringify(key)) as MinuteUsage | null) ??
        { requests: 0, tokens: 0 };
    const spendOf = (key: Deno.KvKey): number =>
      (values.get(JSON.stringify(key)) as number | null) ?? 0;

    const results = batch.map((job) => {
      if (job.kind === "adjust") {
        const key = minuteKeyOf(job.ticket.minute);
        const usage = minuteOf(key);
        values.set(JSON.stringify(key), {
          ...usage,
          tokens: Math.max(0, usage.tokens + job.tokens),
        });
        changed.add(JSON.stringify(key));
        if (job.ticket.period !== undefined) {
          const spendKey = spendKeyOf(job.ticket.period, job.ticket.periodEnd!);
          values.set(
            JSON.stringify(spendKey),
            Math.max(0, spendOf(spendKey) + job.micros),
          );
          changed.add(JSON.stringify(spendKey));
        }
        return undefined;
      }
      const { limits, demand } = job;
      const key = minuteKeyOf(minute.start);
      const usage = minuteOf(key);
      const period = limits.spend
        ? windowOf(limits.spend.period, now)
        : undefined;
      const spendKey = period && spendKeyOf(period.start, period.end);
      const spent = spendKey ? spendOf(spendKey) : 0;
      const refusal = limitRefusal(limits, now, usage, spent, demand);
      if (refusal) return refusal;
      if (spendKey) {
        values.set(JSON.stringify(spendKey), spent + demand.micros);
        changed.add(JSON.stringify(spendKey));
      }
      values.set(JSON.stringify(key), {
        requests: usage.requests + 1,
        tokens: usage.tokens + demand.tokens,
      });
      changed.add(JSON.stringify(key));
      const ticket: LimitTicket = {
        callerId,
        minute: minute.start,
        tokens: demand.tokens,
        micros: limits.spend ? demand.micros : 0,
        ...(period ? { period: period.start, periodEnd: period.end } : {}),
      };
      return ticket;
    });

    if (changed.size > 0) {
      const op = this.#kv.atomic();
      for (const [i, item] of list.entries()) {
        const id = JSON.stringify(item.key);
        if (!changed.has(id)) continue;
        op.check(entries[i]).set(item.key, values.get(id), {
          expireIn: Math.max(1, item.expireAt - now),
        });
      }
      const committed = await op.commit();
      if (!committed.ok) return null;
    }
    return results;
  }
}

/**
 * The refusal of a call asking `demand` of counters standing at `usage`
 * (this minute) and `spent` (this spend period), or `undefined`: 429 with
 * `retry-after` at the rpm or tpm, 402 at the spend cap. `atLeast`: the
 * demand is the least the call can ask (before its body is read), not the
 * most.
 */
function limitRefusal(
  limits: CallerLimits,
  now: number,
  usage: MinuteUsage,
  spent: number,
  demand: LimitDemand,
  atLeast = false,
): GatewayError | undefined {
  const minute = windowOf("minute", now);
  const waitSeconds = Math.max(1, Math.ceil((minute.end - now) / 1000));
  if (limits.rpm !== undefined && usage.requests + 1 > limits.rpm) {
    return new GatewayError(
      429,
      `This key's limit of ${limits.rpm} requests per minute is reached; it frees up in ${waitSeconds} s`,
      { code: "key_rpm_limit", retryAfterSeconds: waitSeconds },
    );
  }
  if (limits.tpm !== undefined && usage.tokens + demand.tokens > limits.tpm) {
    return new GatewayError(
      429,
      `This key's limit of ${limits.tpm} tokens per minute is reached (this call may use ${
        atLeast ? "at least " : ""
      }${demand.tokens}, ${usage.tokens} are counted); it frees up in ${waitSeconds} s`,
      { code: "key_tpm_limit", retryAfterSeconds: waitSeconds },
    );
  }
  if (limits.spend) {
    const cap = usdToMicros(limits.spend.amount);
    if (spent + demand.micros > cap) {
      const period = windowOf(limits.spend.period, now);
      return new GatewayError(
        402,
        `This key's spend cap of $${
          formatUsd(cap)
        } per ${limits.spend.period} is reached ($${
          formatUsd(spent)
        } spent or held, and this call may cost ${
          atLeast ? "at least" : "up to"
        } $${formatUsd(demand.micros)}); it resets at ${
          new Date(period.end).toISOString()
        }`,
        { code: "key_spend_limit" },
      );
    }
  }
  return undefined;
}

/**
 * Group commit, the one engine the credits and the caller limits share: one
 * queue per lane (a caller), drained by one loop at a time, where the jobs
 * that queued while a commit ran go into the next commit together. What a
 * batch is and how it commits belong to the user: `takeBatch` cuts it from
 * the queue, `run` commits it (retries included) and answers its jobs.
 *
 * @example Count with one commit for the jobs of one tick
 * ```ts
 * import { GroupCommit } from "./group_commit.ts";
 *
 * const commits: number[][] = [];
 * const engine = new GroupCommit<number>({
 *   takeBatch: (jobs) => jobs.splice(0, 64),
 *   run: async (_lane, batch) => { commits.push(batch); },
 * });
 * for (let i = 0; i < 3; i++) engine.submit("caller", i);
 * await engine.idle();
 * console.log(commits); // [[0, 1, 2]]
 * ```
 *
 * @module
 */

/** How a {@linkcode GroupCommit} cuts and commits its batches. */
export interface GroupCommitOptions<J> {
  /** Removes and returns the next batch from a lane's queue (at least one job). */
  takeBatch(jobs: J[]): J[];
  /** Commits one batch of a lane and answers its jobs; it must not throw. */
  run(lane: string, batch: J[]): Promise<void>;
  /** Where a new job goes in its lane's queue; default the end. */
  insertAt?(jobs: readonly J[], job: J): number;
}

interface Queue<J> {
  jobs: J[];
  draining?: Promise<void>;
}

/** One queue per lane, drained a batch per commit. */
export class GroupCommit<J> {
  readonly #options: GroupCommitOptions<J>;
  readonly #queues = new Map<string, Queue<J>>();

  /**
   * Creates the engine.
   *
   * @param options How batches are cut and committed.
   */
  constructor(options: GroupCommitOptions<J>) {
    this.#options = options;
  }

  /**
   * Queues a job in its lane and starts draining the lane if it is not.
   *
   * @param lane The lane, e.g. a caller id.
   * @param job The job.
   */
  submit(lane: string, job: J): void {
    let queue = this.#queues.get(lane);
    if (!queue) {
      queue = { jobs: [] };
      this.#queues.set(lane, queue);
    }
    const at = this.#options.insertAt?.(queue.jobs, job) ?? queue.jobs.length;
    queue.jobs.splice(at, 0, job);
    queue.draining ??= this.#drain(lane, queue);
  }

  /**
   * How many jobs wait in a lane (the batch being committed not counted).
   *
   * @param lane The lane.
   * @returns The count.
   */
  queued(lane: string): number {
    return this.#queues.get(lane)?.jobs.length ?? 0;
  }

  /**
   * Resolves once a lane's queue is empty.
   *
   * @param lane The lane.
   * @returns A promise.
   */
  async drained(lane: string): Promise<void> {
    for (;;) {
      const draining = this.#queues.get(lane)?.draining;
      if (!draining) return;
      await draining;
    }
  }

  /**
   * Resolves once every lane's queue is empty.
   *
   * @returns A promise.
   */
  async idle(): Promise<void> {
    for (;;) {
      const draining = [...this.#queues.values()].flatMap((queue) =>
        queue.draining ? [queue.draining] : []
      );
      if (draining.length === 0) return;
      await Promise.all(draining);
    }
  }

  async #drain(lane: string, queue: Queue<J>): Promise<void> {
    // The jobs submitted in the same tick join the first batch.
    await null;
    while (queue.jobs.length > 0) {
      await this.#options.run(lane, this.#options.takeBatch(queue.jobs));
    }
    queue.draining = undefined;
    this.#queues.delete(lane);
  }
}

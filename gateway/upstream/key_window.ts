/**
 * A key's last minute of use, in one-second buckets: what the key pool
 * checks a key's requests-per-minute and tokens-per-minute limits against.
 *
 * @module
 */
const WINDOW_MS = 60_000;
const BUCKET_MS = 1_000;
const BUCKETS = WINDOW_MS / BUCKET_MS;

/** A minute of use, in one-second buckets. */
export class MinuteWindow {
  readonly #requests = new Float64Array(BUCKETS);
  readonly #tokens = new Float64Array(BUCKETS);
  readonly #stamps = new Float64Array(BUCKETS).fill(-1);

  /** The bucket of `now`, or -1 when that second has left the window. */
  #slot(now: number): number {
    const second = Math.floor(now / BUCKET_MS);
    const slot = second % BUCKETS;
    if (this.#stamps[slot] > second) return -1;
    if (this.#stamps[slot] !== second) {
      this.#stamps[slot] = second;
      this.#requests[slot] = 0;
      this.#tokens[slot] = 0;
    }
    return slot;
  }

  /** Counts `requests` and `tokens` in the second of `now` (nothing once that second left the window). */
  add(now: number, requests: number, tokens: number): void {
    const slot = this.#slot(now);
    if (slot < 0) return;
    this.#requests[slot] += requests;
    this.#tokens[slot] += tokens;
  }

  /** Requests and tokens in the last minute. */
  totals(now: number): { requests: number; tokens: number } {
    const oldest = Math.floor(now / BUCKET_MS) - BUCKETS + 1;
    let requests = 0;
    let tokens = 0;
    for (let i = 0; i < BUCKETS; i++) {
      if (this.#stamps[i] >= oldest) {
        requests += this.#requests[i];
        tokens += this.#tokens[i];
      }
    }
    return { requests, tokens };
  }

  /** Ms until the window has room for one more request and `tokens` more tokens. */
  msUntilRoom(now: number, rpm: number, tpm: number, tokens: number): number {
    const second = Math.floor(now / BUCKET_MS);
    let { requests, tokens: used } = this.totals(now);
    // Walk forward second by second as the oldest buckets leave the window.
    for (let ahead = 1; ahead <= BUCKETS; ahead++) {
      if (requests + 1 <= rpm && used + tokens <= tpm) {
        return ahead === 1 ? 0 : (ahead - 1) * BUCKET_MS;
      }
      const leavingSecond = second - BUCKETS + ahead;
      const slot = leavingSecond % BUCKETS;
      if (this.#stamps[slot] === leavingSecond) {
        requests -= this.#requests[slot];
        used -= this.#tokens[slot];
      }
    }
    return WINDOW_MS;
  }
}

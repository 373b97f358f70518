/**
 * Summaries of latency samples.
 *
 * @module
 */

/** Percentiles of a sample, in milliseconds. */
export interface Percentiles {
  /** Number of samples. */
  n: number;
  /** Median. */
  p50: number;
  /** 99th percentile. */
  p99: number;
  /** Mean. */
  mean: number;
}

/**
 * The nearest-rank percentile of sorted values.
 *
 * @param sorted Values in ascending order.
 * @param p The percentile, 0 to 100.
 * @returns The value at that rank.
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))];
}

/**
 * Summarises samples.
 *
 * @param samples Latencies, ms.
 * @returns p50, p99, mean and count.
 */
export function summarize(samples: readonly number[]): Percentiles {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, value) => sum + value, 0) / sorted.length;
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    mean,
  };
}

/**
 * Formats milliseconds with two decimals.
 *
 * @param ms A duration.
 * @returns Its text, `"n/a"` when not a number.
 */
export function ms(ms: number): string {
  return Number.isFinite(ms) ? ms.toFixed(2) : "n/a";
}

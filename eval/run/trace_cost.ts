/**
 * What the gateway charged a run, read from its traces: a model call cut
 * off by the run's time-out (or a stop, or a failure elsewhere) is still
 * answered upstream and charged, but its answer, and the `x-gateway-cost`
 * header the runner counts, never arrive. `GET /v1/traces?trace_id=` lists
 * the run's calls with what each cost.
 *
 * @module
 */

/** Traces of one run read at most (the gateway's own page limit). */
const TRACE_LIMIT = 1000;

/** The listing read at most, bytes: a thousand traces fit many times over. */
const MAX_LISTING_BYTES = 4 * 1024 * 1024;

/** How long to wait for the cut-off calls' traces, ms, by default. */
const DEFAULT_WAIT_MS = 5_000;

/** Options of {@linkcode chargedMicros}. */
export interface ChargedOptions {
  /** The gateway's base URL. */
  gatewayUrl: string;
  /** The caller key the run's calls were made with. */
  key: string;
  /** The run's `trace-id`. */
  traceId: string;
  /** Model calls the run made: the traces to wait for. */
  calls: number;
  /** How long to wait for them, ms (default 5 000). */
  waitMs?: number;
  /** Stops waiting. */
  signal?: AbortSignal;
}

/**
 * The micro-USD the gateway charged for a run's calls, from its traces;
 * waits (briefly) until every call made has its trace, since a call cut
 * off is traced once the provider's answer is in. `undefined` when the
 * gateway could not say (unreachable, not an mcpkit gateway).
 *
 * @example
 * ```ts ignore
 * import { chargedMicros } from "./trace_cost.ts";
 *
 * const micros = await chargedMicros({
 *   gatewayUrl: "http://localhost:8080",
 *   key: "gk_…",
 *   traceId: "0b6c…",
 *   calls: 3,
 * });
 * ```
 *
 * @param options The gateway, key, trace id and calls made.
 * @returns The sum of the traces' `costMicros`, or `undefined`.
 */
export async function chargedMicros(
  options: ChargedOptions,
): Promise<number | undefined> {
  const deadline = Date.now() + (options.waitMs ?? DEFAULT_WAIT_MS);
  let charged: number | undefined;
  for (let wait = 100;; wait = Math.min(1000, wait * 2)) {
    const traces = await readTraces(options);
    if (traces === undefined) return charged;
    charged = traces.reduce((sum, trace) => sum + trace.costMicros, 0);
    if (traces.length >= options.calls || Date.now() + wait > deadline) {
      return charged;
    }
    if (options.signal?.aborted) return charged;
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

async function readTraces(
  options: ChargedOptions,
): Promise<{ costMicros: number }[] | undefined> {
  const url = `${options.gatewayUrl}/v1/traces?trace_id=${
    encodeURIComponent(options.traceId)
  }&limit=${TRACE_LIMIT}`;
  try {
    const response = await fetch(url, {
      headers: { authorization: `Bearer ${options.key}` },
      signal: options.signal
        ? AbortSignal.any([options.signal, AbortSignal.timeout(10_000)])
        : AbortSignal.timeout(10_000),
    });
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      return undefined;
    }
    const text = await boundedText(response.body, MAX_LISTING_BYTES);
    const body = JSON.parse(text) as { data?: unknown };
    if (!Array.isArray(body.data)) return undefined;
    return body.data.flatMap((trace) => {
      const micros = (trace as { costMicros?: unknown })?.costMicros;
      return typeof micros === "number" && Number.isSafeInteger(micros) &&
          micros >= 0
        ? [{ costMicros: micros }]
        : [];
    });
  } catch {
    return undefined;
  }
}

/** A body's text, or an error past `limit` bytes (read no further). */
async function boundedText(
  body: ReadableStream<Uint8Array>,
  limit: number,
): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) throw new RangeError(`Over ${limit} bytes`);
    chunks.push(chunk);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.length;
  }
  return new TextDecoder().decode(all);
}

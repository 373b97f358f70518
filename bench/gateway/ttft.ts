/**
 * Streaming time to first token: sequential streamed chat calls, timed from
 * the request to the first SSE event that carries content. A probe, not
 * load: the three targets take turns so drifting machine load hits them
 * alike.
 *
 * @module
 */
import { type Percentiles, summarize } from "../_stats.ts";
import type { WrkRequest } from "./wrk.ts";

const FIRST_TOKEN = /"content":"[^"]/;

async function timeToFirstToken(request: WrkRequest): Promise<number> {
  const start = performance.now();
  const response = await fetch(request.url, {
    method: "POST",
    headers: request.headers,
    body: request.body,
  });
  if (!response.ok || !response.body) {
    throw new Error(
      `Streamed call to "${request.url}" answered "${response.status}": ${await response
        .text()}`,
    );
  }
  const reader = response.body.pipeThrough(new TextDecoderStream())
    .getReader();
  let seen = "";
  let first = Number.NaN;
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    seen += value;
    if (Number.isNaN(first) && FIRST_TOKEN.test(seen)) {
      first = performance.now() - start;
    }
  }
  if (Number.isNaN(first)) {
    throw new Error(`Streamed call to "${request.url}" carried no content`);
  }
  return first;
}

/**
 * Measures time to first token of each target, taking turns.
 *
 * @param requests Streamed requests by target name.
 * @param rounds Calls per target that are timed.
 * @param warmupRounds Untimed calls per target before them (0: the first
 *   calls a target answers are timed, a cold figure).
 * @returns Percentiles by target name.
 */
export async function measureTtft(
  requests: Record<string, WrkRequest>,
  rounds: number,
  warmupRounds = 10,
): Promise<Record<string, Percentiles>> {
  const samples: Record<string, number[]> = {};
  for (const name of Object.keys(requests)) samples[name] = [];
  for (let round = -warmupRounds; round < rounds; round++) {
    for (const [name, request] of Object.entries(requests)) {
      const ms = await timeToFirstToken(request);
      if (round >= 0) samples[name].push(ms);
    }
  }
  return Object.fromEntries(
    Object.entries(samples).map(([name, values]) => [name, summarize(values)]),
  );
}

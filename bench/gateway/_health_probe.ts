/**
 * A worker that asks a gateway's `/health` every 20 ms until told to stop,
 * then posts the slowest answer's time, ms. On a thread of its own, so what
 * the bench's main thread does meanwhile (building a 31 MiB body) does not
 * count as the gateway's delay.
 *
 * Messages in: `{ url }` to start, `"stop"` to stop. Out: `{ worstMs }`.
 *
 * @module
 */

/// <reference lib="deno.worker" />

let stop = false;

self.onmessage = async (event: MessageEvent<{ url: string } | "stop">) => {
  if (event.data === "stop") {
    stop = true;
    return;
  }
  const { url } = event.data;
  let worstMs = 0;
  while (!stop) {
    const started = performance.now();
    const response = await fetch(url);
    await response.body?.cancel();
    worstMs = Math.max(worstMs, performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  self.postMessage({ worstMs });
};

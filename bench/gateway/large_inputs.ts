/**
 * Large inputs, the two issue 35 measured: one upstream stream event of 1 to
 * 8 MiB, and request bodies of 1 to 31 MiB from a caller with $0.000001. A
 * gateway in this process (KV in memory) in front of a loopback upstream
 * that streams one large event; for each size: the gateway's CPU per MiB
 * (this process's, from `/proc/self/stat`, the probe's share included) and
 * the worst `/health` latency while it works (a probe every 20 ms on the
 * same event loop: whatever blocks the loop delays it). Linear work shows
 * as a flat CPU per MiB across sizes.
 *
 * `deno run -A bench/gateway/large_inputs.ts`
 *
 * @module
 */
import { createCaller } from "../../gateway/state/callers.ts";
import { parseConfig } from "../../gateway/config.ts";
import { startGateway } from "../../gateway/http/server.ts";
import { readCpuMicros } from "../_process.ts";

const MIB = 1024 * 1024;

/** One size's figures. */
export interface LargeInputRow {
  /** What was sent. */
  kind: "event" | "body";
  /** Its size, MiB. */
  mib: number;
  /** The caller's status. */
  status: number;
  /** CPU of this process per MiB, ms. */
  cpuMsPerMib: number;
  /** The slowest `/health` answer meanwhile, ms. */
  worstHealthMs: number;
}

/** A loopback upstream streaming one chat chunk whose content is `chars` long, in 4 KiB writes. */
function bigEventUpstream(chars: () => number) {
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => {
      const encoder = new TextEncoder();
      const piece = encoder.encode("a".repeat(4096));
      let left = chars();
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(
            encoder.encode('data: {"choices":[{"index":0,"delta":{"content":"'),
          );
        },
        pull(controller) {
          if (left > 0) {
            controller.enqueue(piece);
            left -= piece.length;
            return;
          }
          controller.enqueue(
            encoder.encode(
              '"}}]}\n\ndata: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9}}\n\ndata: [DONE]\n\n',
            ),
          );
          controller.close();
        },
      });
      return new Response(body, {
        headers: { "content-type": "text/event-stream" },
      });
    },
  );
}

/** Runs `work` while probing `/health` every 20 ms; returns its CPU and the worst probe. */
async function measured(
  base: string,
  work: () => Promise<number>,
): Promise<{ status: number; cpuMs: number; worstHealthMs: number }> {
  let stop = false;
  let worst = 0;
  const probe = (async () => {
    while (!stop) {
      const started = performance.now();
      const response = await fetch(`${base}/health`);
      await response.body?.cancel();
      worst = Math.max(worst, performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  const cpuBefore = await readCpuMicros(Deno.pid);
  const status = await work();
  const cpuMs = (await readCpuMicros(Deno.pid) - cpuBefore) / 1000;
  stop = true;
  await probe;
  return { status, cpuMs, worstHealthMs: worst };
}

/** A chat body of about `mib` MiB made of many small messages (the shape that costs a parse most). */
function manyMessages(mib: number): string {
  const message = JSON.stringify({ role: "user", content: "hi" });
  const count = Math.floor(mib * MIB / (message.length + 1));
  return `{"model":"gpt-4o-mini","messages":[${
    Array(count).fill(message).join(",")
  }]}`;
}

/**
 * Measures every size of both cases.
 *
 * @param eventMib The event sizes, MiB.
 * @param bodyMib The body sizes, MiB.
 * @returns One row per size.
 */
export async function benchLargeInputs(
  eventMib: readonly number[] = [1, 2, 4, 7.5],
  bodyMib: readonly number[] = [1, 4, 16, 31],
): Promise<LargeInputRow[]> {
  let eventChars = 0;
  const upstream = bigEventUpstream(() => eventChars);
  const kv = await Deno.openKv(":memory:");
  const gateway = await startGateway(
    parseConfig({
      env: {
        PORT: "0",
        HOST: "127.0.0.1",
        OPENAI_API_KEYS: "sk-bench-large-0123456789abcdef",
        OPENAI_BASE_URL: `http://127.0.0.1:${upstream.addr.port}`,
        GATEWAY_MAX_BODY_BYTES: String(40 * MIB),
      },
    }),
    { kv, log: () => {} },
  );
  const base = `http://127.0.0.1:${gateway.port}`;
  const rich = await createCaller(kv, { name: "rich", creditsMicros: 1e9 });
  const poor = await createCaller(kv, { name: "poor", creditsMicros: 1 });
  const rows: LargeInputRow[] = [];
  try {
    for (const mib of eventMib) {
      eventChars = Math.floor(mib * MIB);
      const run = await measured(base, async () => {
        const response = await fetch(`${base}/v1/chat/completions`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${rich.key}`,
          },
          body: JSON.stringify({
            model: "gpt-4o-mini",
            stream: true,
            messages: [{ role: "user", content: "hi" }],
          }),
        });
        await response.arrayBuffer();
        return response.status;
      });
      rows.push({
        kind: "event",
        mib,
        status: run.status,
        cpuMsPerMib: run.cpuMs / mib,
        worstHealthMs: run.worstHealthMs,
      });
    }
    for (const mib of bodyMib) {
      const body = manyMessages(mib);
      const run = await measured(base, async () => {
        const response = await fetch(`${base}/v1/chat/completions`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${poor.key}`,
          },
          body,
        });
        await response.arrayBuffer();
        return response.status;
      });
      rows.push({
        kind: "body",
        mib,
        status: run.status,
        cpuMsPerMib: run.cpuMs / mib,
        worstHealthMs: run.worstHealthMs,
      });
    }
  } finally {
    await gateway.shutdown();
    kv.close();
    await upstream.shutdown();
  }
  return rows;
}

if (import.meta.main) {
  console.log("| input | MiB | status | CPU ms per MiB | worst /health, ms |");
  console.log("| ----- | --- | ------ | -------------- | ----------------- |");
  for (const row of await benchLargeInputs()) {
    console.log(
      `| ${row.kind} | ${row.mib} | ${row.status} | ${
        row.cpuMsPerMib.toFixed(0)
      } | ${row.worstHealthMs.toFixed(0)} |`,
    );
  }
}

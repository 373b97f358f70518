/**
 * Large inputs, the ones issue 35 measured: one upstream stream event of 1
 * to 16 MiB (the gateway ends a stream at an event past 8 MiB), and request
 * bodies of 1 to 31 MiB of small messages, from a caller with $0.000001
 * (refused 402) and from a funded one (parsed, held, forwarded). The
 * gateway runs as `deno task start` runs it, in its own process on a KV
 * file, in front of a loopback upstream in this process. For each size: the
 * gateway's CPU (`/proc/<pid>/stat`) per MiB, and the slowest `/health`
 * answer meanwhile (a probe every 20 ms from a worker thread). Linear work
 * shows as a flat CPU per MiB across sizes; work that stops early, as a
 * falling one. First, ten $0.000001 bodies of 31 MiB at once: the
 * gateway's resident memory before, at its peak, and 5 s after.
 *
 * `deno run -A bench/gateway/large_inputs.ts` (prints the section
 * `deno task bench` writes into `BENCHMARKS.md`; progress on stderr)
 *
 * @module
 */
import { createCaller } from "../../gateway/state/callers.ts";
import { closeStore, openStore } from "../../gateway/state/store/mod.ts";
import { readCpuMicros, readMemory, resetPeakMemory } from "../_process.ts";
import { startGatewayProcess } from "./targets.ts";

const MIB = 1024 * 1024;

/** What was sent. */
export type LargeInputKind = "event" | "body, $0.000001" | "body, funded";

/** One size's figures. */
export interface LargeInputRow {
  /** What was sent. */
  kind: LargeInputKind;
  /** Its size, MiB. */
  mib: number;
  /** The caller's status. */
  status: number;
  /** The gateway's CPU for it, ms. */
  cpuMs: number;
  /** The gateway's CPU per MiB, ms. */
  cpuMsPerMib: number;
  /** The slowest `/health` answer meanwhile, ms. */
  worstHealthMs: number;
}

/** Ten refused bodies at once: the gateway's resident memory. */
export interface LargeInputBurst {
  /** Bodies sent at once. */
  bodies: number;
  /** Each one's size, MiB. */
  mib: number;
  /** The statuses they got. */
  statuses: number[];
  /** Wall time until the last answer, ms (the bench sending 310 MiB included). */
  wallMs: number;
  /** The gateway's CPU for all ten, ms. */
  cpuMs: number;
  /** VmRSS before, MiB. */
  rssBeforeMiB: number;
  /** VmHWM while they were answered (reset before), MiB. */
  peakMiB: number;
  /** VmRSS 5 s after the last answer, MiB. */
  rssAfterMiB: number;
}

/** Everything the large-input bench measured. */
export interface LargeInputResults {
  /** One row per kind and size. */
  rows: LargeInputRow[];
  /** Ten refused bodies at once, sent to the gateway at rest. */
  burst: LargeInputBurst;
  /** The gateway's VmRSS after every row, MiB (what the funded bodies left). */
  rssAfterRowsMiB: number;
}

/** What the upstream answers: one event of `eventChars` in a stream, or a small JSON answer (the body read and dropped). */
interface UpstreamMode {
  kind: "event" | "json";
  eventChars: number;
}

/** A loopback upstream answering as `mode()` says, in 4 KiB writes for an event. */
function largeInputUpstream(mode: () => UpstreamMode) {
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const { kind, eventChars } = mode();
      if (kind === "json") {
        await request.arrayBuffer();
        return Response.json({
          id: "chatcmpl-bench",
          object: "chat.completion",
          created: 0,
          model: "gpt-4o-mini",
          choices: [{
            index: 0,
            message: { role: "assistant", content: "ok" },
            finish_reason: "stop",
          }],
          usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
        });
      }
      await request.body?.cancel();
      const encoder = new TextEncoder();
      const piece = encoder.encode("a".repeat(4096));
      let left = eventChars;
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
        cancel() {
          left = 0;
        },
      });
      return new Response(body, {
        headers: { "content-type": "text/event-stream" },
      });
    },
  );
}

/** Runs `work` while a worker probes `/health`; returns the gateway's CPU for it and the worst probe. */
async function measured(
  base: string,
  pid: number,
  work: () => Promise<number>,
): Promise<{ status: number; cpuMs: number; worstHealthMs: number }> {
  const probe = new Worker(new URL("./_health_probe.ts", import.meta.url), {
    type: "module",
  });
  const worst = new Promise<number>((resolve) => {
    probe.onmessage = (event) => resolve(event.data.worstMs);
  });
  probe.postMessage({ url: `${base}/health` });
  const cpuBefore = await readCpuMicros(pid);
  const status = await work();
  const cpuMs = (await readCpuMicros(pid) - cpuBefore) / 1000;
  probe.postMessage("stop");
  const worstHealthMs = await worst;
  probe.terminate();
  return { status, cpuMs, worstHealthMs };
}

/** A chat body of about `mib` MiB made of many small messages (the shape that costs a parse most). */
function manyMessages(mib: number): string {
  const message = JSON.stringify({ role: "user", content: "hi" });
  const count = Math.floor(mib * MIB / (message.length + 1));
  return `{"model":"gpt-4o-mini","max_tokens":16,"messages":[${
    Array(count).fill(message).join(",")
  }]}`;
}

/** POSTs a chat body and reads the whole answer; returns its status. */
async function postChat(
  base: string,
  key: string,
  body: string,
): Promise<number> {
  const response = await fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${key}`,
    },
    body,
  });
  await response.arrayBuffer();
  return response.status;
}

/** The sizes measured, MiB. */
export interface LargeInputSizes {
  /** Stream events. */
  eventMib: readonly number[];
  /** Request bodies. */
  bodyMib: readonly number[];
}

/**
 * Measures every size of every case, then the burst.
 *
 * @param sizes The event and body sizes, MiB.
 * @param log Progress lines.
 * @returns The rows and the burst.
 */
export async function benchLargeInputs(
  sizes: LargeInputSizes = {
    eventMib: [1, 2, 4, 7.5, 16],
    bodyMib: [1, 4, 8, 16, 31],
  },
  log: (line: string) => void = () => {},
): Promise<LargeInputResults> {
  let mode: UpstreamMode = { kind: "event", eventChars: 0 };
  const upstream = largeInputUpstream(() => mode);
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-large-" });
  const kvPath = `${dir}/gateway.kv`;
  const { kv } = await openStore({ kvPath });
  const poor = await createCaller(kv, { name: "poor", creditsMicros: 1 });
  await closeStore(kv);
  const gateway = await startGatewayProcess(
    `http://127.0.0.1:${upstream.addr.port}`,
    kvPath,
    [],
    { GATEWAY_MAX_BODY_BYTES: String(40 * MIB) },
  );
  const base = gateway.url;
  const pid = gateway.child.pid;
  const rows: LargeInputRow[] = [];
  const row = (
    kind: LargeInputKind,
    mib: number,
    run: { status: number; cpuMs: number; worstHealthMs: number },
  ) => {
    rows.push({ kind, mib, ...run, cpuMsPerMib: run.cpuMs / mib });
    log(
      `  ${kind} ${mib} MiB: ${run.status}, ${
        run.cpuMs.toFixed(0)
      } ms CPU, worst /health ${run.worstHealthMs.toFixed(0)} ms`,
    );
  };
  try {
    // Warm-up: the first call pays for compiling the call path.
    mode = { kind: "json", eventChars: 0 };
    await postChat(base, gateway.callerKey, manyMessages(0.01));
    // The burst first, so its memory is measured from a gateway at rest.
    const burstMib = 31;
    const body = manyMessages(burstMib);
    const rssBeforeMiB = (await readMemory(pid)).rssMiB;
    await resetPeakMemory(pid);
    const cpuBefore = await readCpuMicros(pid);
    const started = performance.now();
    const statuses = await Promise.all(
      Array.from({ length: 10 }, () => postChat(base, poor.key, body)),
    );
    const wallMs = performance.now() - started;
    const cpuMs = (await readCpuMicros(pid) - cpuBefore) / 1000;
    const peakMiB = (await readMemory(pid)).peakMiB;
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const rssAfterMiB = (await readMemory(pid)).rssMiB;
    log(
      `  ten $0.000001 bodies of ${burstMib} MiB at once: ${
        wallMs.toFixed(0)
      } ms, ${cpuMs.toFixed(0)} ms CPU, RSS ${rssBeforeMiB.toFixed(0)} → peak ${
        peakMiB.toFixed(0)
      } → ${rssAfterMiB.toFixed(0)} MiB`,
    );
    for (const mib of sizes.eventMib) {
      mode = { kind: "event", eventChars: Math.floor(mib * MIB) };
      const body = JSON.stringify({
        model: "gpt-4o-mini",
        stream: true,
        messages: [{ role: "user", content: "hi" }],
      });
      row(
        "event",
        mib,
        await measured(
          base,
          pid,
          () => postChat(base, gateway.callerKey, body),
        ),
      );
    }
    mode = { kind: "json", eventChars: 0 };
    for (const mib of sizes.bodyMib) {
      const body = manyMessages(mib);
      row(
        "body, $0.000001",
        mib,
        await measured(base, pid, () => postChat(base, poor.key, body)),
      );
      row(
        "body, funded",
        mib,
        await measured(
          base,
          pid,
          () => postChat(base, gateway.callerKey, body),
        ),
      );
    }
    const rssAfterRowsMiB = (await readMemory(pid)).rssMiB;
    log(`  RSS after the rows: ${rssAfterRowsMiB.toFixed(0)} MiB`);
    return {
      rows,
      rssAfterRowsMiB,
      burst: {
        bodies: 10,
        mib: burstMib,
        statuses,
        wallMs,
        cpuMs,
        rssBeforeMiB,
        peakMiB,
        rssAfterMiB,
      },
    };
  } finally {
    await gateway.child.stop();
    await upstream.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  // The section `deno task bench` writes into BENCHMARKS.md, on stdout.
  const { renderLargeInputs } = await import("../report.ts");
  const results = await benchLargeInputs(undefined, console.error);
  console.log(renderLargeInputs(results).join("\n"));
}

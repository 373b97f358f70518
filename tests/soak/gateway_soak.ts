/**
 * Soak: a gateway subprocess on a KV file, in front of the provider simulator,
 * at a steady request rate with mixed routes and streams. Passes when no call
 * failed, the process's resident memory grew less than 10% after warm-up, and
 * the ledger is exact after a SIGTERM. Not part of `deno test`; run it with
 * `deno task soak` (5 minutes) or `deno task soak --seconds 20` for a quick check.
 *
 * Options: `--seconds N` (default 300), `--rate N` requests a second (default
 * 100), `--warmup N` seconds excluded from the memory baseline (default 60,
 * capped at a fifth of the run). Measured: resident memory climbs for about
 * the first minute at 100 req/s (V8 heap sizing, SQLite page cache, connection
 * pools), then stays flat, e.g. 92, 134, 165, 162, 163 MiB at 2, 32, 62, 92,
 * 122 s; a leak would keep climbing after that.
 *
 * @module
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createCaller } from "../../gateway/state/callers.ts";
import { PROVIDER_NAMES } from "../../gateway/upstream/providers/mod.ts";
import { usdToMicros } from "../../gateway/state/credits/money.ts";
import { startSimulator } from "../../gateway/simulator/mod.ts";
import { readMoney } from "../fixtures/reliability_ledger.ts";
import { startTaskFlags } from "../../bench/gateway/targets.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    seconds: { type: "string", default: "300" },
    rate: { type: "string", default: "100" },
    warmup: { type: "string", default: "60" },
  },
});
const seconds = Number(values.seconds);
const rate = Number(values.rate);
const warmupSeconds = Math.min(Number(values.warmup), seconds / 5);
const total = Math.round(seconds * rate);

/** The mix: every route, translated and passthrough chat, streamed and not. */
const MIX: {
  path: string;
  body: (stream: boolean) => unknown;
  streamPath?: string;
}[] = [
  {
    path: "/v1/chat/completions",
    body: (stream) => ({
      model: "gpt-4o-mini",
      stream,
      messages: [{ role: "user", content: "soak" }],
    }),
  },
  {
    path: "/v1/chat/completions",
    body: (stream) => ({
      model: "claude-haiku-4-5",
      stream,
      max_tokens: 64,
      messages: [{ role: "user", content: "soak" }],
    }),
  },
  {
    path: "/v1/chat/completions",
    body: (stream) => ({
      model: "gemini-2.5-pro",
      stream,
      max_tokens: 64,
      messages: [{ role: "user", content: "soak" }],
    }),
  },
  {
    path: "/v1/messages",
    body: (stream) => ({
      model: "claude-sonnet-5-5",
      stream,
      max_tokens: 64,
      messages: [{ role: "user", content: "soak" }],
    }),
  },
  {
    path: "/v1/responses",
    body: (stream) => ({
      model: "gpt-5-mini",
      stream,
      input: "soak",
      max_output_tokens: 64,
    }),
  },
  {
    path: "/v1beta/models/gemini-2.5-computer-use-preview:generateContent",
    streamPath:
      "/v1beta/models/gemini-2.5-computer-use-preview:streamGenerateContent?alt=sse",
    body: () => ({ contents: [{ role: "user", parts: [{ text: "soak" }] }] }),
  },
];

function vmRssKiB(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
  if (!match) throw new Error(`No VmRSS in "/proc/${pid}/status"`);
  return Number(match[1]);
}

const dir = await Deno.makeTempDir({ prefix: "gateway-soak-" });
const kvPath = join(dir, "gateway.kv");
const sim = await startSimulator({ maxRecords: 1000 });
const kv = await Deno.openKv(kvPath);
const opening = usdToMicros(10_000);
const caller = await createCaller(kv, { name: "soak", creditsMicros: opening });
kv.close();

const env: Record<string, string> = {
  ...sim.env(),
  PORT: "0",
  HOST: "127.0.0.1",
  GATEWAY_KV_PATH: kvPath,
};
for (const provider of PROVIDER_NAMES) {
  env[`${provider.toUpperCase()}_API_KEYS`] =
    `sk-${provider}-soak-a,sk-${provider}-soak-b`;
}
const child = new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "-A",
    ...await startTaskFlags(),
    new URL("../../gateway/main.ts", import.meta.url).pathname,
  ],
  env,
  stdout: "null",
  stderr: "piped",
}).spawn();
const lines = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
let url = "";
let buffered = "";
while (!url) {
  const { value, done } = await lines.read();
  if (done) throw new Error(`The gateway exited before listening: ${buffered}`);
  buffered += value;
  url = /listening on (http:\/\/\S+)/.exec(buffered)?.[1] ?? "";
}
const errorLines: string[] = [];
const drainStderr = (async () => {
  for (;;) {
    const { value, done } = await lines.read();
    if (done) return;
    errorLines.push(value);
  }
})();

const headers = {
  "content-type": "application/json",
  authorization: `Bearer ${caller.key}`,
};
let ok = 0;
const failures: string[] = [];
async function call(i: number): Promise<void> {
  const mix = MIX[i % MIX.length];
  const stream = Math.floor(i / MIX.length) % 2 === 1;
  const path = stream && mix.streamPath ? mix.streamPath : mix.path;
  try {
    const response = await fetch(url + path, {
      method: "POST",
      headers,
      body: JSON.stringify(mix.body(stream)),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    // An in-stream error is an `error` event or an `"error": {…}` object.
    const broken = stream && /event: error|"error":\s*\{/.test(text);
    if (response.status === 200 && !broken) ok++;
    else {failures.push(
        `${path} stream=${stream}: ${response.status} ${text.slice(0, 200)}`,
      );}
  } catch (error) {
    failures.push(`${path} stream=${stream}: ${error}`);
  }
}

const samples: { t: number; rssKiB: number }[] = [];
const started = performance.now();
const sampler = setInterval(() => {
  samples.push({
    t: (performance.now() - started) / 1000,
    rssKiB: vmRssKiB(child.pid),
  });
}, 2000);
const inFlight = new Set<Promise<void>>();
for (let i = 0; i < total; i++) {
  // Steady pacing against the clock, so slow answers do not lower the rate.
  const due = started + (i * 1000) / rate;
  const wait = due - performance.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  const running = call(i).finally(() => inFlight.delete(running));
  inFlight.add(running);
}
await Promise.all(inFlight);
const elapsed = (performance.now() - started) / 1000;
clearInterval(sampler);
samples.push({ t: elapsed, rssKiB: vmRssKiB(child.pid) });

child.kill("SIGTERM");
const status = await child.status;
await drainStderr;
await sim.close();

const afterWarmup = samples.filter((s) => s.t >= warmupSeconds);
const baseline = afterWarmup[0]?.rssKiB ?? samples[0].rssKiB;
const tail = afterWarmup.slice(-5);
const final = tail.reduce((sum, s) => sum + s.rssKiB, 0) / tail.length;
const peak = Math.max(...afterWarmup.map((s) => s.rssKiB));
const growth = (final - baseline) / baseline;

const check = await Deno.openKv(kvPath);
const money = await readMoney(check, caller.id);
check.close();
const ledgerSum = money.ledger.reduce(
  (sum, entry) => sum + entry.amountMicros,
  0,
);
const summary = {
  seconds: Number(elapsed.toFixed(1)),
  requests: total,
  achievedRate: Number((total / elapsed).toFixed(1)),
  ok,
  failures: failures.length,
  firstFailures: failures.slice(0, 5),
  rssKiB: {
    first: samples[0].rssKiB,
    baseline,
    final: Math.round(final),
    peak,
  },
  rssSeriesMiB: samples.filter((_, i) => i % 15 === 0).map((s) =>
    `${Math.round(s.t)}s:${(s.rssKiB / 1024).toFixed(0)}`
  ).join(" "),
  rssGrowthAfterWarmupPercent: Number((growth * 100).toFixed(2)),
  exitCode: status.code,
  charges: money.charges.length,
  ledgerExact: ledgerSum === money.balanceMicros,
  spentUsd: (opening - money.balanceMicros) / 1_000_000,
  gatewayErrorLogLines:
    errorLines.join("").split("\n").filter((l) => /"level":"error"/.test(l))
      .length,
};
console.log(JSON.stringify(summary, null, 2));
await Deno.remove(dir, { recursive: true });
const passed = failures.length === 0 && growth < 0.1 && status.code === 0 &&
  money.charges.length === ok && money.openLeases.length === 0 &&
  summary.ledgerExact && summary.gatewayErrorLogLines === 0;
if (!passed) {
  console.error("Soak failed");
  Deno.exit(1);
}

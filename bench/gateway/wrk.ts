/**
 * Load from `wrk`: a paced run at a fixed request rate (a Lua `delay()` that
 * hands out send slots on a fixed schedule, as wrk2 does) or an unpaced run
 * that finds the saturation throughput. Latencies come from wrk's own
 * histogram, in microseconds.
 *
 * @module
 */

/** One HTTP request wrk repeats. */
export interface WrkRequest {
  /** Absolute URL. */
  url: string;
  /** Request headers. */
  headers: Record<string, string>;
  /** JSON body. */
  body: string;
}

/** Options of one wrk run. */
export interface WrkRun {
  /** Open connections. */
  connections: number;
  /** Seconds of load. */
  durationS: number;
  /** Requests per second to offer; absent, wrk sends as fast as it can. */
  rate?: number;
}

/** What wrk measured. */
export interface WrkResult {
  /** Requests completed. */
  requests: number;
  /** Requests per second achieved. */
  rps: number;
  /** Median latency, ms. */
  p50: number;
  /** 99th percentile latency, ms. */
  p99: number;
  /** Mean latency, ms. */
  mean: number;
  /** Non-2xx answers plus socket errors and timeouts. */
  errors: number;
  /** The command line, for the report. */
  command: string;
}

const PACING = `
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clk, bench_timespec *tp);
]]
local ts = ffi.new("bench_timespec")
local function now_ms()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end
local next_ms = 0
-- Each call claims the next slot of a fixed schedule, so the offered rate
-- stays constant whatever the latency (while a connection is free).
function delay()
  local now = now_ms()
  if next_ms < now then next_ms = now end
  local slot = next_ms
  next_ms = next_ms + INTERVAL_MS
  return math.floor(slot - now)
end
`;

const DONE = `
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"meanUs":%f,"errors":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    latency.mean, e.connect + e.read + e.write + e.status + e.timeout))
end
`;

function luaString(value: string): string {
  return JSON.stringify(value); // A JSON string literal is a valid Lua string literal here (ASCII only).
}

/**
 * Writes the Lua script of a run.
 *
 * @param request What to send.
 * @param rate Requests per second, or none for an unpaced run.
 * @returns The script's text.
 */
export function wrkScript(request: WrkRequest, rate?: number): string {
  const headers = Object.entries(request.headers).map(([name, value]) =>
    `wrk.headers[${luaString(name)}] = ${luaString(value)}`
  ).join("\n");
  const pacing = rate === undefined
    ? ""
    : PACING.replace("INTERVAL_MS", String(1000 / rate));
  return `wrk.method = "POST"\nwrk.body = ${
    luaString(request.body)
  }\n${headers}\n${pacing}${DONE}`;
}

/**
 * Runs wrk with one thread and returns its measurements.
 *
 * @param request What to send.
 * @param run Connections, duration, rate.
 * @param workDir Where to write the Lua script.
 * @returns Throughput, latency percentiles and errors.
 */
export async function runWrk(
  request: WrkRequest,
  run: WrkRun,
  workDir: string,
): Promise<WrkResult> {
  const script = `${workDir}/wrk_${
    run.rate ?? "max"
  }_${crypto.randomUUID()}.lua`;
  await Deno.writeTextFile(script, wrkScript(request, run.rate));
  const args = [
    "-t1",
    `-c${run.connections}`,
    `-d${run.durationS}s`,
    "--timeout",
    "10s",
    "-s",
    script,
    request.url,
  ];
  const output = await new Deno.Command("wrk", {
    args,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  const line = text.split("\n").find((l) => l.startsWith("BENCH "));
  if (!output.success || !line) {
    throw new Error(
      `wrk failed on "${request.url}": ${
        new TextDecoder().decode(output.stderr)
      } ${text}`,
    );
  }
  const raw = JSON.parse(line.slice(6)) as {
    requests: number;
    durationUs: number;
    p50Us: number;
    p99Us: number;
    meanUs: number;
    errors: number;
  };
  return {
    requests: raw.requests,
    rps: raw.requests / (raw.durationUs / 1e6),
    p50: raw.p50Us / 1000,
    p99: raw.p99Us / 1000,
    mean: raw.meanUs / 1000,
    errors: raw.errors,
    command: `wrk ${args.slice(0, -3).join(" ")} -s <script: POST${
      run.rate ? `, paced at ${run.rate} req/s` : ""
    }> ${request.url}`,
  };
}

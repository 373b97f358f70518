/**
 * The gateway on each store, side by side in one run: CPU time per call and
 * the latency it adds (p50, p99) over calling the simulator directly, with
 * state in a Deno KV file on disk and in a local PostgreSQL 15 (Debian's
 * `postgresql-15`, started by `tests/_postgres.ts` in a temporary directory,
 * `fsync` off like the KV file's tmpfs twin, over loopback TCP).
 *
 * Each store gets an in-process gateway (`app.request()`, no HTTP server) in
 * front of one simulator in the same process, a funded caller, 300 calls to
 * warm up, then `calls` sequential non-streamed calls, the stores taking
 * turns in rounds. CPU is this process's (gateway and simulator together, so
 * only the difference between stores means anything); PostgreSQL's own CPU
 * is its server processes', read from `/proc` and reported beside it.
 *
 * `deno run -A bench/gateway/stores.ts [calls]`
 *
 * @module
 */
import process from "node:process";
import { createGateway } from "../../gateway/http/app.ts";
import { createCaller } from "../../gateway/state/callers.ts";
import { parseConfig } from "../../gateway/config.ts";
import { PROVIDER_NAMES } from "../../gateway/upstream/providers/mod.ts";
import { startSimulator } from "../../gateway/simulator/mod.ts";
import { closeStore, openStore } from "../../gateway/state/store/mod.ts";
import { POSTGRES_MISSING, startPostgres } from "../../tests/_postgres.ts";
import { percentile } from "../_stats.ts";

/** One store's figures. */
export interface StoreBenchRow {
  /** `KV file` or `PostgreSQL`. */
  store: string;
  /** Calls timed. */
  calls: number;
  /** CPU of the bench process (gateway and simulator) per call, µs. */
  cpuMicrosPerCall: number;
  /** CPU of PostgreSQL's server processes per call, µs (PostgreSQL only). */
  databaseCpuMicrosPerCall?: number;
  /** Latency added over a direct simulator call, p50, ms. */
  addedP50Ms: number;
  /** Latency added over a direct simulator call, p99, ms. */
  addedP99Ms: number;
}

/** What {@linkcode benchStores} measured. */
export interface StoreBenchResults {
  /** The direct call's p50 and p99, ms. */
  direct: { p50Ms: number; p99Ms: number };
  /** One row per store. */
  rows: StoreBenchRow[];
  /** Why PostgreSQL was not measured, when it was not. */
  skipped?: string;
}

const BODY = JSON.stringify({
  model: "gpt-4o-mini",
  messages: [{ role: "user", content: "hello there" }],
  max_tokens: 16,
});

/** CPU µs of every process whose command line names `dir` (PostgreSQL's server and backends). */
async function cpuOfProcessesIn(dir: string): Promise<number> {
  const ticks = 100; // USER_HZ on Linux
  let total = 0;
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`);
      const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      const isServer = cmdline.includes(dir);
      const isBackend = /^postgres: /.test(cmdline);
      if (!isServer && !isBackend) continue;
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      total += (Number(fields[11]) + Number(fields[12])) * 1e6 / ticks;
    } catch { /* gone meanwhile */ }
  }
  return total;
}

/**
 * Measures the gateway on a KV file and on PostgreSQL in one run.
 *
 * @param options `calls` per store, a work directory for the KV file.
 * @param log Progress lines.
 * @returns The figures.
 */
export async function benchStores(
  options: { calls: number; rounds?: number; workDir: string },
  log: (line: string) => void = () => {},
): Promise<StoreBenchResults> {
  const rounds = options.rounds ?? 4;
  const sim = await startSimulator();
  const env: Record<string, string> = { ...sim.env() };
  for (const provider of PROVIDER_NAMES) {
    env[`${provider.toUpperCase()}_API_KEYS`] = `sk-${provider}`;
  }
  const pg = POSTGRES_MISSING ? undefined : await startPostgres();
  const targets: {
    name: string;
    app: ReturnType<typeof createGateway>;
    kv: Deno.Kv;
    key: string;
    latencies: number[];
    cpu: number;
    dbCpu: number;
  }[] = [];
  try {
    const stores: [string, { store?: string; kvPath: string }][] = [
      ["KV file", { kvPath: `${options.workDir}/stores-${Date.now()}.kv` }],
    ];
    if (pg) {
      stores.push(["PostgreSQL", {
        store: await pg.createDatabase("bench"),
        kvPath: ":memory:",
      }]);
    }
    for (const [name, settings] of stores) {
      const { kv } = await openStore(settings);
      const app = createGateway({ config: parseConfig({ env }), kv });
      const caller = await createCaller(kv, {
        name: "bench",
        creditsMicros: 1_000_000_000,
      });
      targets.push({
        name,
        app,
        kv,
        key: caller.key,
        latencies: [],
        cpu: 0,
        dbCpu: 0,
      });
    }
    const direct: number[] = [];
    const call = async (target?: (typeof targets)[number]) => {
      const started = performance.now();
      const response = target
        ? await target.app.request("/v1/chat/completions", {
          method: "POST",
          headers: {
            authorization: `Bearer ${target.key}`,
            "content-type": "application/json",
          },
          body: BODY,
        })
        : await fetch(`${env.OPENAI_BASE_URL}/chat/completions`, {
          method: "POST",
          headers: {
            authorization: "Bearer sk-openai",
            "content-type": "application/json",
          },
          body: BODY,
        });
      await response.text();
      return performance.now() - started;
    };
    for (const target of targets) {
      for (let i = 0; i < 300; i++) await call(target);
      await target.app.flush();
    }
    for (let i = 0; i < 300; i++) await call();
    const perRound = Math.ceil(options.calls / rounds);
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < perRound; i++) direct.push(await call());
      for (const target of targets) {
        const dbBefore = pg && target.name === "PostgreSQL"
          ? await cpuOfProcessesIn("mcpkit-pg-")
          : 0;
        const before = process.cpuUsage();
        for (let i = 0; i < perRound; i++) {
          target.latencies.push(await call(target));
        }
        await target.app.flush();
        const used = process.cpuUsage(before);
        target.cpu += used.user + used.system;
        if (dbBefore) {
          target.dbCpu += await cpuOfProcessesIn("mcpkit-pg-") - dbBefore;
        }
      }
      log(`stores bench: round ${round + 1} of ${rounds}`);
    }
    const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
    const directP50 = percentile(sorted(direct), 50);
    const directP99 = percentile(sorted(direct), 99);
    return {
      direct: { p50Ms: round3(directP50), p99Ms: round3(directP99) },
      rows: targets.map((target) => ({
        store: target.name,
        calls: target.latencies.length,
        cpuMicrosPerCall: Math.round(target.cpu / target.latencies.length),
        ...(target.dbCpu
          ? {
            databaseCpuMicrosPerCall: Math.round(
              target.dbCpu / target.latencies.length,
            ),
          }
          : {}),
        addedP50Ms: round3(
          percentile(sorted(target.latencies), 50) - directP50,
        ),
        addedP99Ms: round3(
          percentile(sorted(target.latencies), 99) - directP99,
        ),
      })),
      ...(POSTGRES_MISSING ? { skipped: POSTGRES_MISSING } : {}),
    };
  } finally {
    for (const target of targets) {
      await target.app.flush();
      await closeStore(target.kv);
    }
    await sim.close();
    await pg?.stop();
  }
}

function round3(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/**
 * The stores section of `BENCHMARKS.md`.
 *
 * @param results What {@linkcode benchStores} measured.
 * @returns Markdown lines.
 */
export function renderStores(results: StoreBenchResults): string[] {
  return [
    "## State stores: KV file and PostgreSQL",
    "",
    `\`bench/gateway/stores.ts\`: an in-process gateway per store in front of one simulator, sequential non-streamed calls, the stores taking turns. Direct simulator call: p50 ${results.direct.p50Ms} ms, p99 ${results.direct.p99Ms} ms. CPU is the bench process's (gateway and simulator); PostgreSQL's server CPU is beside it.`,
    "",
    "| Store | Calls | CPU per call (µs) | PostgreSQL CPU per call (µs) | Added p50 (ms) | Added p99 (ms) |",
    "| --- | --- | --- | --- | --- | --- |",
    ...results.rows.map((row) =>
      `| ${row.store} | ${row.calls} | ${row.cpuMicrosPerCall} | ${
        row.databaseCpuMicrosPerCall ?? "—"
      } | ${row.addedP50Ms} | ${row.addedP99Ms} |`
    ),
    ...(results.skipped ? ["", results.skipped] : []),
    "",
  ];
}

if (import.meta.main) {
  const workDir = await Deno.makeTempDir({ prefix: "mcpkit-stores-" });
  try {
    const results = await benchStores(
      { calls: Number(Deno.args[0] ?? 2000), workDir },
      (line) => console.error(line),
    );
    console.log(JSON.stringify(results, null, 2));
  } finally {
    await Deno.remove(workDir, { recursive: true });
  }
}

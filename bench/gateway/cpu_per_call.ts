/**
 * CPU time per non-streamed call, for comparing two versions of the gateway
 * side by side: an in-process gateway (`app.request()`, no HTTP server) in
 * front of the simulator in the same process, the caller key and balance
 * ready, 500 calls to warm up, then `calls` sequential calls timed with
 * `process.cpuUsage()` (gateway and simulator together, so only the
 * difference between two trees means anything).
 *
 * `deno run -A --config <tree>/deno.json bench/gateway/cpu_per_call.ts <tree> [calls]`
 *
 * Run it on a checkout of the old version (`git worktree add /tmp/old <rev>`)
 * and on this one, alternating, a few times each; or on one tree with
 * `GATEWAY_USAGE_AGGREGATES=off` and `on`, to measure the usage aggregates.
 *
 * @module
 */
import process from "node:process";

const tree = Deno.args[0] ?? new URL("../../", import.meta.url).pathname;
const calls = Number(Deno.args[1] ?? 4000);
// The first path that exists in the tree: the folders of issue 28, or the
// flat layout before them, so an older checkout can be compared with this one.
async function importFirst(paths: string[]) {
  for (const path of paths) {
    try {
      await Deno.stat(`${tree}/${path}`);
    } catch {
      continue;
    }
    return await import(`${tree}/${path}`);
  }
  throw new Error(`None of "${paths.join('", "')}" is in tree "${tree}"`);
}
const { createGateway } = await importFirst([
  "gateway/http/app.ts",
  "gateway/app.ts",
]);
const { createCaller } = await importFirst([
  "gateway/state/callers.ts",
  "gateway/callers.ts",
]);
const { parseConfig } = await import(`${tree}/gateway/config.ts`);
const providers = await importFirst([
  "gateway/upstream/providers/mod.ts",
  "gateway/config.ts",
]);
const providerNames: string[] = providers.PROVIDER_NAMES ?? providers.PROVIDERS;
const { startSimulator } = await import(`${tree}/gateway/simulator/mod.ts`);

const sim = await startSimulator();
const env: Record<string, string> = { ...sim.env() };
// Passed through, to compare a setting on and off in one tree.
const aggregates = Deno.env.get("GATEWAY_USAGE_AGGREGATES");
if (aggregates) env.GATEWAY_USAGE_AGGREGATES = aggregates;
for (const provider of providerNames) {
  env[`${provider.toUpperCase()}_API_KEYS`] = `sk-${provider}`;
}
const kv = await Deno.openKv(":memory:");
const app = createGateway({ config: parseConfig({ env }), kv });
const caller = await createCaller(kv, {
  name: "cpu",
  creditsMicros: 1_000_000_000,
});
const body = JSON.stringify({
  model: "gpt-4o-mini",
  messages: [{ role: "user", content: "hello there" }],
  max_tokens: 16,
});
async function call(): Promise<void> {
  const response = await app.request("/v1/chat/completions", {
    method: "POST",
    headers: {
      authorization: `Bearer ${caller.key}`,
      "content-type": "application/json",
    },
    body,
  });
  await response.text();
}

for (let i = 0; i < 500; i++) await call();
await app.flush();
const before = process.cpuUsage();
const started = performance.now();
for (let i = 0; i < calls; i++) await call();
await app.flush();
const used = process.cpuUsage(before);
console.log(JSON.stringify({
  tree,
  calls,
  cpuMicrosPerCall: Number(((used.user + used.system) / calls).toFixed(1)),
  wallMsPerCall: Number(((performance.now() - started) / calls).toFixed(3)),
}));
await sim.close();
kv.close();

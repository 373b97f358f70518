/**
 * KV operations per gateway call, counted, for docs/scaling.md: what a call
 * costs when the KV is across a network (a KV Connect URL such as a
 * self-hosted denokv), where each operation is a round trip.
 *
 * `deno run -A bench/gateway/kv_ops.ts [--calls 2000] [--callers 1]`
 *
 * Runs a gateway in process in front of the simulator, counts every KV read,
 * list and commit over sequential non-streamed calls (write-behind settles
 * and lease returns flushed at the end), and prints them per call.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { createGateway } from "../../gateway/http/app.ts";
import { createCaller } from "../../gateway/state/callers.ts";
import { parseConfig } from "../../gateway/config.ts";
import { PROVIDER_NAMES } from "../../gateway/upstream/providers/mod.ts";
import { usdToMicros } from "../../gateway/state/credits/money.ts";
import { startSimulator } from "../../gateway/simulator/mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    calls: { type: "string", default: "2000" },
    callers: { type: "string", default: "1" },
  },
});
const calls = Number(values.calls);
const callerCount = Number(values.callers);

const counts = { get: 0, list: 0, commit: 0 };
const raw = await Deno.openKv(":memory:");
const kv = new Proxy(raw, {
  get(target, property) {
    if (property === "get" || property === "getMany") {
      return (...args: unknown[]) => {
        counts.get++;
        return (target[property] as (...a: unknown[]) => unknown)(...args);
      };
    }
    if (property === "list") {
      return (...args: unknown[]) => {
        counts.list++;
        return (target.list as (...a: unknown[]) => unknown)(...args);
      };
    }
    if (property === "atomic") {
      return () => {
        const op = target.atomic();
        const commit = op.commit.bind(op);
        op.commit = () => {
          counts.commit++;
          return commit();
        };
        return op;
      };
    }
    const value = Reflect.get(target, property, target);
    return typeof value === "function" ? value.bind(target) : value;
  },
});

await using sim = await startSimulator();
const env: Record<string, string> = { ...sim.env() };
for (const provider of PROVIDER_NAMES) {
  env[`${provider.toUpperCase()}_API_KEYS`] = `sk-${provider}`;
}
const app = createGateway({ config: parseConfig({ env }), kv });
const callers = await Promise.all(
  Array.from(
    { length: callerCount },
    (_, i) =>
      createCaller(raw, { name: `c${i}`, creditsMicros: usdToMicros(1000) }),
  ),
);
const body = JSON.stringify({
  model: "gpt-4o-mini",
  messages: [{ role: "user", content: "hello" }],
  max_tokens: 16,
});

// Warm up (first lease, caller cache), then count.
for (const caller of callers) await call(caller.key);
await app.flush();
for (const key of Object.keys(counts)) counts[key as keyof typeof counts] = 0;

async function call(key: string): Promise<void> {
  const response = await app.request("/v1/chat/completions", {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
    },
    body,
  });
  await response.text();
}
for (let i = 0; i < calls; i++) await call(callers[i % callerCount].key);
await app.flush();
const total = { ...counts };
const per = (n: number) => (n / calls).toFixed(3);
console.log(
  `${calls} non-streamed calls, ${callerCount} caller(s), one process`,
);
console.log(
  `gets ${per(total.get)}, lists ${per(total.list)}, commits ${
    per(total.commit)
  } per call`,
);
raw.close();

/**
 * The live catalog: a model added, repriced or removed through the admin API
 * or the CLI reaches every gateway process on the KV within seconds, and
 * calls already running keep the price they reserved.
 */
import assert from "node:assert/strict";
import { createGateway } from "../gateway/http/app.ts";
import { createCaller } from "../gateway/state/callers.ts";
import { parseConfig } from "../gateway/config.ts";
import { PROVIDER_NAMES } from "../gateway/upstream/providers/mod.ts";
import { listLedger } from "../gateway/state/credits/ledger.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";

const TOKEN = "admin-token-0123456789";

async function waitFor<T>(
  probe: () => Promise<T | undefined>,
  what: string,
): Promise<T> {
  const deadline = Date.now() + 6_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    assert.ok(Date.now() < deadline, `${what} never happened`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

Deno.test("a model added, repriced and removed on one process reaches another on the same KV within seconds", async () => {
  await using sim = await startSimulator();
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/gateway.kv`;
  const kv = await Deno.openKv(kvPath);
  try {
    const env: Record<string, string> = {
      ...sim.env(),
      GATEWAY_ADMIN_TOKEN: TOKEN,
    };
    for (const provider of PROVIDER_NAMES) {
      env[`${provider.toUpperCase()}_API_KEYS`] = `sk-${provider}`;
    }
    const config = parseConfig({ env });
    const [a, b] = [
      createGateway({ config, kv }),
      createGateway({ config, kv }),
    ];
    const caller = await createCaller(kv, {
      name: "live",
      creditsMicros: usdToMicros(10),
    });
    const admin = { authorization: `Bearer ${TOKEN}` };
    const entry = {
      provider: "openai",
      upstream: "gpt-4o-mini",
      routes: ["chat"],
      pricing: { input: 100, output: 200 },
      maxOutputTokens: 1024,
    };
    const put = await a.request("/admin/models/house-model", {
      method: "PUT",
      headers: { ...admin, "content-type": "application/json" },
      body: JSON.stringify(entry),
    });
    assert.equal(put.status, 200);
    assert.equal((await put.json()).id, "house-model");

    const call = (app: typeof a) =>
      app.request("/v1/chat/completions", {
        method: "POST",
        headers: {
          authorization: `Bearer ${caller.key}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({
          model: "house-model",
          max_tokens: 16,
          messages: [{ role: "user", content: "hello" }],
        }),
      });
    // B sees it within the refresh interval, lists it and serves it.
    const listed = await waitFor(async () => {
      const { data } = await (await b.request("/v1/models")).json();
      return data.find((m: { id: string }) => m.id === "house-model");
    }, "the model reaching the other process");
    assert.deepEqual(listed.pricing.input, 100);
    const served = await call(b);
    assert.equal(served.status, 200);
    const cost = Number(served.headers.get("x-gateway-cost"));
    await served.body?.cancel();

    // Repriced through the CLI; the next calls pay the new price.
    const cli = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("../gateway/cli/keys.ts", import.meta.url).pathname,
        "model-set",
        JSON.stringify({
          ...entry,
          id: "house-model",
          pricing: { input: 1, output: 2 },
        }),
      ],
      env: { GATEWAY_KV_PATH: kvPath, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(cli.code, 0, new TextDecoder().decode(cli.stderr));
    await waitFor(async () => {
      const response = await call(b);
      const repriced = Number(response.headers.get("x-gateway-cost"));
      await response.body?.cancel();
      return repriced < cost ? true : undefined;
    }, "the new price reaching the other process");

    // Removed: refused cleanly (404) everywhere.
    const removed = await a.request("/admin/models/house-model", {
      method: "DELETE",
      headers: admin,
    });
    assert.equal(removed.status, 200);
    await removed.body?.cancel();
    await waitFor(async () => {
      const response = await call(b);
      await response.body?.cancel();
      return response.status === 404 ? true : undefined;
    }, "the removal reaching the other process");
    // A shipped model removed and put back works as the catalog file says.
    const invalid = await a.request("/admin/models/broken", {
      method: "PUT",
      headers: { ...admin, "content-type": "application/json" },
      body: JSON.stringify({ provider: "nobody" }),
    });
    assert.equal(invalid.status, 400);
    assert.match((await invalid.json()).error.message, /provider/);
    await a.flush();
    await b.flush();
    const charges = (await listLedger(kv, caller.id)).filter((e) =>
      e.kind === "charge"
    );
    assert.ok(charges.every((e) => e.model === "house-model"));
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

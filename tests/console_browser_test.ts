/**
 * The operator console and the caller page as a person uses them: headless
 * Chromium (Debian's `chromium`, driven by `playwright-core`) after real
 * traffic through the gateway to the simulator. Skipped, saying so, where
 * Chromium is not installed (`.ci/run` installs it).
 *
 * With `MCPKIT_SCREENSHOTS=1` it also writes `docs/console.png` and
 * `docs/activity.png`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { parseConfig } from "../gateway/config.ts";
import { startGateway } from "../gateway/server.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";

const CHROMIUM = "/usr/bin/chromium";
const ADMIN = "console-admin-token-0123456789";
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const SCREENSHOTS = Deno.env.get("MCPKIT_SCREENSHOTS") === "1";
const DOCS = new URL("../docs/", import.meta.url).pathname;

let found = false;
try {
  found = Deno.statSync(CHROMIUM).isFile;
} catch {
  console.warn(
    `console browser test skipped: ${CHROMIUM} not found (apt-get install -y chromium)`,
  );
}

async function admin(base: string, path: string, init: RequestInit = {}) {
  const response = await fetch(`${base}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${ADMIN}`, ...init.headers },
  });
  return await response.json();
}

async function call(
  base: string,
  key: string,
  model: string,
  stream = false,
): Promise<number> {
  const response = await fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({
      model,
      stream,
      messages: [{ role: "user", content: `hello from ${model}` }],
    }),
  });
  await response.text();
  return response.status;
}

/** Polls a condition (the pages' CSP forbids Playwright's evaluated waits). */
async function until(check: () => Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("Timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function usd(value: number): string {
  return `$${value < 1 ? value.toFixed(6) : value.toFixed(2)}`;
}

Deno.test({
  name:
    "the console signs in, shows the traffic's totals and charts, filters and opens traces, creates and tops up a caller; a caller's page shows only their own calls",
  ignore: !found,
}, async () => {
  await using sim = await startSimulator({ behaviour: { latencyMs: 5 } });
  const gateway = await startGateway(
    parseConfig({
      env: {
        GATEWAY_KV_PATH: ":memory:",
        PORT: "0",
        GATEWAY_ADMIN_TOKEN: ADMIN,
        ...sim.env(),
        OPENAI_API_KEYS: "sk-openai-1",
        ANTHROPIC_API_KEYS: "sk-ant-1",
      },
    }),
    { log: () => {} },
  );
  const base = gateway.url;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: FLAGS,
  });
  try {
    const alice = await admin(base, "/admin/keys", {
      method: "POST",
      body: JSON.stringify({ name: "alice", credits: 10 }),
    });
    const bob = await admin(base, "/admin/keys", {
      method: "POST",
      body: JSON.stringify({ name: "bob", credits: 10 }),
    });
    for (let i = 0; i < 3; i++) await call(base, alice.key, "gpt-4o-mini");
    await call(base, alice.key, "claude-haiku-4-5", true);
    await call(base, bob.key, "claude-haiku-4-5");
    await call(base, bob.key, "claude-haiku-4-5");
    assert.equal(await call(base, bob.key, "no-such-model"), 404);
    // The truth to compare with: every trace the gateway kept.
    const traces = (await admin(base, "/admin/traces")).data as {
      callerId: string;
      costMicros: number;
      traceId: string;
    }[];
    assert.equal(traces.length, 7);
    const totalCost = traces.reduce((sum, t) => sum + t.costMicros, 0) / 1e6;

    const page = await browser.newPage({
      viewport: { width: 1280, height: 900 },
    });
    await page.goto(`${base}/console`);
    await page.fill("[data-testid=signin-token]", "not-the-token");
    await page.click("[data-testid=signin-submit]");
    await page.waitForSelector(
      "[data-testid=signin-error]:has-text('not accepted')",
    );
    await page.fill("[data-testid=signin-token]", ADMIN);
    await page.click("[data-testid=signin-submit]");

    // Overview: the totals of the traffic, and charts with points in them.
    await page.click("[data-range='1h']");
    await page.waitForSelector("[data-testid=total-requests]");
    assert.equal(await page.textContent("[data-testid=total-requests]"), "7");
    assert.equal(
      await page.textContent("[data-testid=total-spend]"),
      usd(totalCost),
    );
    assert.equal(await page.textContent("[data-testid=error-rate]"), "14.3%");
    const requestsChart = page.locator("[data-testid=chart-requests]");
    assert.equal(await requestsChart.getAttribute("data-total"), "8"); // 7 calls + 1 error
    assert.equal(await requestsChart.locator("canvas").count(), 1);
    assert.equal(
      await page.getAttribute("[data-testid=chart-spend]", "data-total") !==
        "0",
      true,
    );
    assert.ok(!page.url().includes(ADMIN), "the token is never in the URL");
    assert.deepEqual(await page.context().cookies(), [], "nor in a cookie");
    if (SCREENSHOTS) await page.screenshot({ path: `${DOCS}console.png` });

    // Models: the breakdown by model.
    await page.click("[data-tab=models]");
    const models = await page.textContent("[data-testid=models-table]");
    assert.match(models ?? "", /gpt-4o-mini\s*3/);
    assert.match(models ?? "", /claude-haiku-4-5\s*3/);

    // Provider keys: each key by its id, with its last minute's use.
    await page.click("[data-tab=keys]");
    const keys = await page.textContent("[data-testid=keys-table]");
    assert.match(keys ?? "", /openai\s*\S+\s*ready/);
    assert.match(keys ?? "", /anthropic/);

    // Traces: filter by caller, then by status, and open one.
    await page.click("[data-tab=traces]");
    await page.selectOption("[data-filter=caller]", bob.id);
    await page.click("[data-testid=apply-filter]");
    await page.waitForSelector("[data-testid=traces-table] tbody tr");
    assert.equal(
      await page.locator("[data-testid=traces-table] tbody tr").count(),
      3,
    );
    await page.fill("[data-filter=status]", "4xx");
    await page.click("[data-testid=apply-filter]");
    await until(async () =>
      await page.locator("[data-testid=traces-table] tbody tr").count() === 1
    );
    await page.click("[data-testid=traces-table] tbody tr");
    const detail = await page.textContent("[data-testid=trace-detail]");
    assert.match(detail ?? "", /"status": 404/);
    assert.match(detail ?? "", /no-such-model/);

    // Callers: create one (its key shown once), then top it up.
    await page.click("[data-tab=callers]");
    await page.fill("[data-testid=new-caller-name]", "carol");
    await page.fill("[data-testid=new-caller-credits]", "3");
    await page.click("[data-testid=create-caller]");
    const notice = await page.textContent("[data-testid=created-key]");
    assert.match(notice ?? "", /Created "carol"\. Its key, shown once: \S+/);
    const carol = ((await admin(base, "/admin/keys")).data as {
      id: string;
      name: string;
    }[]).find((c) => c.name === "carol")!;
    page.once("dialog", (dialog) => dialog.accept("2"));
    await page.click(`[data-action=topup][data-caller=${carol.id}]`);
    await until(async () =>
      (await page.textContent("[data-testid=callers-table]"))?.includes(
        "$5.00",
      ) === true
    );
    assert.equal((await admin(base, `/admin/keys/${carol.id}`)).balance, 5);

    // Bob's own page: his balance, his calls, nobody else's.
    const own = await browser.newPage({
      viewport: { width: 1280, height: 900 },
    });
    await own.goto(`${base}/activity`);
    await own.fill("[data-testid=signin-token]", bob.key);
    await own.click("[data-testid=signin-submit]");
    await own.click("[data-range='1h']");
    await own.waitForSelector("[data-testid=total-requests]");
    assert.equal(await own.textContent("[data-testid=total-requests]"), "3");
    const bobTraces = traces.filter((t) => t.callerId === bob.id);
    const shown = await own.textContent("[data-testid=traces-table]");
    for (const trace of traces) {
      assert.equal(
        (shown ?? "").includes(trace.traceId),
        trace.callerId === bob.id,
        `trace ${trace.traceId} of ${trace.callerId}`,
      );
    }
    assert.equal(bobTraces.length, 3);
    const bobBalance = (await admin(base, `/admin/keys/${bob.id}`)).balance;
    assert.equal(
      await own.textContent("[data-testid=balance]"),
      usd(bobBalance),
    );
    if (SCREENSHOTS) await own.screenshot({ path: `${DOCS}activity.png` });
  } finally {
    await browser.close();
    await gateway.shutdown();
  }
});

/**
 * The operator console and the caller page as a person uses them: headless
 * Chromium (Debian's `chromium`, driven by `playwright-core`) after real
 * traffic through the gateway to the simulator, at a desktop (1440×900) and
 * a phone (390×844) width. Skipped, saying so, where Chromium is not
 * installed (`.ci/run` installs it).
 *
 * With `MCPKIT_SCREENSHOTS=1` it also writes the screenshots in `docs/`
 * (`console*.png`, `activity*.png`).
 *
 * @module
 */
import assert from "node:assert/strict";
import { chromium, type Page } from "playwright-core";
import { parseConfig } from "../gateway/config.ts";
import { startGateway } from "../gateway/http/server.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import {
  type ChargedTraceRecord,
  storeTrace,
} from "../gateway/state/traces.ts";
import { keptBody } from "../gateway/state/trace_bodies.ts";

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
const DESKTOP = { width: 1440, height: 900 };
const PHONE = { width: 390, height: 844 };
const TABS = [
  "overview",
  "callers",
  "models",
  "catalog",
  "providers",
  "keys",
  "traces",
];
/** How long the gateway may serve a key's cached lookup (callers.ts: at most 1 s). */
const KEY_CACHE_MS = 1_050;
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

interface Trace {
  requestId: string;
  traceId: string;
  callerId: string;
  model?: string;
  status: number;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  costMicros: number;
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
  model: string | undefined,
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

/**
 * Waits for the callers' answered calls to be charged and traced: reading a
 * caller's balance queues behind its pending settlements (write-behind).
 */
async function settle(base: string, ...keys: string[]) {
  for (const key of keys) {
    const response = await fetch(`${base}/v1/credits`, {
      headers: { authorization: `Bearer ${key}` },
    });
    await response.body?.cancel();
  }
}

/** Polls a condition (the pages' CSP forbids Playwright's evaluated waits). */
async function until(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 10_000,
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** USD as the pages show it: cents when whole cents, else to the micro-USD. */
function usd(value: number): string {
  if (value < 1) return `$${value.toFixed(6)}`;
  const cents = value.toFixed(2);
  return Math.abs(Number(cents) - value) < 5e-7
    ? `$${cents}`
    : `$${value.toFixed(6).replace(/0+$/, "")}`;
}

/** Parses CSV (RFC 4180: quoted fields may hold commas, quotes, line breaks). */
function parseCsv(text: string): Record<string, string>[] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') cell += text[++i];
      else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") row.push(cell), cell = "";
    else if (ch === "\n") row.push(cell), rows.push(row), row = [], cell = "";
    else if (ch !== "\r") cell += ch;
  }
  const [header, ...body] = rows;
  return body.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i]])));
}

/** What a page looks like where it should: no stray null, no clipped card. */
async function checkLayout(page: Page, where: string) {
  // A value printed raw: a cell or line that is "null" (or undefined, NaN,
  // an object), or a number gone wrong inside one ("$NaN").
  const text = await page.locator("main").innerText();
  const stray = text.split(/[\t\n]/).map((cell) => cell.trim()).filter(
    (cell) =>
      /^(null|undefined|NaN)$/.test(cell) || /\[object |\bNaN\b/.test(cell),
  );
  assert.deepEqual(stray, [], `${where}: stray values in ${text}`);
  const clipped = await page.locator(".card, .card .value").evaluateAll((
    cards,
  ) =>
    cards.filter((card) => card.scrollWidth > card.clientWidth).map((card) =>
      card.textContent
    )
  );
  assert.deepEqual(clipped, [], `${where}: clipped cards`);
  // Nothing wider than the window but what scrolls inside its own box.
  const overflow = await page.locator("body").evaluate((body) =>
    body.scrollWidth - body.clientWidth
  );
  assert.ok(
    overflow <= 0,
    `${where}: the page scrolls sideways by ${overflow}px`,
  );
}

async function openTab(page: Page, tab: string) {
  await page.click(`[data-tab=${tab}]`);
  await page.waitForSelector(`[data-tab=${tab}][aria-current=page]`);
  await page.waitForSelector("main:not([aria-busy])");
}

async function canvasWidth(page: Page, testid: string): Promise<number> {
  return (await page.locator(`[data-testid=${testid}] canvas`).boundingBox())
    ?.width ?? 0;
}

async function download(page: Page, testid: string): Promise<string> {
  const [file] = await Promise.all([
    page.waitForEvent("download"),
    page.click(`[data-testid=${testid}]`),
  ]);
  return await Deno.readTextFile(await file.path());
}

Deno.test({
  name:
    "the console at desktop and phone widths: every tab laid out, limits and prices edited then enforced and charged, traces opened as fields and paged past 200, CSV equal to the API; the caller page shows the caller's own calls and limits",
  ignore: !found,
}, async () => {
  await using sim = await startSimulator({ behaviour: { latencyMs: 2 } });
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
    const create = (name: string, credits = 10) =>
      admin(base, "/admin/keys", {
        method: "POST",
        body: JSON.stringify({ name, credits }),
      });
    const alice = await create("alice");
    const bob = await create("bob");
    const carol = await create("carol");
    const loader = await create("loader", 100);
    for (let i = 0; i < 3; i++) await call(base, alice.key, "gpt-4o-mini");
    await call(base, alice.key, "claude-haiku-4-5", true);
    await call(base, bob.key, "claude-haiku-4-5");
    await call(base, bob.key, "claude-haiku-4-5");
    assert.equal(await call(base, bob.key, "no-such-model"), 404);
    assert.equal(await call(base, bob.key, undefined), 400);
    // Enough calls for a second page of traces.
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = 0; i < 26; i++) {
          await call(base, loader.key, "gpt-4o-mini");
        }
      }),
    );
    await settle(base, alice.key, bob.key, loader.key);
    const traces = (await admin(base, "/admin/traces?limit=1000"))
      .data as Trace[];
    assert.equal(traces.length, 216);
    const totalCost = traces.reduce((sum, t) => sum + t.costMicros, 0) / 1e6;

    const page = await browser.newPage({ viewport: DESKTOP });
    const pageErrors: string[] = [];
    page.on("pageerror", (error) => pageErrors.push(error.message));
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
    await page.waitForSelector("[data-range='1h'][aria-pressed=true]");
    await page.waitForSelector("[data-testid=chart-requests] canvas");
    assert.equal(
      await page.textContent("[data-testid=total-requests]"),
      String(traces.length),
    );
    assert.equal(
      await page.textContent("[data-testid=total-spend]"),
      usd(totalCost),
    );
    assert.equal(
      await page.textContent("[data-testid=error-rate]"),
      `${(200 / traces.length).toFixed(1)}%`,
    );
    assert.match(
      await page.textContent("[data-testid=latency]") ?? "",
      /^p50 [\d,.]+ msp95 [\d,.]+ msp99 [\d,.]+ ms$/,
    );
    const requestsChart = page.locator("[data-testid=chart-requests]");
    assert.equal(
      await requestsChart.getAttribute("data-total"),
      String(traces.length + 2), // the requests, and the 2 errors again
    );
    const spendChart = page.locator("[data-testid=chart-spend]");
    assert.equal(
      (await spendChart.getAttribute("data-models"))?.split(",").sort().join(
        ",",
      ),
      "claude-haiku-4-5,gpt-4o-mini,refused before routing",
    );
    assert.ok(
      Math.abs(
        Number(await spendChart.getAttribute("data-total")) - totalCost,
      ) <
        1e-9,
    );
    assert.ok(!page.url().includes(ADMIN), "the token is never in the URL");
    assert.deepEqual(await page.context().cookies(), [], "nor in a cookie");
    await checkLayout(page, "overview at 1440");
    if (SCREENSHOTS) await page.screenshot({ path: `${DOCS}console.png` });

    // Charts follow the window: each fills its box, narrower, then wide again.
    const fits = async () => {
      const box = (await requestsChart.boundingBox())?.width ?? 0;
      // The canvas is the box less its padding (8 px a side) and border.
      return Math.abs(await canvasWidth(page, "chart-requests") - (box - 18)) <
        2;
    };
    assert.ok(await fits(), "the chart fills its box");
    const wide = await canvasWidth(page, "chart-requests");
    await page.setViewportSize({ width: 1100, height: 900 });
    await until(
      "the chart to narrow with the window",
      async () =>
        await canvasWidth(page, "chart-requests") < wide - 100 && await fits(),
    );
    await page.setViewportSize(DESKTOP);
    await until(
      "the chart to widen with the window",
      async () =>
        Math.abs(await canvasWidth(page, "chart-requests") - wide) < 2,
    );

    // Usage CSV: the API's numbers.
    const usage = await admin(base, "/admin/usage?range=1h");
    const usageRows = parseCsv(await download(page, "usage-csv"));
    const total = usageRows.find((r) => r.group === "total")!;
    assert.equal(Number(total.requests), usage.totals.requests);
    assert.equal(Number(total.cost_usd), usage.totals.costUsd);
    for (const row of usage.byModel) {
      const csvRow = usageRows.find((r) =>
        r.group === "model" && r.id === row.model
      );
      assert.equal(Number(csvRow?.requests), row.requests, row.model);
      assert.equal(Number(csvRow?.cost_usd), row.costUsd, row.model);
    }

    // Every tab at both widths: laid out, no stray null.
    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      for (const tab of TABS) {
        await openTab(page, tab);
        await checkLayout(page, `${tab} at ${viewport.width}`);
      }
    }
    if (SCREENSHOTS) {
      await openTab(page, "overview");
      await page.screenshot({ path: `${DOCS}console-phone.png` });
    }
    await page.setViewportSize(DESKTOP);

    // Models: the breakdown by model, refusals before routing named so.
    await openTab(page, "models");
    const models = await page.textContent("[data-testid=models-table]");
    assert.match(models ?? "", /gpt-4o-mini\s*211/);
    assert.match(models ?? "", /claude-haiku-4-5\s*3/);
    assert.match(models ?? "", /refused before routing\s*2/);

    // Provider keys: each key by its id, with its last minute's use.
    await openTab(page, "keys");
    const keys = await page.textContent("[data-testid=keys-table]");
    assert.match(keys ?? "", /openai\s*\S+\s*ready/);

    // Callers: carol has no requests (a dash, not 0%); bob's allowlist and
    // carol's rpm edited in the page, then enforced on the next call.
    await openTab(page, "callers");
    const carolRow = page.locator("[data-testid=callers-table] tr", {
      hasText: carol.id,
    });
    assert.match(await carolRow.innerText(), /\$0\.000000\s+—/);
    await page.click(`[data-action=limits][data-caller=${bob.id}]`);
    await page.fill("[data-limit=models]", "gpt-4o-mini");
    await page.fill("[data-limit=spend]", "5");
    await page.selectOption("[data-limit=period]", "day");
    await page.click("[data-testid=limits-save]");
    await page.waitForSelector(
      `[data-limits=${bob.id}]:has-text('Models: gpt-4o-mini')`,
    );
    assert.deepEqual((await admin(base, `/admin/keys/${bob.id}`)).limits, {
      models: ["gpt-4o-mini"],
      spend: { amount: 5, period: "day" },
    });
    // A key's lookup is cached for at most a second (callers.ts).
    await new Promise((resolve) => setTimeout(resolve, KEY_CACHE_MS));
    assert.equal(await call(base, bob.key, "claude-haiku-4-5"), 403);
    assert.equal(await call(base, bob.key, "gpt-4o-mini"), 200);
    await page.click(`[data-action=limits][data-caller=${carol.id}]`);
    await page.fill("[data-limit=rpm]", "1");
    await page.click("[data-testid=limits-save]");
    await page.waitForSelector(
      `[data-limits=${carol.id}]:has-text('1 request/min')`,
    );
    await new Promise((resolve) => setTimeout(resolve, KEY_CACHE_MS));
    assert.equal(await call(base, carol.key, "gpt-4o-mini"), 200);
    assert.equal(await call(base, carol.key, "gpt-4o-mini"), 429);
    // A bad limit is one line in the form, and nothing changes.
    await page.click(`[data-action=limits][data-caller=${carol.id}]`);
    await page.fill("[data-limit=rpm]", "0");
    await page.click("[data-testid=limits-save]");
    await page.waitForSelector("[data-testid=form-error]:has-text('rpm')");
    assert.equal((await admin(base, `/admin/keys/${carol.id}`)).limits.rpm, 1);

    // Top-up in the page; a created caller's key with a copy button.
    await openTab(page, "callers");
    await page.click(`[data-action=topup][data-caller=${carol.id}]`);
    await page.fill("[data-testid=topup-amount]", "2.5");
    await page.click("[data-testid=topup-submit]");
    await until(
      "the top-up to show",
      async () =>
        (await carolRow.innerText()).includes("$12.") ||
        (await carolRow.innerText()).includes("$11."),
    );
    const carolBalance = (await admin(base, `/admin/keys/${carol.id}`)).balance;
    assert.ok(carolBalance > 12 && carolBalance <= 12.5, `${carolBalance}`);
    await page.fill("[data-testid=new-caller-name]", "dave <b>&");
    await page.fill("[data-testid=new-caller-credits]", "3");
    await page.click("[data-testid=create-caller]");
    const davesKey = await page.textContent(
      "[data-testid=created-key-value]",
    );
    assert.match(davesKey ?? "", /^mk-\S+$/);
    assert.equal(await page.locator("[data-testid=copy-key]").count(), 1);
    assert.equal(
      await page.locator("[data-testid=callers-table] b").count(),
      0,
      "a name is text, never markup",
    );
    assert.equal(await call(base, davesKey!, "gpt-4o-mini"), 200);
    assert.match(
      await carolRow.innerText(),
      new RegExp(`\\${usd(carolBalance)}\\s`),
      "a balance below whole cents is not rounded up",
    );
    if (SCREENSHOTS) {
      await page.click(`[data-action=limits][data-caller=${bob.id}]`);
      await page.waitForSelector("[data-testid=limits-panel]");
      await page.screenshot({ path: `${DOCS}console-callers.png` });
    }

    // Revoking asks in the page, then the key stops working.
    const dave = ((await admin(base, "/admin/keys")).data as {
      id: string;
      name: string;
    }[]).find((c) => c.name.startsWith("dave"))!;
    await openTab(page, "callers");
    await page.click(`[data-action=revoke][data-caller=${dave.id}]`);
    await page.click("[data-testid=revoke-confirm]");
    await page.waitForSelector(
      `[data-testid=callers-table]:not(:has-text('${dave.id}'))`,
    );
    await new Promise((resolve) => setTimeout(resolve, KEY_CACHE_MS));
    assert.equal(await call(base, davesKey!, "gpt-4o-mini"), 401);

    // Catalog: a model's price edited in the page, then charged.
    await openTab(page, "catalog");
    assert.equal(
      await page.textContent("[data-lifecycle='claude-sonnet-4-5']"),
      "deprecated 2026-09-30 · retires 2026-11-30 · successor claude-sonnet-5-5",
    );
    await page.click("[data-action=edit-model][data-model='gpt-4o-mini']");
    await page.fill("[data-model-field=input]", "10");
    await page.fill("[data-model-field=output]", "20");
    await page.click("[data-testid=model-save]");
    await page.waitForSelector(
      "[data-testid=catalog-table] tr:has-text('gpt-4o-mini'):has-text('$10'):has-text('$20')",
    );
    await until("the new price to be served", async () => {
      const catalog = (await admin(base, "/admin/models")).data as {
        id: string;
        pricing: { input: number };
      }[];
      return catalog.find((m) => m.id === "gpt-4o-mini")?.pricing.input ===
        10;
    });
    assert.equal(await call(base, alice.key, "gpt-4o-mini"), 200);
    await settle(base, alice.key, bob.key, carol.key);
    const [charged] = (await admin(
      base,
      `/admin/traces?caller=${alice.id}&limit=1`,
    )).data as Trace[];
    assert.ok(charged.inputTokens > 0 && charged.outputTokens > 0);
    assert.equal(
      charged.costMicros,
      (charged.inputTokens - charged.cachedTokens) * 10 +
        charged.outputTokens * 20,
    );
    if (SCREENSHOTS) {
      await page.screenshot({ path: `${DOCS}console-catalog.png` });
    }

    // Traces: no detail until a row is picked, then labelled fields.
    await openTab(page, "traces");
    await page.waitForSelector("[data-testid=trace-hint]");
    const all = (await admin(base, "/admin/traces?limit=1000")).data as Trace[];
    const firstPage = page.locator("[data-testid=traces-table] tbody tr");
    assert.equal(await firstPage.count(), 200);
    assert.equal(
      await page.textContent("[data-testid=trace-range]"),
      "Calls 1–200",
    );
    await page.click(
      `[data-testid=traces-table] tbody tr:has-text('${charged.traceId}')`,
    );
    await page.waitForSelector("[data-testid=trace-detail]", { timeout: 5_000 })
      .catch(() => {
        throw new Error(`No trace detail: ${pageErrors.join("; ")}`);
      });
    const field = (label: string) =>
      page.textContent(`[data-testid=trace-detail] dd[data-field='${label}']`);
    assert.equal(await field("Cost"), usd(charged.costMicros / 1e6));
    assert.match(
      await field("Time") ?? "",
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/,
    );
    assert.equal(await field("Caller"), `alice (${alice.id})`);
    assert.equal(await field("Provider"), "openai");
    const detailText = await page.textContent("[data-testid=trace-detail]");
    assert.doesNotMatch(detailText ?? "", /costMicros|latencyMs|\{/);
    await checkLayout(page, "trace detail");
    if (SCREENSHOTS) {
      await page.screenshot({ path: `${DOCS}console-traces.png` });
    }
    await page.click("[data-testid=close-detail]");
    await page.waitForSelector(
      "main:not([aria-busy]) [data-testid=trace-hint]",
    );
    assert.deepEqual(pageErrors, [], "no error in the console's scripts");

    // Paging past 200: the older page holds the rest, none repeated.
    const shownIds = async () => (await page.locator(
      "[data-testid=traces-table] tbody tr td:last-child",
    ).allTextContents());
    const page1 = await shownIds();
    await page.click("[data-testid=older]");
    await page.waitForSelector(
      `[data-testid=trace-range]:has-text('Calls 201–${all.length}')`,
    );
    const page2 = await shownIds();
    assert.equal(page2.length, all.length - 200);
    assert.equal(new Set([...page1, ...page2]).size, all.length);
    assert.deepEqual(
      [...page1, ...page2],
      all.map((t) => t.traceId),
      "in the API's order",
    );
    assert.equal(
      await page.locator("[data-testid=older]").isDisabled(),
      true,
    );
    await page.click("[data-testid=newer]");
    await page.waitForSelector(
      "[data-testid=trace-range]:has-text('Calls 1–200')",
    );

    // Traces CSV: the API's records, number for number.
    const traceRows = parseCsv(await download(page, "traces-csv"));
    assert.equal(traceRows.length, all.length);
    traceRows.forEach((row, i) => {
      assert.equal(row.request_id, all[i].requestId);
      assert.equal(Number(row.cost_usd), all[i].costMicros / 1e6);
      assert.equal(Number(row.input_tokens), all[i].inputTokens);
      assert.equal(Number(row.status), all[i].status);
    });

    // A trace that kept its bodies (the operator turned that on): shown
    // scrubbed, in the detail, JSON laid out.
    const secret = "sk-proj-0123456789abcdefghijklmnop";
    const withBodies: ChargedTraceRecord = {
      ...(charged as unknown as ChargedTraceRecord),
      requestId: "req_with_bodies",
      traceId: "trace-with-bodies",
      time: Date.now(),
      requestBody: keptBody(
        JSON.stringify({
          model: "gpt-4o-mini",
          api_key: secret,
          messages: [{ role: "user", content: "<script>alert(1)</script>" }],
        }),
        4096,
      ),
      responseBody: keptBody(`{"choices":[{"text":"seen ${secret}"}]}`, 4096),
    };
    await storeTrace(gateway.kv, withBodies);
    await page.fill("[data-filter=trace_id]", "trace-with-bodies");
    await page.click("[data-testid=apply-filter]");
    await page.waitForSelector(
      "[data-testid=trace-range]:has-text('Calls 1–1')",
    );
    await page.click("[data-testid=traces-table] tbody tr");
    const requestBody = await field("Request body") ?? "";
    assert.match(requestBody, /"api_key": "\[scrubbed\]"/);
    assert.match(requestBody, /<script>alert\(1\)<\/script>/, "shown as text");
    assert.match(await field("Response body") ?? "", /seen \[scrubbed key\]/);
    assert.doesNotMatch(await page.content(), new RegExp(secret));
    assert.equal(await page.locator("main script").count(), 0);
    await checkLayout(page, "trace bodies");
    await page.fill("[data-filter=trace_id]", "");
    await page.click("[data-testid=apply-filter]");
    await page.waitForSelector(
      "[data-testid=trace-range]:has-text('Calls 1–200')",
    );

    // Auto-refresh: off until switched on, remembered for the tab.
    assert.equal(await page.isChecked("[data-testid=auto-refresh]"), false);
    await page.check("[data-testid=auto-refresh]");
    await openTab(page, "overview");
    assert.equal(await page.isChecked("[data-testid=auto-refresh]"), true);

    // Bob's own page: his balance, his calls and his limits, nobody else's.
    for (const viewport of [DESKTOP, PHONE]) {
      const own = await browser.newPage({ viewport });
      await own.goto(`${base}/activity`);
      await own.fill("[data-testid=signin-token]", bob.key);
      await own.click("[data-testid=signin-submit]");
      await own.click("[data-range='1h']");
      await own.waitForSelector("[data-range='1h'][aria-pressed=true]");
      await own.waitForSelector("[data-testid=chart-spend] canvas");
      const bobUsage = await admin(
        base,
        `/admin/usage?range=1h&caller=${bob.id}`,
      );
      assert.equal(
        await own.textContent("[data-testid=total-requests]"),
        String(bobUsage.totals.requests),
      );
      const shown = await own.textContent("[data-testid=traces-table]");
      const latest = (await admin(base, "/admin/traces?limit=1000"))
        .data as Trace[];
      for (const trace of latest) {
        assert.equal(
          (shown ?? "").includes(trace.traceId),
          trace.callerId === bob.id,
          `trace ${trace.traceId} of ${trace.callerId}`,
        );
      }
      const bobBalance = (await admin(base, `/admin/keys/${bob.id}`)).balance;
      assert.equal(
        await own.textContent("[data-testid=balance]"),
        usd(bobBalance),
      );
      assert.equal(
        await own.textContent(
          "[data-testid=limits] dd[data-field='Models you may call']",
        ),
        "gpt-4o-mini",
      );
      assert.equal(
        await own.textContent("[data-testid=limits] dd[data-field=Budget]"),
        "$5.00 per day (UTC)",
      );
      if (viewport === DESKTOP) {
        // The caller's calls as CSV: their own API's records.
        const mine = (await (await fetch(`${base}/v1/traces?limit=1000`, {
          headers: { authorization: `Bearer ${bob.key}` },
        })).json()).data as Trace[];
        const rows = parseCsv(await download(own, "traces-csv"));
        assert.deepEqual(
          rows.map((r) => [r.request_id, Number(r.cost_usd), r.caller_id]),
          mine.map((t) => [t.requestId, t.costMicros / 1e6, bob.id]),
        );
      }
      await checkLayout(own, `activity at ${viewport.width}`);
      if (SCREENSHOTS) {
        await own.screenshot({
          path: `${DOCS}activity${viewport === PHONE ? "-phone" : ""}.png`,
          fullPage: viewport === PHONE,
        });
      }
      await own.close();
    }
  } finally {
    await browser.close();
    await gateway.shutdown();
  }
});

import assert from "node:assert/strict";
import { parseConfig, providerKeyWarnings } from "../../config.ts";
import { imageTokens } from "../../call/images.ts";
import { DEFAULT_CATALOG, parseCatalogEntry } from "../../state/catalog.ts";
import { startSimulator } from "../../simulator/mod.ts";
import { otelProviderName, PROVIDER_NAMES, PROVIDERS } from "./mod.ts";

const SIZE = { width: 1280, height: 800 };
const registered = (name: string) =>
  (PROVIDER_NAMES as readonly string[]).includes(name);

Deno.test("the registry lists each provider once, under its own name", () => {
  assert.deepEqual(PROVIDER_NAMES, [
    "openai",
    "anthropic",
    "gemini",
    "xai",
    "openrouter",
  ]);
  assert.deepEqual(Object.keys(PROVIDERS), PROVIDER_NAMES);
  for (const name of PROVIDER_NAMES) {
    assert.equal(PROVIDERS[name].name, name);
    assert.match(name, /^[a-z][a-z0-9]*$/, "a name must make an env prefix");
    assert.doesNotMatch(PROVIDERS[name].defaultBaseUrl, /\/$/);
    assert.match(PROVIDERS[name].defaultBaseUrl, /^https:\/\//);
  }
  assert.equal(new Set(PROVIDER_NAMES).size, PROVIDER_NAMES.length);
  assert.ok(Object.isFrozen(PROVIDERS));
});

Deno.test("the configuration takes each provider's default base URL and <NAME>_* variables from the registry", () => {
  const defaults = parseConfig({});
  assert.deepEqual(
    Object.keys(defaults.providers).sort(),
    [...PROVIDER_NAMES].sort(),
  );
  const env: Record<string, string> = {};
  for (const name of PROVIDER_NAMES) {
    assert.equal(
      defaults.providers[name].baseUrl,
      PROVIDERS[name].defaultBaseUrl,
    );
    assert.deepEqual(defaults.providers[name].apiKeys, []);
    const prefix = name.toUpperCase();
    env[`${prefix}_API_KEYS`] = `k-${name}-1, k-${name}-2`;
    env[`${prefix}_BASE_URL`] = `http://127.0.0.1:9/${name}/`;
    env[`${prefix}_RPM`] = "7";
  }
  const config = parseConfig({ env });
  for (const name of PROVIDER_NAMES) {
    assert.deepEqual(config.providers[name], {
      baseUrl: `http://127.0.0.1:9/${name}`,
      apiKeys: [`k-${name}-1`, `k-${name}-2`],
      rpm: 7,
    });
  }
  assert.deepEqual(providerKeyWarnings(config), []);
  assert.deepEqual(
    providerKeyWarnings(defaults).map((line) => /no (\w+) key/.exec(line)?.[1]),
    PROVIDER_NAMES,
  );
});

Deno.test("the catalog accepts exactly the registered providers", () => {
  const entry = {
    id: "m",
    upstream: "m-1",
    routes: ["chat"],
    pricing: { input: 1, output: 2 },
    maxOutputTokens: 100,
  };
  for (const provider of PROVIDER_NAMES) {
    assert.equal(parseCatalogEntry({ ...entry, provider }).provider, provider);
  }
  assert.throws(
    () => parseCatalogEntry({ ...entry, provider: "acme" }),
    /provider/,
  );
  for (const model of DEFAULT_CATALOG) {
    assert.ok(registered(model.provider), model.id);
  }
});

Deno.test("telemetry names come from each provider's file", () => {
  for (const name of PROVIDER_NAMES) {
    assert.equal(otelProviderName(name), PROVIDERS[name].otelName);
  }
  assert.equal(otelProviderName("openai"), "openai");
  assert.equal(otelProviderName("anthropic"), "anthropic");
  assert.equal(otelProviderName("gemini"), "gcp.gemini");
  assert.equal(otelProviderName("xai"), "x_ai");
  assert.equal(otelProviderName("openrouter"), "openrouter");
});

Deno.test("images are priced by each provider's declared rule", () => {
  const byRule = {
    anthropic: imageTokens({ provider: "anthropic", upstream: "m" }, SIZE),
    openai: imageTokens({ provider: "openai", upstream: "m" }, SIZE),
    gemini: imageTokens({ provider: "gemini", upstream: "m" }, SIZE),
  };
  const dearest = Math.max(...Object.values(byRule));
  for (const name of PROVIDER_NAMES) {
    const rule = PROVIDERS[name].imageRule;
    assert.equal(
      imageTokens({ provider: name, upstream: "m" }, SIZE),
      rule === "dearest" ? dearest : byRule[rule],
      name,
    );
  }
});

Deno.test("the simulator mounts every provider at /<name> plus its default base URL's path, with its wire's endpoints", async () => {
  await using sim = await startSimulator();
  assert.deepEqual(
    Object.keys(sim.baseUrls).sort(),
    [...PROVIDER_NAMES].sort(),
  );
  const endpoint = {
    openai: {
      path: "/chat/completions",
      auth: "authorization",
      key: "Bearer sk-1",
    },
    anthropic: { path: "/v1/messages", auth: "x-api-key", key: "sk-1" },
    gemini: {
      path: "/v1beta/models/m:generateContent",
      auth: "x-goog-api-key",
      key: "sk-1",
    },
  };
  const bodies = {
    openai: { model: "m", messages: [{ role: "user", content: "ping" }] },
    anthropic: {
      model: "m",
      max_tokens: 10,
      messages: [{ role: "user", content: "ping" }],
    },
    gemini: { contents: [{ role: "user", parts: [{ text: "ping" }] }] },
  };
  for (const name of PROVIDER_NAMES) {
    const { wire, defaultBaseUrl } = PROVIDERS[name];
    const path = new URL(defaultBaseUrl).pathname.replace(/\/$/, "");
    assert.equal(sim.baseUrls[name], `${sim.baseUrl}/${name}${path}`);
    assert.equal(
      sim.env()[`${name.toUpperCase()}_BASE_URL`],
      sim.baseUrls[name],
    );
    const { path: route, auth, key } = endpoint[wire];
    const response = await fetch(sim.baseUrls[name] + route, {
      method: "POST",
      headers: { "content-type": "application/json", [auth]: key },
      body: JSON.stringify(bodies[wire]),
    });
    assert.equal(response.status, 200, name);
    assert.match(await response.text(), /Echo: ping/, name);
    assert.equal(sim.requests.at(-1)?.provider, name);
  }
});

/**
 * The gateway's configuration: one typed object, validated by zod, built
 * from an optional JSON file (`GATEWAY_CONFIG=path`) with environment
 * variables on top. Its providers are the registry's
 * (`upstream/providers/mod.ts`): each one's settings, defaults and
 * `<NAME>_*` variables come from there.
 *
 * @module
 */
import { z } from "zod";
import {
  PROVIDER_NAMES,
  type ProviderName,
  PROVIDERS,
} from "./upstream/providers/mod.ts";
import { firstIssue } from "./_zod.ts";

/** What a provider key may hold: visible ASCII, as an HTTP header value allows. */
const HEADER_SAFE = /^[\x21-\x7e]+$/;

const positiveInt = z.coerce.number().int().positive();

const providerSchema = z.object({
  baseUrl: z.url({ protocol: /^https?$/ }).transform((url) =>
    url.replace(/\/+$/, "")
  ),
  apiKeys: z.array(z.string().min(1)).default([]),
  rpm: positiveInt.optional(),
  tpm: positiveInt.optional(),
});

/** Settings of one provider. */
export interface ProviderConfig {
  /** Upstream base URL, in the provider SDK's own convention, without a trailing slash. */
  baseUrl: string;
  /** The pool of provider keys. */
  apiKeys: string[];
  /** Requests per minute allowed on each key. */
  rpm?: number;
  /** Tokens per minute allowed on each key. */
  tpm?: number;
}

const configSchema = z.object({
  port: z.coerce.number().int().min(0).max(65535).default(8080),
  hostname: z.string().min(1).default("0.0.0.0"),
  kvPath: z.string().min(1).default("./data/gateway.kv"),
  store: z.string().regex(
    /^postgres(ql)?:\/\/\S+$/,
    "must be a postgres:// URL",
  ).optional(),
  adminToken: z.string().min(16, "must be at least 16 characters").optional(),
  maxBodyBytes: positiveInt.default(32 * 1024 * 1024),
  maxCallerBodyBytes: positiveInt.default(64 * 1024 * 1024),
  journalDir: z.string().min(1).optional(),
  clockOffsetMs: z.coerce.number().int().min(-86_400_000).max(86_400_000)
    .default(0),
  storeWaitMs: positiveInt.max(3_600_000).default(60_000),
  upstreamTimeoutMs: positiveInt.default(120_000),
  keyCooldownMs: positiveInt.default(60_000),
  callerCacheMs: z.coerce.number().int().min(0).max(1000).default(1000),
  traceRetentionDays: positiveInt.default(30),
  usageRetentionDays: positiveInt.default(400),
  usageAggregates: z.enum(["on", "off"]).default("on"),
  metricsAddr: z.string().regex(
    /^(\[[0-9a-fA-F:]+\]|[\w.-]+):\d{1,5}$/,
    "must be host:port, e.g. 127.0.0.1:9464",
  ).optional(),
  drainTimeoutMs: positiveInt.default(30_000),
  traceBodies: z.enum(["on", "off"]).default("off"),
  traceBodyBytes: positiveInt.max(16_384).default(4_096),
  // parseConfig fills every provider with its defaults before validation.
  providers: z.object(
    Object.fromEntries(
      PROVIDER_NAMES.map((name) => [name, providerSchema]),
    ) as Record<ProviderName, typeof providerSchema>,
  ),
});

/** The validated configuration of a gateway. */
export interface GatewayConfig {
  /** Port to listen on (`PORT`, default 8080; 0 picks a free one). */
  port: number;
  /** Interface to listen on (`HOST`, default `0.0.0.0`). */
  hostname: string;
  /** Deno KV path or URL (`GATEWAY_KV_PATH`, default `./data/gateway.kv`). */
  kvPath: string;
  /**
   * `GATEWAY_STORE`: a `postgres://` URL puts every piece of state in that
   * PostgreSQL database instead of the KV at `kvPath`.
   */
  store?: string;
  /** Bearer token of the admin API (`GATEWAY_ADMIN_TOKEN`); unset, the admin API answers 403. */
  adminToken?: string;
  /** Largest request body accepted, bytes (`GATEWAY_MAX_BODY_BYTES`, default 32 MiB). */
  maxBodyBytes: number;
  /** Most bytes of request bodies one caller may have in flight in one process (`GATEWAY_MAX_CALLER_BODY_BYTES`, default 64 MiB); one body always gets in. */
  maxCallerBodyBytes: number;
  /**
   * The settlement journal's directory (`GATEWAY_JOURNAL_DIR`): each answered
   * call's charge is written there before it is committed, and charges a
   * dead process left there are charged by the next one (`credits/journal.ts`).
   * Default: `journal` beside a KV file, `./data/journal` on PostgreSQL;
   * none for a KV in memory. `off` turns it off.
   */
  journalDir?: string;
  /**
   * Shifts this process's own clock, ms (`GATEWAY_CLOCK_OFFSET_MS`, default
   * 0): for trying clock skew between hosts. On PostgreSQL time-based state
   * keeps to the database's clock whatever this says.
   */
  clockOffsetMs: number;
  /**
   * How long a call waits for an unreachable PostgreSQL store before it is
   * answered 503 with `retry-after`, ms (`GATEWAY_STORE_WAIT_MS`, default
   * 60 000). Calls its credit lease covers do not wait at all.
   */
  storeWaitMs: number;
  /** Time an upstream may take to answer, or between two stream events, ms (`GATEWAY_UPSTREAM_TIMEOUT_MS`). */
  upstreamTimeoutMs: number;
  /** Cool-down of a key after a 429 without `retry-after`, ms (`GATEWAY_KEY_COOLDOWN_MS`). */
  keyCooldownMs: number;
  /** How long a caller-key lookup is cached, ms (at most 1000). */
  callerCacheMs: number;
  /** How long trace records are kept, days. */
  traceRetentionDays: number;
  /** How long the daily usage aggregates are kept, days (`GATEWAY_USAGE_RETENTION_DAYS`, default 400; minute buckets 48 h, hour buckets 35 days). */
  usageRetentionDays: number;
  /** A second address serving only `GET /metrics`, without the admin token (`GATEWAY_METRICS_ADDR`, `host:port`; keep it off the internet). */
  metricsAddr?: string;
  /** Usage aggregates on or off (`GATEWAY_USAGE_AGGREGATES`, default `on`; off only to measure what they cost). */
  usageAggregates: "on" | "off";
  /** How long shutdown waits for in-flight calls, ms (`GATEWAY_DRAIN_TIMEOUT_MS`). */
  drainTimeoutMs: number;
  /**
   * Whether traces keep the request body and a non-streamed answer, keys
   * scrubbed, for the console's trace detail (`GATEWAY_TRACE_BODIES`, default
   * `off`: bodies hold callers' data).
   */
  traceBodies: "on" | "off";
  /** The most of each body a trace keeps, bytes (`GATEWAY_TRACE_BODY_BYTES`, 1–16384, default 4096). */
  traceBodyBytes: number;
  /** Each provider's settings. */
  providers: Record<ProviderName, ProviderConfig>;
}

/**
 * A configuration that failed validation; the message names the field.
 *
 * @example
 * ```ts
 * import { ConfigError, parseConfig } from "./config.ts";
 *
 * try {
 *   parseConfig({ env: { PORT: "eighty" } });
 * } catch (error) {
 *   if (error instanceof ConfigError) console.error(error.message); // one line naming "port"
 * }
 * ```
 */
export class ConfigError extends Error {
  /** Builds the error from a one-line message. */
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** Where configuration values may come from. */
export interface ConfigSources {
  /** Environment variables (usually `Deno.env.toObject()`). */
  env?: Record<string, string | undefined>;
  /** A parsed JSON config file, in the shape of {@linkcode GatewayConfig}. */
  file?: unknown;
}

/**
 * Builds and validates the configuration. Environment variables override the
 * file; provider keys come from `P_API_KEYS` (comma-separated) or `P_API_KEY`.
 *
 * @param sources The environment and the parsed config file.
 * @returns The validated configuration.
 * @throws {ConfigError} naming the first invalid field.
 *
 * @example Configuring from an environment
 * ```ts
 * import { parseConfig } from "./config.ts";
 * const config = parseConfig({ env: { PORT: "9000", OPENAI_API_KEYS: "sk-a,sk-b" } });
 * console.log(config.port, config.providers.openai.apiKeys.length); // 9000 2
 * ```
 */
export function parseConfig(sources: ConfigSources = {}): GatewayConfig {
  const env = sources.env ?? {};
  const file = sources.file ?? {};
  if (typeof file !== "object" || file === null || Array.isArray(file)) {
    throw new ConfigError(
      "Invalid config: the config file must hold a JSON object",
    );
  }
  const merged: Record<string, unknown> = structuredClone(file) as Record<
    string,
    unknown
  >;
  const set = (field: string, value: string | undefined) => {
    if (value !== undefined && value !== "") merged[field] = value;
  };
  set("port", env.PORT);
  set("hostname", env.HOST);
  set("kvPath", env.GATEWAY_KV_PATH);
  set("store", env.GATEWAY_STORE);
  set("adminToken", env.GATEWAY_ADMIN_TOKEN);
  set("maxBodyBytes", env.GATEWAY_MAX_BODY_BYTES);
  set("maxCallerBodyBytes", env.GATEWAY_MAX_CALLER_BODY_BYTES);
  set("journalDir", env.GATEWAY_JOURNAL_DIR);
  set("clockOffsetMs", env.GATEWAY_CLOCK_OFFSET_MS);
  set("storeWaitMs", env.GATEWAY_STORE_WAIT_MS);
  set("upstreamTimeoutMs", env.GATEWAY_UPSTREAM_TIMEOUT_MS);
  set("keyCooldownMs", env.GATEWAY_KEY_COOLDOWN_MS);
  set("drainTimeoutMs", env.GATEWAY_DRAIN_TIMEOUT_MS);
  set("usageRetentionDays", env.GATEWAY_USAGE_RETENTION_DAYS);
  set("usageAggregates", env.GATEWAY_USAGE_AGGREGATES);
  set("metricsAddr", env.GATEWAY_METRICS_ADDR);
  set("traceBodies", env.GATEWAY_TRACE_BODIES);
  set("traceBodyBytes", env.GATEWAY_TRACE_BODY_BYTES);

  const providers = {
    ...(merged.providers as
      | Record<string, Record<string, unknown>>
      | undefined),
  };
  for (const name of PROVIDER_NAMES) {
    const prefix = name.toUpperCase();
    const fromFile = providers[name] ?? {};
    const provider: Record<string, unknown> = {
      baseUrl: PROVIDERS[name].defaultBaseUrl,
      ...fromFile,
    };
    const variable = env[`${prefix}_API_KEYS`] !== undefined
      ? `${prefix}_API_KEYS`
      : `${prefix}_API_KEY`;
    const keys = env[variable];
    if (keys) {
      provider.apiKeys = keys.split(",").map((k) => k.trim()).filter((k) =>
        k !== ""
      );
      // A key goes upstream in a header: one that cannot (a pasted
      // placeholder with "…") would fail every call with a 502 instead.
      if ((provider.apiKeys as string[]).some((k) => !HEADER_SAFE.test(k))) {
        throw new ConfigError(
          `Invalid config: ${variable} holds a key that cannot be sent in an HTTP header (only visible ASCII characters are allowed); set the provider's real key`,
        );
      }
    }
    if (env[`${prefix}_BASE_URL`]) provider.baseUrl = env[`${prefix}_BASE_URL`];
    if (env[`${prefix}_RPM`]) provider.rpm = env[`${prefix}_RPM`];
    if (env[`${prefix}_TPM`]) provider.tpm = env[`${prefix}_TPM`];
    providers[name] = provider;
  }
  merged.providers = providers;

  const parsed = configSchema.safeParse(merged);
  if (!parsed.success) {
    const { param, message } = firstIssue(parsed.error);
    throw new ConfigError(`Invalid config: "${param || "(root)"}" ${message}`);
  }
  return parsed.data satisfies GatewayConfig;
}

/**
 * Reads `GATEWAY_CONFIG` (if set) and the environment, and validates them.
 *
 * @param env The environment; defaults to the process environment.
 * @returns The validated configuration.
 * @throws {ConfigError} for an unreadable file or an invalid field.
 *
 * @example
 * ```ts
 * import { loadConfig } from "./config.ts";
 *
 * const config = await loadConfig({ GATEWAY_KV_PATH: ":memory:", XAI_API_KEYS: "xai-1" });
 * config.providers.xai.baseUrl; // "https://api.x.ai/v1"
 * ```
 */
export async function loadConfig(
  env: Record<string, string | undefined> = Deno.env.toObject(),
): Promise<GatewayConfig> {
  const path = env.GATEWAY_CONFIG;
  if (!path) return parseConfig({ env });
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    throw new ConfigError(
      `Cannot read config file "${path}": ${(error as Error).message}`,
    );
  }
  let file: unknown;
  try {
    file = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(
      `Cannot parse config file "${path}": ${(error as Error).message}`,
    );
  }
  return parseConfig({ env, file });
}

/**
 * One line for each provider the gateway holds no key for: its models are
 * listed but every call to them is refused (503), until the operator sets
 * its keys.
 *
 * @param config The validated configuration.
 * @returns The warnings, in provider order; empty when every provider has a key.
 *
 * @example
 * ```ts
 * import { parseConfig, providerKeyWarnings } from "./config.ts";
 *
 * providerKeyWarnings(parseConfig({ env: { OPENAI_API_KEYS: "sk-1" } })).length; // 4
 * ```
 */
export function providerKeyWarnings(config: GatewayConfig): string[] {
  return PROVIDER_NAMES.filter((provider) =>
    config.providers[provider].apiKeys.length === 0
  ).map((provider) => {
    const variable = `${provider.toUpperCase()}_API_KEYS`;
    return `Warning: no ${provider} key configured: calls to ${provider} models get 503 until ${variable} is set`;
  });
}

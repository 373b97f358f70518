/**
 * The mcpkit inference gateway: one HTTP endpoint in front of Anthropic,
 * OpenAI, Google Gemini, xAI and OpenRouter. Callers use any OpenAI-,
 * Anthropic- or Gemini-convention client with the gateway's base URL and
 * their gateway key, and pay from one credit balance.
 *
 * Run it with `deno run -A gateway/main.ts`, or embed it:
 *
 * @example Embed the gateway
 * ```ts ignore
 * import { createGateway, parseConfig } from "@org/mcpkit/gateway";
 *
 * const config = parseConfig({ env: Deno.env.toObject() });
 * const kv = await Deno.openKv(":memory:");
 * Deno.serve({ port: config.port }, createGateway({ config, kv }).fetch);
 * ```
 *
 * The provider simulator that tests and the demo use has its own entry,
 * `@org/mcpkit/gateway/testing`, so this one carries only the gateway.
 *
 * @module
 */
export {
  createGateway,
  type GatewayApp,
  type GatewayOptions,
} from "./http/app.ts";
export { Catalog, DEFAULT_CATALOG } from "./state/catalog.ts";
export {
  ConfigError,
  type ConfigSources,
  type GatewayConfig,
  loadConfig,
  parseConfig,
  type ProviderConfig,
} from "./config.ts";
export {
  type RunningGateway,
  startGateway,
  type StartOptions,
} from "./http/server.ts";
export {
  type CallerAuthenticatorOptions,
  type CallerInfo,
  createCaller,
  createCallerAuthenticator,
  type NewCaller,
} from "./state/callers.ts";
export { type BillingOptions, createBilling } from "./state/credits/billing.ts";
export {
  type LedgerEntry,
  listLedger,
  readBalance,
  topUp,
} from "./state/credits/ledger.ts";
export {
  costMicros,
  MAX_BALANCE_MICROS,
  microsToUsd,
  usdToMicros,
} from "./state/credits/money.ts";
export { sweepExpiredLeases, type SweepResult } from "./state/credits/sweep.ts";
export {
  type JournalCharge,
  journalDirFor,
  type JournalPlace,
  replayJournals,
  type ReplayOptions,
  type ReplayResult,
  SettleJournal,
} from "./state/credits/journal.ts";
export { GatewayError } from "./errors.ts";
export {
  type KeyPoolOptions,
  MemoryKeyPool,
  providerKeyId,
  type ProviderKeys,
} from "./upstream/key_pool.ts";
export type { CallerLimits, SpendPeriod } from "./state/limits/limits.ts";
export type { RouteName } from "./conventions.ts";
export {
  PROVIDER_NAMES,
  type ProviderName,
  REGISTERED_PROVIDERS,
} from "./upstream/providers/mod.ts";
export type {
  CatalogEntry,
  ComputerUse,
  ModelFeatures,
  ModelLifecycle,
  ModelPricing,
  TokenPrices,
} from "./state/catalog.ts";
export type { Usage } from "./upstream/usage.ts";
export type { Caller, CallerAuthenticator } from "./state/callers.ts";
export type { Billing } from "./state/credits/billing.ts";
export type {
  Reservation,
  ReserveResult,
  Settlement,
} from "./state/credits/reservation.ts";
export type { CallAttempt, TraceRecord } from "./state/traces.ts";
export type {
  AcquireResult,
  KeyCooled,
  KeyHealth,
  KeyOutcome,
  KeyPool,
  ProviderKey,
} from "./upstream/key_pool.ts";

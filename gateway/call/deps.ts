/**
 * The contract between the HTTP layer and a call's stages: what a call
 * needs of the gateway ({@linkcode CallDeps}) and the parts of the HTTP
 * request it reads ({@linkcode CallRequest}). Every stage (`call.ts`,
 * `input.ts`, `count_tokens.ts`) imports them from here, so the stages
 * import one way.
 *
 * @module
 */
import type { Billing } from "../state/credits/billing.ts";
import type { Caller } from "../state/callers.ts";
import type { CatalogEntry } from "../state/catalog.ts";
import type { GatewayMetrics } from "../observe/metrics.ts";
import type { LimitCounters } from "../state/limits/counters.ts";
import type { Provider } from "../upstream/providers/provider.ts";
import type { ProviderName } from "../upstream/providers/mod.ts";
import type { RouteName } from "../conventions.ts";
import type { StatePins } from "../state/response_pins.ts";
import type { UpstreamSettings } from "../upstream/send.ts";

/** What a call needs from the rest of the gateway; each stage takes only its part (the sender its {@linkcode UpstreamSettings}). */
export interface CallDeps extends UpstreamSettings {
  /** Credits, ledger and trace storage. */
  billing: Billing;
  /** The callers' counted limits (requests and tokens per minute, spend per period). */
  limits: LimitCounters;
  /** The process's Prometheus metrics, when the app keeps them. */
  metrics?: GatewayMetrics;
  /** Model lookup. */
  model(id: string): CatalogEntry | undefined;
  /** The ids of the models a route serves, for the message of a model on the wrong route. */
  modelsOn(route: RouteName): string[];
  /** Provider implementations by name. */
  providers: Record<ProviderName, Provider<ProviderName>>;
  /** Structured log sink (errors, key revocations). */
  log(record: Record<string, unknown>): void;
  /** When set, the most bytes of a call's request and (non-streamed) answer its trace keeps, scrubbed; absent: none. */
  traceBodyBytes?: number;
  /** Which provider key holds each Responses conversation's state; absent: calls are not pinned. */
  statePins?: StatePins;
}

/** The parts of the HTTP request a call reads. */
export interface CallRequest {
  /** The route. */
  route: RouteName;
  /** The caller, authenticated from the headers before the body was read. */
  caller: Caller;
  /** Request headers. */
  headers: Headers;
  /** The raw body text (already size-limited). */
  bodyText: string;
  /** The input tokens the body's structure holds at least, counted as it was read (`hold_floor.ts`); the hold is never below it. */
  floorTokens?: number;
  /** Gemini's model and action come from the path. */
  pathModel?: string;
  /** Whether the path asked for a stream (Gemini `:streamGenerateContent`). */
  pathStream?: boolean;
  /** Query parameters. */
  query: Record<string, string>;
  /** Aborted when the caller goes away. */
  signal: AbortSignal;
  /** The request id. */
  requestId: string;
  /** The trace id. */
  traceId: string;
}

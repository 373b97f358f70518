/**
 * One inference call, in the order it happens:
 * (the caller is authenticated by middleware) parse → resolve the model → reserve credits → pick a key and
 * send upstream → translate the answer → settle → trace.
 * Each step is a named function; `handleCall` runs them in order. Reading the
 * body and resolving the model are in `call_input.ts`, sending upstream and
 * reading the answer in `upstream.ts`, the stream relay in `stream.ts`.
 *
 * @module
 */
import {
  buildExchange,
  fallbackCandidates,
  outputLimit,
  parseCall,
  type ParsedCall,
} from "./call_input.ts";
import { errorResponse, GatewayError, toGatewayError } from "./errors.ts";
import type { CallInput, Exchange, Provider } from "./providers/provider.ts";
import { NO_USAGE } from "./providers/provider.ts";
import type {
  Billing,
  CallAttempt,
  Caller,
  CatalogEntry,
  KeyPool,
  ProviderKey,
  ProviderName,
  Reservation,
  RouteName,
  TraceRecord,
  Usage,
} from "./types.ts";
import { costMicros, formatUsd, maxCostMicros } from "./credits/money.ts";
import { estimateInputTokens } from "./estimate.ts";
import type { GatewayMetrics } from "./metrics.ts";
import type { LimitCounters, LimitTicket } from "./limits/counters.ts";
import { checkStaticLimits } from "./limits/limits.ts";
import { type Estimated, relayStream } from "./stream.ts";
import { recordSpan } from "./tracing.ts";
import {
  readAnswer,
  sendUpstream,
  unreadableUsage,
  type Upstream,
  upstreamFailure,
} from "./upstream.ts";
import { UnreadableUsageError } from "./usage.ts";

/** What a call needs from the rest of the gateway. */
export interface CallDeps {
  /** Credits, ledger and trace storage. */
  billing: Billing;
  /** The callers' counted limits (requests and tokens per minute, spend per period). */
  limits: LimitCounters;
  /** The process's Prometheus metrics, when the app keeps them. */
  metrics?: GatewayMetrics;
  /** Provider keys. */
  keyPool: KeyPool;
  /** Model lookup. */
  model(id: string): CatalogEntry | undefined;
  /** The ids of the models a route serves, for the message of a model on the wrong route. */
  modelsOn(route: RouteName): string[];
  /** Provider implementations by name. */
  providers: Record<ProviderName, Provider>;
  /** Upstream base URL of each provider. */
  baseUrls: Record<ProviderName, string>;
  /** Time allowed for an upstream to answer, and between two stream events, ms. */
  upstreamTimeoutMs: number;
  /** Cool-down of a key after a 429 without `retry-after`, ms (the pool's default). */
  keyCooldownMs: number;
  /** Structured log sink (errors, key revocations). */
  log(record: Record<string, unknown>): void;
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

/** Running record of a call, turned into its trace at the end. */
class CallRecord {
  readonly started = Date.now();
  entry?: CatalogEntry;
  key?: ProviderKey;
  stream = false;
  firstTokenAt?: number;
  /** Figures of a stream's usage that were estimated, not reported. */
  estimated: Estimated = [];
  /** Every candidate tried, when the call had more than one. */
  attempts: CallAttempt[] = [];
  /** The call's share of its key's counted limits, settled with the credits. */
  limitTicket?: LimitTicket;

  constructor(readonly request: CallRequest) {}

  trace(
    status: number,
    usage: Usage,
    cost: number,
    error?: string,
  ): TraceRecord {
    return {
      requestId: this.request.requestId,
      traceId: this.request.traceId,
      callerId: this.request.caller.id,
      model: this.entry?.id,
      route: this.request.route,
      provider: this.entry?.provider,
      providerKeyId: this.key?.keyId,
      status,
      stream: this.stream,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      cachedTokens: usage.cachedInputTokens,
      costMicros: cost,
      latencyMs: Date.now() - this.started,
      ttftMs: this.firstTokenAt === undefined
        ? undefined
        : this.firstTokenAt - this.started,
      error,
      ...(this.estimated.length > 0 ? { estimated: this.estimated } : {}),
      ...(this.attempts.length > 0 ? { attempts: this.attempts } : {}),
      time: this.started,
    };
  }
}

/**
 * Runs one inference call and returns the response to send.
 *
 * @param deps The gateway's stores, key pool, catalog and providers.
 * @param request The call's HTTP request.
 * @returns The response: JSON, an SSE stream, or an error in the route's convention.
 */
export async function handleCall(
  deps: CallDeps,
  request: CallRequest,
): Promise<Response> {
  const record = new CallRecord(request);
  let reservation: Reservation | undefined;
  try {
    const parsed = parseCall(request);
    record.stream = parsed.stream;
    checkStaticLimits(request.caller.limits, parsed.model, Date.now());
    const candidates = fallbackCandidates(deps, request.route, parsed)
      .filter((entry) =>
        request.caller.limits?.models?.includes(entry.id) ?? true
      );
    record.entry = candidates[0];
    const inputTokens = estimateInputTokens(parsed.body);
    // One hold that covers whichever candidate serves the call.
    reservation = await reserve(
      deps.billing,
      request.caller,
      candidates,
      inputTokens,
      parsed.maxOutputTokens,
    );
    // The key's counted limits take the call's share after the credits, so
    // a refusal by either releases the other and forwards nothing.
    record.limitTicket = await deps.limits.reserve(request.caller, {
      tokens: inputTokens +
        Math.max(
          ...candidates.map((entry) =>
            outputLimit(entry, parsed.maxOutputTokens)
          ),
        ),
      micros: reservation.amountMicros,
    });
    const { call, provider, exchange, upstream } = await sendToFirstServing(
      deps,
      record,
      candidates,
      parsed,
      inputTokens,
    );
    if (call.stream) {
      const heldReservation = reservation;
      reservation = undefined; // the stream settles it when it ends
      upstream.clearTimeout();
      return servedBy(
        record.entry,
        relayStream({
          route: request.route,
          exchange,
          upstream,
          idleTimeoutMs: deps.upstreamTimeoutMs,
          inputEstimate: inputTokens,
          onFirstEvent: () => record.firstTokenAt ??= Date.now(),
          failure: (thrown) =>
            thrown instanceof GatewayError
              ? thrown
              : thrown instanceof UnreadableUsageError
              ? unreadableUsage(thrown)
              : upstreamFailure(provider.name, thrown, upstream.signal),
          settle: (usage, estimated, status, error) =>
            settleStream(
              deps,
              record,
              heldReservation,
              upstream.key,
              { usage, estimated, status, error },
            ),
        }),
      );
    }
    const { body, usage, text } = await readAnswer(deps, exchange, upstream);
    deps.keyPool.recordUsage(
      upstream.key,
      usage.inputTokens + usage.outputTokens,
    );
    const cost = costMicros(usage, record.entry.pricing);
    const held = reservation;
    reservation = undefined;
    const { availableMicros } = settleBehind(deps, record, held, usage, cost);
    return servedBy(
      record.entry,
      // A body the exchange passed through untouched goes out as it came in,
      // not serialised again.
      new Response(body === undefined ? text : JSON.stringify(body), {
        headers: {
          "content-type": "application/json",
          "x-gateway-cost": formatUsd(cost),
          "x-gateway-credits-remaining": formatUsd(availableMicros),
        },
      }),
    );
  } catch (thrown) {
    const error = toGatewayError(thrown, request.requestId);
    if (error.status >= 500) {
      deps.log({
        level: "error",
        requestId: request.requestId,
        message: error.message,
      });
    }
    if (reservation) {
      await settle(
        deps,
        record,
        reservation,
        NO_USAGE,
        0,
        error.status,
        error.message,
      );
    } else {
      await traceRejected(deps, record, error);
    }
    return errorResponse(request.route, error);
  }
}

async function reserve(
  billing: Billing,
  caller: Caller,
  candidates: readonly CatalogEntry[],
  inputTokens: number,
  callerMaxOutput: number | undefined,
): Promise<Reservation> {
  const amount = Math.max(
    ...candidates.map((entry) =>
      maxCostMicros(
        entry.pricing,
        inputTokens,
        outputLimit(entry, callerMaxOutput),
      )
    ),
  );
  const result = await billing.reserve(caller.id, amount);
  if (!result.ok) {
    throw new GatewayError(
      402,
      `Insufficient credits: this call may cost up to $${
        formatUsd(amount)
      } and $${
        formatUsd(Math.max(0, result.availableMicros))
      } is available; lower max_tokens or add credits`,
    );
  }
  return result.reservation;
}

/** Failures another provider may not share: no free key, the provider down, slow or unreachable. */
function worthFallingBack(error: GatewayError): boolean {
  return error.status === 429 || error.status === 502 ||
    error.status === 503 || error.status === 504;
}

/**
 * Sends the call to the first candidate that serves it. A candidate whose
 * provider has no free key, fails, times out or cannot be reached gives way
 * to the next while nothing has reached the caller; every attempt goes into
 * the trace.
 */
async function sendToFirstServing(
  deps: CallDeps,
  record: CallRecord,
  candidates: readonly CatalogEntry[],
  parsed: ParsedCall,
  inputTokens: number,
): Promise<
  {
    call: CallInput;
    provider: Provider;
    exchange: Exchange;
    upstream: Upstream;
  }
> {
  // The list is the gateway's to follow; providers never see it.
  const { models: _models, ...body } = parsed.body;
  for (const [index, entry] of candidates.entries()) {
    record.entry = entry;
    const call: CallInput = {
      route: record.request.route,
      entry,
      body,
      stream: parsed.stream,
      maxOutputTokens: outputLimit(entry, parsed.maxOutputTokens),
      query: record.request.query,
      headers: record.request.headers,
    };
    const provider = deps.providers[entry.provider];
    const exchange = buildExchange(provider, call);
    try {
      const upstream = await sendUpstream(
        deps,
        record,
        provider,
        exchange,
        inputTokens + call.maxOutputTokens,
      );
      if (candidates.length > 1) {
        record.attempts.push({
          model: entry.id,
          provider: entry.provider,
          status: 200,
        });
      }
      return { call, provider, exchange, upstream };
    } catch (thrown) {
      const error = toGatewayError(thrown, record.request.requestId);
      if (candidates.length > 1) {
        record.attempts.push({
          model: entry.id,
          provider: entry.provider,
          status: error.status,
          error: error.message,
        });
      }
      if (!worthFallingBack(error) || index === candidates.length - 1) {
        throw error;
      }
    }
  }
  throw new Error("unreachable: candidates is never empty");
}

/** The response, marked with the model and provider that served it. */
function servedBy(entry: CatalogEntry, response: Response): Response {
  response.headers.set("x-gateway-model", entry.id);
  response.headers.set("x-gateway-provider", entry.provider);
  return response;
}

/** Settles an ended stream; a failure is logged, never thrown into the relay. */
async function settleStream(
  deps: CallDeps,
  record: CallRecord,
  reservation: Reservation,
  key: ProviderKey,
  ended: { usage: Usage; estimated: Estimated; status: number; error?: string },
): Promise<void> {
  const { usage, estimated, status, error } = ended;
  deps.keyPool.recordUsage(key, usage.inputTokens + usage.outputTokens);
  record.estimated = estimated;
  try {
    await settle(
      deps,
      record,
      reservation,
      usage,
      costMicros(usage, record.entry!.pricing),
      status,
      error,
    );
  } catch (thrown) {
    deps.log({
      level: "error",
      requestId: record.request.requestId,
      message: `Settling a stream failed: ${thrown}`,
    });
  }
}

async function settle(
  deps: CallDeps,
  record: CallRecord,
  reservation: Reservation,
  usage: Usage,
  cost: number,
  status: number,
  error?: string,
): Promise<{ availableMicros: number }> {
  settleLimits(deps, record, usage, cost);
  const trace = record.trace(status, usage, cost, error);
  const result = await deps.billing.settle({
    reservation,
    costMicros: cost,
    usage,
    trace,
  });
  recordSpan(trace);
  deps.metrics?.observe(trace);
  return result;
}

/**
 * Settles a finished non-streamed call without waiting for the commit (the
 * caller already has its answer; see docs/decisions.md), returning the
 * balance as it will be once committed, for the response headers.
 */
function settleBehind(
  deps: CallDeps,
  record: CallRecord,
  reservation: Reservation,
  usage: Usage,
  cost: number,
): { availableMicros: number } {
  settleLimits(deps, record, usage, cost);
  const trace = record.trace(200, usage, cost);
  const result = deps.billing.settleSoon({
    reservation,
    costMicros: cost,
    usage,
    trace,
  });
  recordSpan(trace);
  deps.metrics?.observe(trace);
  return result;
}

/** Replaces the call's counted tokens and spend by what it used. */
function settleLimits(
  deps: CallDeps,
  record: CallRecord,
  usage: Usage,
  cost: number,
): void {
  if (!record.limitTicket) return;
  deps.limits.settle(record.limitTicket, {
    tokens: usage.inputTokens + usage.outputTokens,
    micros: cost,
  });
  record.limitTicket = undefined;
}

async function traceRejected(
  deps: CallDeps,
  record: CallRecord,
  error: GatewayError,
): Promise<void> {
  const trace = record.trace(error.status, NO_USAGE, 0, error.message);
  recordSpan(trace);
  deps.metrics?.observe(trace);
  try {
    await deps.billing.recordTrace(trace);
  } catch (thrown) {
    deps.log({
      level: "error",
      requestId: record.request.requestId,
      message: `Storing a trace failed: ${thrown}`,
    });
  }
}

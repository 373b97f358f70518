/**
 * One inference call, in the order it happens:
 * (the caller is authenticated by middleware) parse → resolve the model → reserve credits → pick a key and
 * send upstream → translate the answer → settle → trace.
 * Each step is a function below; `handleCall` runs them in order.
 *
 * @module
 */
import { deadlines } from "./_deadlines.ts";
import { z } from "zod";
import { firstIssue } from "./_zod.ts";
import { errorResponse, GatewayError, toGatewayError } from "./errors.ts";
import type { CallInput, Exchange, Provider } from "./providers/provider.ts";
import { NO_USAGE, parseJson } from "./providers/provider.ts";
import { chatRequestSchema, TranslationError } from "./translate/chat_types.ts";
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

const positiveInt = z.number().int().positive();
// One schema per route; the chat route's is the translators' own.
const routeSchemas = {
  chat: chatRequestSchema,
  messages: z.looseObject({
    model: z.string().min(1),
    messages: z.array(z.looseObject({ role: z.string() })).min(1),
    max_tokens: positiveInt,
    stream: z.boolean().nullish(),
  }),
  responses: z.looseObject({
    model: z.string().min(1),
    input: z.union([z.string(), z.array(z.unknown())]).optional(),
    stream: z.boolean().nullish(),
    max_output_tokens: positiveInt.nullish(),
  }),
  gemini: z.looseObject({
    contents: z.array(z.looseObject({})).min(1),
    generationConfig: z.looseObject({ maxOutputTokens: positiveInt.nullish() })
      .nullish(),
  }),
};

interface ParsedCall {
  model: string;
  body: Record<string, unknown>;
  stream: boolean;
  maxOutputTokens?: number;
}

/**
 * A request body that must be one JSON object.
 *
 * @param text The body.
 * @returns The object.
 * @throws {GatewayError} A 400 for anything else.
 */
export function jsonObject(text: string): Record<string, unknown> {
  const json = parseJson(text);
  if (json === undefined) {
    throw new GatewayError(400, "Request body is not valid JSON");
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new GatewayError(400, "Request body must be a JSON object");
  }
  return json as Record<string, unknown>;
}

function parseCall(request: CallRequest): ParsedCall {
  const json = jsonObject(request.bodyText);
  const parsed = routeSchemas[request.route].safeParse(json);
  if (!parsed.success) {
    const { param, message } = firstIssue(parsed.error);
    throw new GatewayError(400, `Invalid "${param || "body"}": ${message}`, {
      code: "invalid_request",
      param: param || null,
    });
  }
  const body = parsed.data as Record<string, unknown>;
  switch (request.route) {
    case "gemini": {
      const config = body.generationConfig as
        | { maxOutputTokens?: number }
        | undefined;
      return {
        model: request.pathModel ?? "",
        body,
        stream: request.pathStream === true,
        maxOutputTokens: config?.maxOutputTokens ?? undefined,
      };
    }
    case "chat":
      return {
        model: body.model as string,
        body,
        stream: body.stream === true,
        maxOutputTokens:
          (body.max_completion_tokens ?? body.max_tokens ?? undefined) as
            | number
            | undefined,
      };
    case "messages":
      return {
        model: body.model as string,
        body,
        stream: body.stream === true,
        maxOutputTokens: body.max_tokens as number,
      };
    case "responses":
      return {
        model: body.model as string,
        body,
        stream: body.stream === true,
        maxOutputTokens: (body.max_output_tokens ?? undefined) as
          | number
          | undefined,
      };
  }
}

/**
 * The catalog entry of a model a caller asked for on `route`.
 *
 * @param deps The catalog lookups.
 * @param route The route.
 * @param id The model id.
 * @returns The entry.
 * @throws {GatewayError} 404 for an unknown model, 400 for one not on the route.
 */
export function resolveModel(
  deps: Pick<CallDeps, "model" | "modelsOn">,
  route: RouteName,
  id: string,
): CatalogEntry {
  const entry = deps.model(id);
  if (!entry) {
    throw new GatewayError(
      404,
      `Model "${id}" does not exist; GET /models lists the models`,
      {
        code: "model_not_found",
        param: "model",
      },
    );
  }
  if (!entry.routes.includes(route)) {
    const native = deps.modelsOn(route);
    throw new GatewayError(
      400,
      `Model "${id}" is not available on the ${route} route; it is available on: ${
        entry.routes.join(", ")
      }. The ${route} route serves ${
        native.length > 0 ? native.join(", ") : "no model"
      }${
        entry.routes.includes("chat")
          ? `; reach "${id}" through POST /v1/chat/completions`
          : ""
      }`,
      { code: "model_not_on_route", param: "model" },
    );
  }
  return entry;
}

function buildExchange(provider: Provider, call: CallInput): Exchange {
  try {
    return provider.exchange(call);
  } catch (error) {
    if (error instanceof TranslationError) {
      throw new GatewayError(400, error.message, {
        code: "invalid_request",
        param: error.param,
      });
    }
    throw error;
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

/** The most output tokens a call may produce on `entry`: the caller's limit, capped by the model's. */
function outputLimit(
  entry: CatalogEntry,
  callerMaxOutput: number | undefined,
): number {
  return Math.min(callerMaxOutput ?? Infinity, entry.maxOutputTokens);
}

/**
 * The models a call may be served by, in order: the model asked for, its
 * catalog alternates, then the chat body's `models` list (OpenRouter's
 * convention), each resolved as the model is and kept only on this route.
 */
function fallbackCandidates(
  deps: Pick<CallDeps, "model" | "modelsOn">,
  route: RouteName,
  parsed: ParsedCall,
): CatalogEntry[] {
  const primary = resolveModel(deps, route, parsed.model);
  const listed = parsed.body.models;
  if (
    listed !== undefined &&
    (!Array.isArray(listed) || listed.length > MAX_FALLBACK_MODELS ||
      !listed.every((id) => typeof id === "string"))
  ) {
    throw new GatewayError(
      400,
      `Invalid "models": expected at most ${MAX_FALLBACK_MODELS} model ids`,
      { param: "models" },
    );
  }
  const ids = [
    ...(primary.alternates ?? []),
    ...((listed as string[] | undefined) ?? []),
  ];
  const candidates = [primary];
  for (const id of ids) {
    const entry = deps.model(id);
    const listedByCaller = (listed as string[] | undefined)?.includes(id);
    // The caller's own list is checked as `model` is; a catalog alternate
    // that is missing or off this route is skipped.
    if (listedByCaller) candidates.push(resolveModel(deps, route, id));
    else if (entry?.routes.includes(route)) candidates.push(entry);
  }
  return [...new Set(candidates)];
}

/** How many more keys of one provider a call tries after a 5xx or a connection failure. */
const TRANSIENT_RETRIES = 1;

/** The most models a chat body's `models` list may name. */
const MAX_FALLBACK_MODELS = 8;

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

interface Upstream {
  response: Response;
  key: ProviderKey;
  /** Aborts the upstream request (a timeout, the caller gone before the answer, or the relay). */
  abort: AbortController;
  /** `abort`'s signal. */
  signal: AbortSignal;
  /** Clears the answer timeout (the stream relay keeps its own idle timeout). */
  clearTimeout(): void;
}

/**
 * Sends the exchange with a key from the pool. A 429 cools the key down, and a
 * refusal the pool blames on the key (a 401, or 403s across requests) cools it
 * for longer; either way the next key is tried, since nothing has reached the
 * caller yet. A 403 about the request fails the call.
 */
async function sendUpstream(
  deps: CallDeps,
  record: CallRecord,
  provider: Provider,
  exchange: Exchange,
  estimatedTokens: number,
): Promise<Upstream> {
  const providerName = provider.name;
  const tried = new Set<string>();
  const body = JSON.stringify(exchange.body);
  const url = deps.baseUrls[providerName] + exchange.path;
  let lastRefusal: GatewayError | undefined;
  // The earliest a key that answered 429 during this call frees up, ms.
  let soonestCooledMs = Infinity;
  let rateLimitMessage = "";
  // A 5xx or a connection failure on one key is tried on another key of the
  // provider, at most this many times, before the call gives up on it.
  let transientRetries = 0;
  let lastTransient: GatewayError | undefined;
  for (;;) {
    const acquired = deps.keyPool.acquire(providerName, estimatedTokens, tried);
    if (!acquired.ok) {
      if (Number.isFinite(soonestCooledMs)) {
        // "Retry after" is when any key frees up: the soonest of the keys
        // refused here and of those the pool already held back.
        const waitMs = acquired.retryAfterMs < 0
          ? soonestCooledMs
          : Math.min(soonestCooledMs, acquired.retryAfterMs);
        throw new GatewayError(429, rateLimitMessage, {
          code: "upstream_rate_limited",
          retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
        });
      }
      if (lastTransient) throw lastTransient;
      if (lastRefusal) throw lastRefusal;
      if (acquired.retryAfterMs < 0) {
        throw new GatewayError(
          503,
          `No ${providerName} key is available to the gateway`,
          { code: "no_provider_key" },
        );
      }
      throw new GatewayError(
        429,
        `Every ${providerName} key is at its rate limit; retry later`,
        {
          retryAfterSeconds: Math.max(
            1,
            Math.ceil(acquired.retryAfterMs / 1000),
          ),
        },
      );
    }
    const key = acquired.key;
    record.key = key;
    tried.add(key.keyId);
    // Until the answer is in, a timeout or the caller going away aborts the
    // upstream request. Neither is AbortSignal.timeout/any: both must stop
    // once the answer is in (a stream then has an idle timeout per event,
    // and a caller who leaves a stream is handled by its relay, which may
    // read on for the usage event first), and those cannot be detached. The
    // timeout is a deadline on the process's one timer, not a timer per call.
    const abort = new AbortController();
    const signal = abort.signal;
    const onCallerGone = () =>
      abort.abort(new DOMException("Caller went away", "AbortError"));
    record.request.signal.addEventListener("abort", onCallerGone, {
      once: true,
    });
    const answer = {
      deadline: Infinity,
      expire: () =>
        abort.abort(new DOMException("Upstream timed out", "TimeoutError")),
    };
    deadlines.watch(answer, deps.upstreamTimeoutMs);
    const clear = () => {
      deadlines.forget(answer);
      record.request.signal.removeEventListener("abort", onCallerGone);
    };
    let response: Response;
    try {
      response = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...exchange.headers,
          ...provider.headers(key.secret),
        },
        body,
        signal,
      });
    } catch (error) {
      clear();
      deps.keyPool.recordUsage(key, 0);
      const failure = upstreamFailure(providerName, error, signal);
      // Unreachable from one key may be a passing fault: one more key, then
      // the next candidate. A timeout is not retried here (it already took
      // the whole timeout), nor a caller who left.
      if (failure.status === 502 && transientRetries++ < TRANSIENT_RETRIES) {
        lastTransient = failure;
        continue;
      }
      throw failure;
    }
    if (response.ok) {
      deps.keyPool.answered(key);
      return { response, key, abort, signal, clearTimeout: clear };
    }
    const text = await response.text().catch(() => "");
    clear();
    // Providers may quote the key they were sent; it never goes further.
    const message = provider.errorMessage(text).replaceAll(
      key.secret,
      `[key ${key.keyId}]`,
    );
    if (response.status === 429) {
      const cooldownMs = retryAfterMs(response.headers);
      deps.keyPool.rateLimited(key, cooldownMs);
      soonestCooledMs = Math.min(
        soonestCooledMs,
        cooldownMs ?? deps.keyCooldownMs,
      );
      rateLimitMessage = message;
      continue;
    }
    if (response.status === 401 || response.status === 403) {
      // A refusal about the request (moderation, a model or beta the account
      // lacks) fails this call and leaves the key alone; one about the key
      // cools it down, and the call tries another.
      const keyBlamed = deps.keyPool.refused(
        key,
        response.status,
        record.request.requestId,
      );
      if (!keyBlamed) {
        throw new GatewayError(response.status, message, {
          code: "upstream_refused",
        });
      }
      lastRefusal = new GatewayError(
        502,
        `The ${providerName} provider refused the gateway's key`,
        {
          code: "upstream_auth",
        },
      );
      continue;
    }
    deps.keyPool.recordUsage(key, 0);
    if (response.status >= 500) {
      const failure = new GatewayError(
        502,
        `The ${providerName} provider failed: ${message}`,
        { code: "upstream_error" },
      );
      if (transientRetries++ < TRANSIENT_RETRIES) {
        lastTransient = failure;
        continue;
      }
      throw failure;
    }
    throw new GatewayError(response.status, message, {
      code: "upstream_error",
    });
  }
}

function retryAfterMs(headers: Headers): number | undefined {
  const value = headers.get("retry-after");
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function upstreamFailure(
  provider: ProviderName,
  error: unknown,
  signal: AbortSignal,
): GatewayError {
  if (
    signal.aborted && (signal.reason as DOMException)?.name === "TimeoutError"
  ) {
    return new GatewayError(
      504,
      `The ${provider} provider did not answer in time`,
      { code: "upstream_timeout" },
    );
  }
  if (signal.aborted) {
    return new GatewayError(499, "The caller closed the request", {
      code: "client_closed",
    });
  }
  return new GatewayError(
    502,
    `The ${provider} provider could not be reached: ${
      (error as Error).message
    }`,
    {
      code: "upstream_unreachable",
    },
  );
}

/** A usage count the gateway cannot read: the call failed upstream (502), and its hold goes back. */
function unreadableUsage(error: UnreadableUsageError): GatewayError {
  return new GatewayError(502, error.message, { code: "upstream_garbage" });
}

async function readAnswer(
  deps: CallDeps,
  exchange: Exchange,
  upstream: Upstream,
): Promise<{ body?: unknown; usage: Usage; text: string }> {
  let text: string;
  try {
    text = await upstream.response.text();
  } catch (error) {
    deps.keyPool.recordUsage(upstream.key, 0);
    throw upstreamFailure(
      upstream.key.provider,
      error,
      upstream.signal,
    );
  } finally {
    upstream.clearTimeout();
  }
  const json = parseJson(text);
  if (json === undefined || typeof json !== "object" || json === null) {
    deps.keyPool.recordUsage(upstream.key, 0);
    throw new GatewayError(
      502,
      `The ${upstream.key.provider} provider answered with a body that is not JSON`,
      {
        code: "upstream_garbage",
      },
    );
  }
  try {
    const { body, usage } = exchange.response(json);
    return { body: body === json ? undefined : body, usage, text };
  } catch (error) {
    if (error instanceof UnreadableUsageError) throw unreadableUsage(error);
    throw new GatewayError(
      502,
      `The ${upstream.key.provider} provider answered in an unexpected shape`,
      {
        code: "upstream_garbage",
      },
    );
  }
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

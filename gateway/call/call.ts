/**
 * One inference call, in the order it happens:
 * (the caller is authenticated by middleware) parse → resolve the model →
 * reserve credits → take the limits' share → pick a key and send upstream →
 * translate the answer → settle → trace.
 *
 * A call is one object, {@linkcode Call}, that owns what it takes: the
 * credit reservation, the limit ticket and the provider key serving it. It
 * gives each back exactly once, in one place ({@linkcode Call}'s close), on
 * every path: an answer, an upstream error, an answer in an unexpected
 * shape, a timeout, the caller gone, a throw. `handleCall` holds it with
 * `await using`, so whatever happens the call closes when the handler ends,
 * or, for a stream, when the relay's `ended` resolves with what the stream
 * used. Reading the body and resolving the model are in `input.ts`, the
 * credit hold in `hold.ts`, trying the candidates in turn in `fallback.ts`,
 * sending upstream and reading the answer in `../upstream/send.ts`, the
 * stream relay in `stream.ts`, the trace it leaves in `trace_record.ts`;
 * what the call needs of the gateway is `deps.ts`.
 *
 * @module
 */
import {
  fallbackCandidates,
  jsonObject,
  outputLimit,
  parseCall,
} from "./input.ts";
import { lifecycleHeaders } from "../state/catalog.ts";
import { errorResponse, GatewayError, toGatewayError } from "../errors.ts";
import { NO_USAGE } from "../upstream/providers/provider.ts";
import type { Reservation, Settlement } from "../state/credits/reservation.ts";
import type { CatalogEntry } from "../state/catalog.ts";
import type { CallAttempt, TraceRecord } from "../state/traces.ts";
import { traceOf } from "./trace_record.ts";
import { sendToFirstServing } from "./fallback.ts";
import type { Usage } from "../upstream/usage.ts";
import { formatUsd } from "../state/credits/money.ts";
import { estimateInputTokens, namesStoredContext } from "./estimate.ts";
import { heldCacheWrite, holdFor, reserveHold } from "./hold.ts";
import {
  type BillableFeatures,
  billableFeatures,
  unpricedError,
  unpricedOn,
} from "./billable.ts";
import { chargeMicros } from "./charge.ts";
import type { LimitTicket } from "../state/limits/counters.ts";
import { checkStaticLimits } from "../state/limits/limits.ts";
import { type Estimated, relayStream, type StreamEnd } from "./stream.ts";
import { recordSpan } from "../observe/tracing.ts";
import { readAnswer, type Upstream } from "../upstream/send.ts";
import type { CallDeps, CallRequest } from "./deps.ts";
import { type CallState, pinAnswer, pinningExchange } from "./state_pin.ts";

/** How a call ended: what it is charged, and what its trace says. */
interface Ending {
  /** The usage to charge. */
  usage: Usage;
  /** Its cost, micro-USD. */
  cost: number;
  /** The status the caller got. */
  status: number;
  /** The error the caller got, if any. */
  error?: string;
}

/** The ending of a call that failed before anything was used. */
function failedEnding(error: GatewayError): Ending {
  return {
    usage: NO_USAGE,
    cost: 0,
    status: error.status,
    error: error.message,
  };
}

/**
 * One call: what it took (a credit reservation, a limit ticket, a provider
 * key) and the record its trace is made from. Everything it took is given
 * back in {@linkcode Call.close}, which runs once: from the non-streamed
 * answer, from a stream's end, or from `[Symbol.asyncDispose]` for every
 * other path (a failure ends the call with its error; a throw nobody caught,
 * as a 500).
 */
class Call implements AsyncDisposable {
  readonly started = Date.now();
  entry?: CatalogEntry;
  stream = false;
  firstTokenAt?: number;
  /** Figures of a stream's usage that were estimated, not reported. */
  estimated: Estimated = [];
  /** Every candidate tried, when the call had more than one. */
  attempts: CallAttempt[] = [];
  /** The ids of the keys tried, in order. */
  readonly keysTried: string[] = [];
  #reservation?: Reservation;
  #ticket?: LimitTicket;
  /** The answer serving the call, with its key still lent. */
  #upstream?: Upstream;
  /** A Responses call's stored state and the key that holds it. */
  #state?: CallState;
  /** Set once a stream's relay owns the end of the call. */
  #relayed = false;
  #closed = false;
  #failure?: GatewayError;
  /** The answer's text, kept for the trace when bodies are traced. */
  #answerText?: string;
  /** What the call asks for beyond tokens, priced on the model that serves it. */
  #features: BillableFeatures = { webSearches: 0 };
  /** The input tokens the hold was estimated for, once the call is held. */
  #inputEstimate?: number;

  constructor(readonly deps: CallDeps, readonly request: CallRequest) {}

  /**
   * Runs the call to its response. A non-streamed answer closes the call
   * here; a stream closes it when it ends.
   */
  async run(): Promise<Response> {
    const { deps, request } = this;
    const large = request.bodyText.length >= LARGE_BODY_CHARS;
    const json = jsonObject(request.bodyText);
    if (large) await otherWorkFirst();
    const parsed = parseCall(request, json);
    if (large) await otherWorkFirst();
    this.stream = parsed.stream;
    // What no catalog prices is refused here, before any money moves.
    const features = billableFeatures(
      request.route,
      parsed.body,
      request.headers,
    );
    this.#features = features;
    // An allowlist names catalog ids: a model asked for by an alias
    // (`computer-use-preview` for `operator`) is checked as its model.
    checkStaticLimits(
      request.caller.limits,
      deps.model(parsed.model)?.id ?? parsed.model,
      Date.now(),
    );
    // The first candidate serves the id asked for, which the allowlist let
    // through (it is the successor of a retired model the operator reroutes).
    // It must price what the call asks for; an alternate that cannot is
    // skipped.
    const candidates = fallbackCandidates(deps, request.route, parsed)
      .filter((entry, index) => {
        const unpriced = unpricedOn(entry, features);
        if (index === 0 && unpriced) throw unpricedError(entry, unpriced);
        return index === 0 ||
          (!unpriced &&
            (request.caller.limits?.models?.includes(entry.id) ?? true));
      });
    this.entry = candidates[0];
    // What the caller is told about the end of the model it asked for.
    const notice = lifecycleHeaders(deps.model(parsed.model) ?? candidates[0]);
    const inputTokens = estimateInputTokens(parsed.body, candidates);
    this.#inputEstimate = inputTokens;
    if (large) await otherWorkFirst();
    // Never below what the body was held at while it arrived (a key JSON
    // repeats keeps only its last value, so the structure can count more).
    const heldInput = Math.max(inputTokens, request.floorTokens ?? 0);
    const outputTokens = parsed.choices * (parsed.predictedTokens + Math.max(
      ...candidates.map((entry) => outputLimit(entry, parsed.maxOutputTokens)),
    ));
    // One hold that covers whichever candidate serves the call.
    this.#reservation = await reserveHold(
      deps.billing,
      request.caller,
      holdFor(
        candidates,
        heldInput,
        parsed,
        features,
        heldCacheWrite(parsed.body),
        namesStoredContext(parsed.body),
      ),
    );
    // The caller's counted limits take the call's share after the credits,
    // so a refusal by either gives the other back and forwards nothing.
    this.#ticket = await deps.limits.reserve(request.caller, {
      tokens: heldInput + outputTokens,
      micros: this.#reservation.amountMicros,
    });
    if (large) await otherWorkFirst();
    const { exchange, upstream } = await sendToFirstServing(
      deps,
      request,
      { candidates, parsed, inputTokens },
      {
        attempts: this.attempts,
        keysTried: this.keysTried,
        trying: (entry) => this.entry = entry,
        continuing: (state) => this.#state = state,
      },
    );
    this.#upstream = upstream;
    const entry = this.entry;
    const state = this.#state;
    if (parsed.stream) {
      upstream.clearTimeout();
      const relay = relayStream({
        route: request.route,
        exchange: state
          ? pinningExchange(exchange, (stateId) => {
            void pinAnswer(
              deps,
              request,
              entry.provider,
              upstream.key.keyId,
              state,
              stateId,
            );
          })
          : exchange,
        upstream,
        idleTimeoutMs: deps.upstreamTimeoutMs,
        inputEstimate: inputTokens,
      });
      this.#relayed = true;
      relay.ended.then((end) => this.#streamEnded(end));
      return servedBy(entry, notice, relay.response);
    }
    const { body, usage, text, stateId } = await readAnswer(
      exchange,
      upstream,
    );
    // Written before the answer goes out: the caller may chain on it at once.
    if (state) {
      await pinAnswer(
        deps,
        request,
        entry.provider,
        upstream.key.keyId,
        state,
        stateId,
      );
    }
    // A body the exchange passed through untouched goes out as it came in,
    // not serialised again.
    const answer = body === undefined ? text : JSON.stringify(body);
    if (deps.traceBodyBytes) this.#answerText = answer;
    const cost = chargeMicros(usage, entry.pricing, this.#features.tier);
    // The charge commits behind the answer (see docs/decisions.md).
    const settlement = this.#giveBack({ usage, cost, status: 200 })
      ?.settlement;
    if (!settlement) {
      throw new Error("unreachable: an answered call holds a reservation");
    }
    const { availableMicros } = deps.billing.settleSoon(settlement);
    return servedBy(
      entry,
      notice,
      new Response(answer, {
        headers: {
          "content-type": "application/json",
          "x-gateway-cost": formatUsd(cost),
          "x-gateway-credits-remaining": formatUsd(availableMicros),
        },
      }),
    );
  }

  /**
   * Ends the call with what was thrown: logged when it is the gateway's or
   * the provider's fault, and the caller's response in its convention. The
   * call closes with it when the handler ends.
   */
  fail(thrown: unknown): Response {
    const error = toGatewayError(thrown, this.request.requestId);
    this.#failure = error;
    if (error.status >= 500) {
      this.deps.log({
        level: "error",
        requestId: this.request.requestId,
        // A bug's own message, not the caller's "internal error".
        message: thrown instanceof GatewayError
          ? error.message
          : String(thrown),
        ...(this.entry ? { model: this.entry.id } : {}),
      });
    }
    return errorResponse(this.request.route, error);
  }

  /** Closes the call unless a stream's relay owns its end: as failed, with what it was given back for. */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#relayed || this.#closed) return;
    const error = this.#failure ??
      toGatewayError(new Error("The call ended without an answer"));
    await this.close(this.#sentEnding(error) ?? failedEnding(error));
  }

  /**
   * The ending of a call that failed after its request went to the provider
   * without an answer read: the provider timed out, or the caller left while
   * it worked. The provider bills the prompt it read whether or not anyone
   * reads the answer, so the call is charged its hold's input estimate on
   * the model it was sent to (marked estimated in the trace); `undefined`
   * for any other failure.
   */
  #sentEnding(error: GatewayError): Ending | undefined {
    const entry = this.entry;
    if (
      !entry || this.#inputEstimate === undefined ||
      !SENT_WITHOUT_ANSWER.has(error.code)
    ) return undefined;
    const usage: Usage = {
      inputTokens: this.#inputEstimate,
      outputTokens: 0,
      cachedInputTokens: 0,
    };
    this.estimated = ["input"];
    return {
      usage,
      cost: chargeMicros(usage, entry.pricing, this.#features.tier),
      status: error.status,
      error: error.message,
    };
  }

  /**
   * Gives back what the call holds, once, and records it: the key to the
   * pool (with the tokens used), the limit ticket (settled to what was
   * used), the reservation (settled to the cost, the rest back to the
   * caller), then the trace. A call that held no reservation is traced alone.
   */
  async close(ending: Ending): Promise<void> {
    const closed = this.#giveBack(ending);
    if (!closed) return;
    if (closed.settlement) await this.deps.billing.settle(closed.settlement);
    else await this.deps.billing.storeUnreservedTrace(closed.trace);
  }

  /**
   * The one place a call gives back what it took, and the first time only:
   * `undefined` once closed. Returns the trace, and the reservation's
   * settlement for the caller to commit.
   */
  #giveBack(
    ending: Ending,
  ): { trace: TraceRecord; settlement?: Settlement } | undefined {
    if (this.#closed) return undefined;
    this.#closed = true;
    const { usage, cost } = ending;
    const tokens = usage.inputTokens + usage.outputTokens;
    if (this.#upstream) {
      // The provider took the key (it answered 2xx), whatever came after.
      this.deps.keyPool.release(this.#upstream.key, {
        kind: "answered",
        tokens,
      });
    }
    if (this.#ticket) {
      this.deps.limits.settle(this.#ticket, { tokens, micros: cost });
    }
    const trace = traceOf(this.deps, this.request, {
      ...ending,
      entry: this.entry,
      providerKeyId: this.#upstream?.key.keyId ?? this.keysTried.at(-1),
      stream: this.stream,
      started: this.started,
      firstTokenAt: this.firstTokenAt,
      estimated: this.estimated,
      attempts: this.attempts,
      answerText: this.#answerText,
    });
    recordSpan(trace);
    this.deps.metrics?.observe(trace);
    const reservation = this.#reservation;
    return reservation
      ? { trace, settlement: { reservation, costMicros: cost, usage, trace } }
      : { trace };
  }

  /** Closes a stream's call once the relay says it ended; a failure is logged, never thrown. */
  async #streamEnded(end: StreamEnd): Promise<void> {
    this.estimated = end.estimated;
    this.firstTokenAt = end.firstEventAt;
    let cost = 0;
    try {
      cost = chargeMicros(end.usage, this.entry!.pricing, this.#features.tier);
    } catch (thrown) {
      // The call still gives back what it holds; the log says why it was not charged.
      this.deps.log({
        level: "error",
        requestId: this.request.requestId,
        model: this.entry?.id,
        message: `Pricing a stream failed, so it is not charged: ${thrown}`,
      });
    }
    try {
      await this.close({
        usage: end.usage,
        cost,
        status: end.status,
        error: end.error,
      });
    } catch (thrown) {
      this.deps.log({
        level: "error",
        requestId: this.request.requestId,
        message: `Settling a stream failed: ${thrown}`,
      });
    }
  }
}

/**
 * A body at least this long (characters) lets the process's other work run
 * between the stages that walk it (parse, validate, estimate and hold,
 * build the provider's request), each of which holds the event loop for as long as the body takes: a 31
 * MiB body's stages took seconds in one piece, and every other call and
 * `/health` waited for all of them.
 */
const LARGE_BODY_CHARS = 256 * 1024;

/** Resolves once the event loop has run what was waiting (a timer, so I/O goes first). */
function otherWorkFirst(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
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
  await using call = new Call(deps, request);
  try {
    return await call.run();
  } catch (thrown) {
    return call.fail(thrown);
  }
}

/**
 * The codes of the failures of a request the provider was sent but whose
 * answer was not read (`upstreamFailure` in `../upstream/rules.ts`): a
 * timeout, or the caller gone.
 */
const SENT_WITHOUT_ANSWER = new Set(["upstream_timeout", "client_closed"]);

/** The response, marked with the model and provider that served it, and the end of the model asked for. */
function servedBy(
  entry: CatalogEntry,
  notice: Record<string, string>,
  response: Response,
): Response {
  response.headers.set("x-gateway-model", entry.id);
  response.headers.set("x-gateway-provider", entry.provider);
  for (const [name, value] of Object.entries(notice)) {
    response.headers.set(name, value);
  }
  return response;
}

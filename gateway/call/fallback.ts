/**
 * Sending a call to the first of its candidates that serves it: the model
 * asked for, then its alternates (the catalog's, or the body's `models`).
 * A candidate whose provider has no free key, fails, times out or cannot
 * be reached gives way to the next while nothing has reached the caller;
 * every attempt goes into the trace.
 *
 * @module
 */
import type { CatalogEntry } from "../state/catalog.ts";
import type { CallAttempt } from "../state/traces.ts";
import type { GatewayError } from "../errors.ts";
import { toGatewayError } from "../errors.ts";
import type { CallInput, Exchange } from "../upstream/providers/provider.ts";
import { sendUpstream, type Upstream } from "../upstream/send.ts";
import { buildExchange, outputLimit, type ParsedCall } from "./input.ts";
import { type CallState, callState } from "./state_pin.ts";
import { tracedError } from "./trace_record.ts";
import type { CallDeps, CallRequest } from "./deps.ts";

/** The call to send: its candidates, parsed body and input estimate. */
export interface FallbackCall {
  /** The models that may serve the call, the one asked for first. */
  candidates: readonly CatalogEntry[];
  /** The call's parsed body. */
  parsed: ParsedCall;
  /** The input tokens the call was held for. */
  inputTokens: number;
}

/** What the call records as it tries its candidates. */
export interface FallbackRecord {
  /** Every attempt, when there is more than one candidate (appended to). */
  attempts: CallAttempt[];
  /** The ids of the keys tried, in order (appended to by the sender). */
  keysTried: string[];
  /** Told of each candidate as it is tried, before anything is sent. */
  trying(entry: CatalogEntry): void;
  /** Told of the stored Responses state a candidate continues, if any. */
  continuing(state: CallState | undefined): void;
}

/**
 * Sends the call to the first candidate that serves it. A call continuing
 * stored state is served by the key that holds it or not at all, so it
 * never falls back.
 *
 * @param deps The gateway's providers, key pool and timeouts.
 * @param request The call's request.
 * @param call The candidates, the body and the input estimate.
 * @param record Where the attempts, the keys and the candidate tried go.
 * @returns The exchange and the answer of the candidate that served it (its key lent to the call).
 * @throws {GatewayError} The last candidate's failure, or the first one not worth falling back from.
 */
export async function sendToFirstServing(
  deps: CallDeps,
  request: CallRequest,
  call: FallbackCall,
  record: FallbackRecord,
): Promise<{ exchange: Exchange; upstream: Upstream }> {
  const { candidates, parsed, inputTokens } = call;
  // The list is the gateway's to follow; providers never see it.
  const { models: _models, ...body } = parsed.body;
  for (const [index, entry] of candidates.entries()) {
    record.trying(entry);
    const input: CallInput = {
      route: request.route,
      entry,
      body,
      stream: parsed.stream,
      maxOutputTokens: outputLimit(entry, parsed.maxOutputTokens),
      query: request.query,
      headers: request.headers,
    };
    const provider = deps.providers[entry.provider];
    const exchange = buildExchange(provider, input);
    const state = await callState(deps, request, entry.provider, body);
    record.continuing(state);
    const pinnedKeyId = state?.pinnedKeyId;
    try {
      const upstream = await sendUpstream(deps, {
        provider,
        path: exchange.path,
        body: exchange.body,
        headers: exchange.headers,
        estimatedTokens: inputTokens + parsed.choices * input.maxOutputTokens,
        signal: request.signal,
        requestId: request.requestId,
        callerId: request.caller.id,
        keysTried: record.keysTried,
        // Continued state is served by the key that holds it or not at
        // all; the wait for it is bounded by the upstream's answer time.
        ...(pinnedKeyId !== undefined &&
          { pinnedKeyId, pinWaitMs: deps.upstreamTimeoutMs }),
      });
      if (candidates.length > 1) {
        record.attempts.push({
          model: entry.id,
          provider: entry.provider,
          status: 200,
        });
      }
      return { exchange, upstream };
    } catch (thrown) {
      const error = toGatewayError(thrown, request.requestId);
      if (candidates.length > 1) {
        record.attempts.push({
          model: entry.id,
          provider: entry.provider,
          status: error.status,
          error: tracedError(error.message),
        });
      }
      if (
        !worthFallingBack(error) || index === candidates.length - 1 ||
        pinnedKeyId !== undefined
      ) {
        throw error;
      }
    }
  }
  throw new Error("unreachable: candidates is never empty");
}

/** Failures another provider may not share: no free key, the provider down, slow or unreachable. */
function worthFallingBack(error: GatewayError): boolean {
  return error.status === 429 || error.status === 502 ||
    error.status === 503 || error.status === 504;
}

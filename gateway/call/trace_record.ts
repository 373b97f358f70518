/**
 * The trace record a call leaves when it closes: who called, which model
 * and key served it, what it used and cost, how long it took, what it
 * tried, and (when the gateway keeps them) the bodies.
 *
 * @module
 */
import type { CatalogEntry } from "../state/catalog.ts";
import type { CallAttempt, TraceBodies, TraceRecord } from "../state/traces.ts";
import { keptBody } from "../state/trace_bodies.ts";
import type { Usage } from "../upstream/usage.ts";
import type { CallDeps, CallRequest } from "./deps.ts";
import type { Estimated } from "./stream.ts";

/** What a call knows of itself when it closes. */
export interface CallRecord {
  /** The usage charged. */
  usage: Usage;
  /** Its cost, micro-USD. */
  cost: number;
  /** The status the caller got. */
  status: number;
  /** The error the caller got, if any. */
  error?: string;
  /** The model that served the call, or was tried last. */
  entry?: CatalogEntry;
  /** The provider key that served it, or was tried last. */
  providerKeyId?: string;
  /** Whether the call was streamed. */
  stream: boolean;
  /** When the call started, epoch ms. */
  started: number;
  /** When a stream's first event arrived, epoch ms. */
  firstTokenAt?: number;
  /** Figures of the usage that were estimated, not reported. */
  estimated: Estimated;
  /** Every candidate tried, when the call had more than one. */
  attempts: CallAttempt[];
  /** The answer's text, when bodies are traced. */
  answerText?: string;
}

/**
 * The most characters of an error a trace keeps. A provider's message can be
 * any length, and the trace commits with the call's charge: a Deno KV value
 * holds 64 KiB, so an unbounded one would lose the charge.
 */
const MAX_TRACE_ERROR_CHARS = 1_000;

/**
 * An error message as a trace keeps it: at most 1,000 characters.
 *
 * @example
 * ```ts
 * import { tracedError } from "./trace_record.ts";
 *
 * tracedError("x".repeat(2_000)).length; // 1_003
 * ```
 *
 * @param message The error's message.
 * @returns The message, cut with `...` past the bound.
 */
export function tracedError(message: string): string {
  return message.length <= MAX_TRACE_ERROR_CHARS
    ? message
    : `${message.slice(0, MAX_TRACE_ERROR_CHARS)}...`;
}

/**
 * The trace record of a call that closed.
 *
 * @param deps The gateway (how many bytes of bodies a trace keeps).
 * @param request The call's request.
 * @param call What the call knows of itself.
 * @returns The record, with the bodies when the gateway keeps them.
 */
export function traceOf(
  deps: Pick<CallDeps, "traceBodyBytes">,
  request: CallRequest,
  call: CallRecord,
): TraceRecord & TraceBodies {
  const { usage, cost, status, error, entry, started } = call;
  const bodyBytes = deps.traceBodyBytes;
  return {
    requestId: request.requestId,
    traceId: request.traceId,
    callerId: request.caller.id,
    model: entry?.id,
    route: request.route,
    provider: entry?.provider,
    providerKeyId: call.providerKeyId,
    status,
    stream: call.stream,
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    cachedTokens: usage.cachedInputTokens,
    costMicros: cost,
    latencyMs: Date.now() - started,
    ttftMs: call.firstTokenAt === undefined
      ? undefined
      : call.firstTokenAt - started,
    error: error === undefined ? undefined : tracedError(error),
    ...(call.estimated.length > 0 ? { estimated: call.estimated } : {}),
    ...(call.attempts.length > 0 ? { attempts: call.attempts } : {}),
    ...(bodyBytes && {
      requestBody: keptBody(request.bodyText, bodyBytes),
      ...(call.answerText !== undefined &&
        { responseBody: keptBody(call.answerText, bodyBytes) }),
    }),
    time: started,
  };
}

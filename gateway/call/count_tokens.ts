/**
 * Token counting, passed through to the provider and never charged:
 * Anthropic's `POST /messages/count_tokens` and Gemini's `:countTokens`.
 *
 * Counting spends a provider key, so it is no side door: the caller must be
 * one who could make the call (the key not expired, the model on its
 * allowlist, its rpm/tpm and spend limits not reached, a balance above
 * zero), the request counts against its rpm, and it goes upstream through
 * the one sender calls use (key rotation, time-outs, key health, each key's
 * RPM), which gives the key back once.
 *
 * @module
 */
import type { CallDeps } from "./deps.ts";
import { requireCredit } from "./hold.ts";
import { resolveModel } from "./input.ts";
import { GatewayError } from "../errors.ts";
import { checkStaticLimits } from "../state/limits/limits.ts";
import type { Caller } from "../state/callers.ts";
import type { RouteName } from "../conventions.ts";
import { readJsonAnswer, sendUpstream } from "../upstream/send.ts";

/** One count-tokens request. */
export interface CountTokensRequest {
  /** The route whose models it counts for: `messages` or `gemini`. */
  route: RouteName;
  /** The model: the body's `model` (messages) or the path's (gemini). */
  model: string;
  /** The parsed body. */
  body: Record<string, unknown>;
  /** The caller's headers (Anthropic's version and beta headers go on). */
  headers: Headers;
  /** The authenticated caller. */
  caller: Caller;
  /** Aborted when the caller goes away. */
  signal: AbortSignal;
  /** The request id. */
  requestId: string;
}

/**
 * Counts a request's input tokens with the provider, for a caller who could
 * make the call.
 *
 * @param deps The gateway's catalog, providers, key pool, credits and limits.
 * @param request The request.
 * @returns The provider's answer, as it sent it.
 * @throws {GatewayError} 401 for an expired key, 403 for a model off its allowlist, 402 for no credit or a spent period, 429 for its rate, 404/400 for a model unknown or off the route, and the upstream's failures.
 */
export async function countTokens(
  deps: Pick<
    CallDeps,
    | "model"
    | "modelsOn"
    | "providers"
    | "baseUrls"
    | "keyPool"
    | "upstreamTimeoutMs"
    | "keyCooldownMs"
    | "billing"
    | "limits"
  >,
  request: CountTokensRequest,
): Promise<Response> {
  const { caller } = request;
  checkStaticLimits(caller.limits, request.model, Date.now());
  const entry = resolveModel(deps, request.route, request.model);
  const provider = deps.providers[entry.provider];
  const upstreamRequest = provider.countTokens?.({
    route: request.route,
    entry,
    body: request.body,
    stream: false,
    maxOutputTokens: 0,
    query: {},
    headers: request.headers,
  });
  if (!upstreamRequest) {
    throw new GatewayError(
      400,
      `The ${entry.provider} provider has no token counting`,
    );
  }
  await requireCredit(deps.billing, caller.id, "counting tokens");
  // One request against the caller's rpm (and refused when a limit is
  // reached); nothing is used, so the ticket has nothing to settle.
  await deps.limits.reserve(caller, { tokens: 0, micros: 0 });
  const upstream = await sendUpstream(deps, {
    provider,
    path: upstreamRequest.path,
    body: upstreamRequest.body,
    headers: upstreamRequest.headers,
    estimatedTokens: 0,
    signal: request.signal,
    requestId: request.requestId,
    callerId: caller.id,
    // Counting has rate limits of its own (Anthropic: "token counting and
    // message creation have separate and independent rate limits"): its 429
    // says nothing of the key's room for calls (another key is tried, none
    // cools), and may ask for an hour.
    ownRateLimits: true,
  });
  try {
    const { json } = await readJsonAnswer(upstream);
    return Response.json(json);
  } finally {
    deps.keyPool.release(upstream.key, { kind: "answered", tokens: 0 });
  }
}

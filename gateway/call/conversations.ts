/**
 * `POST /conversations`: a Responses conversation created through the
 * gateway, passed through to OpenAI and never charged, and pinned at once
 * to the key that created it and to its caller, so every later Responses
 * call naming it reaches that key's organization (`state/response_pins.ts`).
 *
 * Creating one spends a provider key, so it takes what token counting
 * takes: a balance above zero and one request against the caller's rpm.
 *
 * @module
 */
import type { CallDeps } from "./deps.ts";
import { requireCredit } from "./hold.ts";
import type { Caller } from "../state/callers.ts";
import { readJsonAnswer, sendUpstream } from "../upstream/send.ts";

/** The provider whose Responses API keeps conversations. */
const CONVERSATIONS_PROVIDER = "openai";

/** One create-conversation request. */
export interface ConversationRequest {
  /** The parsed body (`items`, `metadata`), passed on as it is. */
  body: Record<string, unknown>;
  /** The authenticated caller. */
  caller: Caller;
  /** Aborted when the caller goes away. */
  signal: AbortSignal;
  /** The request id. */
  requestId: string;
}

/**
 * Creates a conversation with OpenAI and pins it to the key that created it.
 *
 * @param deps The gateway's providers, key pool, credits, limits and pins.
 * @param request The request.
 * @returns OpenAI's answer, as it sent it.
 * @throws {GatewayError} 402 for no credit, 429 for the caller's rate, and the upstream's failures.
 */
export async function createConversation(
  deps: Pick<
    CallDeps,
    | "providers"
    | "baseUrls"
    | "keyPool"
    | "upstreamTimeoutMs"
    | "keyCooldownMs"
    | "billing"
    | "limits"
    | "statePins"
    | "log"
  >,
  request: ConversationRequest,
): Promise<Response> {
  const { caller } = request;
  await requireCredit(deps.billing, caller.id, "creating a conversation");
  await deps.limits.reserve(caller, { tokens: 0, micros: 0 });
  const provider = deps.providers[CONVERSATIONS_PROVIDER];
  const upstream = await sendUpstream(deps, {
    provider,
    path: "/conversations",
    body: request.body,
    estimatedTokens: 0,
    signal: request.signal,
    requestId: request.requestId,
    callerId: caller.id,
  });
  let json: { id?: unknown };
  try {
    ({ json } = await readJsonAnswer(upstream));
  } finally {
    deps.keyPool.release(upstream.key, { kind: "answered", tokens: 0 });
  }
  if (typeof json.id === "string") {
    // Written before the answer goes out: the caller names it next.
    await deps.statePins?.pin(
      provider.name,
      caller.id,
      upstream.key.keyId,
      { conversationId: json.id },
    );
  }
  return Response.json(json);
}
